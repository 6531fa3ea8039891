"""Whether links still lead to their page: each URL fetched once with a GET whose body is never read, redirects
followed, a few at a time. Dead: an HTTP status of 400 or more, a timeout or a connection that fails. Moved: the
redirects end on another host or path (a scheme upgrade, a trailing slash or a fragment does not count)."""
from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

USER_AGENT = "InferenceAtlas-check_sources (link check)"


@dataclass(frozen=True)
class LinkCheck:
    url: str
    status: int | None
    final_url: str
    error: str = ""

    @property
    def dead(self) -> bool:
        return bool(self.error) or self.status is None or self.status >= 400

    @property
    def moved(self) -> bool:
        return not self.dead and _place(self.final_url) != _place(self.url)


def _place(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.netloc.lower(), parts.path.rstrip("/")


def _check(client: httpx.Client, url: str) -> LinkCheck:
    try:
        with client.stream("GET", url) as response:
            return LinkCheck(url=url, status=response.status_code, final_url=str(response.url))
    except httpx.TimeoutException:
        return LinkCheck(url=url, status=None, final_url=url, error="timed out")
    except httpx.HTTPError as exc:
        return LinkCheck(url=url, status=None, final_url=url, error=f"{type(exc).__name__}: {exc}"[:200])


def check_links(urls: Iterable[str], *, timeout: float, concurrency: int) -> list[LinkCheck]:
    """One LinkCheck per URL, in the order given; at most `concurrency` requests in flight, each allowed
    `timeout` seconds to connect and between reads."""
    with httpx.Client(timeout=timeout, follow_redirects=True, headers={"User-Agent": USER_AGENT}) as client, \
            ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(lambda url: _check(client, url), urls))
