"""The page cache, kept as djangoproject.com keeps its dashboard's: a generation number in the cache, moved by
every service (and the fixture loader) that writes what a page or an API read shows. Pages and API reads are
stored under their URL and that number, so one write makes every earlier entry unreachable for every process.

A write moves the generation at once and again when its transaction commits: the first makes the writer's own
next read fresh, the second drops any page a reader rendered from the data as it was before the commit.
Entries expire after READ_CACHE_SECONDS (0 turns the cache off). A cached read asks the cache only, never the
database. A cache that fails or hangs is skipped by this process for a few seconds (core.breakers); meanwhile
the process keeps what it renders in its own memory for as long (rendering every request would cost most of its
speed; a write made elsewhere shows within those seconds, one made here at once), and a generation move it
missed is made once the cache answers.
Validators (ETag, 304) are Django's ConditionalGetMiddleware's (core.middleware.ETagMiddleware); a cached entry
adds when it was built as Last-Modified.
"""
from __future__ import annotations

import functools
import hashlib
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.utils.http import http_date

from core.breakers import BREAKER_SECONDS, Breaker

GENERATION_KEY = "page-cache:generation"
CACHEABLE_STATUSES = (200, 400)
# How long a process keeps a rendered answer in its own memory while the shared cache is failing.
OUTAGE_SECONDS = BREAKER_SECONDS
outage_cache = LocMemCache("page-cache-outage", {"TIMEOUT": OUTAGE_SECONDS})
# What a cached answer carries besides its status and body.
KEPT_HEADERS = ("Content-Type", "Content-Disposition", "Link")

cache_breaker = Breaker("the cache", seconds=BREAKER_SECONDS)
_bump_owed = threading.Event()


def cache_call(method: str, *args: Any, **kwargs: Any) -> Any:
    """`cache.<method>(...)`, or None while the cache fails (whatever its backend raises: it costs speed only)."""
    if cache_breaker.is_open():
        return None
    try:
        result = getattr(cache, method)(*args, **kwargs)
    except ValueError:  # incr of a missing key: the cache answered
        raise
    except Exception:  # noqa: BLE001
        cache_breaker.failed()
        return None
    cache_breaker.answered()
    return result


def generation() -> int | None:
    """The current generation, or None while the cache cannot say (nothing is then read from it or stored)."""
    if _bump_owed.is_set() and _bump():
        _bump_owed.clear()
    number = cache_call("get", GENERATION_KEY)
    if number is None:
        # A new or emptied cache starts at a random number, so that no entry of an earlier count is reached again.
        cache_call("add", GENERATION_KEY, secrets.randbits(48), timeout=None)
        number = cache_call("get", GENERATION_KEY)
    return number


def _bump() -> bool:
    try:
        return cache_call("incr", GENERATION_KEY) is not None
    except ValueError:  # no generation yet: the next read starts one
        return True


def _bump_or_owe() -> None:
    outage_cache.clear()
    if not _bump():
        _bump_owed.set()


def generation_bump() -> None:
    """Move the generation now and when the current transaction commits. Every write a page shows calls it."""
    _bump_or_owe()
    if connection.in_atomic_block:
        transaction.on_commit(_bump_or_owe)


def cached_response(request: HttpRequest, build: Callable[[], HttpResponse], *, vary: Sequence[str] = ()
                    ) -> HttpResponse:
    """The answer to this GET at the current generation: from the cache, or `build()` (rendered) and stored.
    The key is the absolute URL plus `vary`, what else the answer depends on. Only answers that show nothing
    user-specific belong here."""
    if settings.READ_CACHE_SECONDS <= 0 or request.method not in ("GET", "HEAD"):
        return build()
    digest = hashlib.sha256("\0".join([request.build_absolute_uri(), *vary]).encode()).hexdigest()
    number = generation()
    if number is not None:
        key, get, timeout = f"page:{number}:{digest}", functools.partial(cache_call, "get"), settings.READ_CACHE_SECONDS
        put = functools.partial(cache_call, "set", timeout=timeout)
    else:
        key, get, put = digest, outage_cache.get, outage_cache.set
    entry = get(key)
    if entry is not None:
        built, status, content, headers = entry
        response = HttpResponse(content, status=status, headers=headers)
        response["X-Page-Cache"] = "hit"
    else:
        built, response = time.time(), build()
        if response.status_code in CACHEABLE_STATUSES and not response.streaming:
            headers = {name: response[name] for name in KEPT_HEADERS if name in response}
            put(key, (built, response.status_code, response.content, headers))
        response["X-Page-Cache"] = "miss"
    response["Last-Modified"] = http_date(built)
    return response


def cached_page(*, vary: Callable[[], Sequence[str]] = tuple) -> Callable:
    """A page view whose GET answers are cached; `vary()` names what else than the URL its HTML depends on."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return cached_response(request, lambda: view(request, *args, **kwargs), vary=vary())

        return wrapper

    return decorate


def cached_get(get: Callable[..., Any]) -> Callable[..., Any]:
    """An API view's get(), its rendered answer cached per media type (JSON, CSV). Authentication, throttling
    and content negotiation run first on every request; the browsable API shows the signed-in user and is not
    cached."""

    @functools.wraps(get)
    def wrapper(view: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if request.accepted_renderer.format == "api":
            return get(view, request, *args, **kwargs)

        def build() -> HttpResponse:
            response = view.finalize_response(request, get(view, request, *args, **kwargs), *args, **kwargs)
            return response.render()

        return cached_response(request, build, vary=[request.accepted_media_type])

    return wrapper


class PerGeneration:
    """One value per generation, built once by this process and shared by its requests (the wizard's catalog
    snapshot, say); built on every call with the cache off, kept for OUTAGE_SECONDS while it fails."""

    def __init__(self, build: Callable[[], Any]) -> None:
        self._build = build
        self._kept: tuple[int | None, float, Any] | None = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        if settings.READ_CACHE_SECONDS <= 0:
            return self._build()
        number = generation()
        with self._lock:
            kept = self._kept
            if kept is None or kept[0] != number or (number is None and time.monotonic() - kept[1] >= OUTAGE_SECONDS):
                self._kept = kept = (number, time.monotonic(), self._build())
            return kept[2]
