"""One pooled httpx client per target, and one timed HTTP exchange.

Timing (all ``time.perf_counter_ns``, a monotonic clock):

- ``start_ns``: the request coroutine began (before waiting for a pooled connection).
- ``connect_*``: httpcore trace events ``connection.connect_tcp`` / ``connection.start_tls``; absent when a
  kept-alive connection was reused.
- ``written_ns``: the start of the ``send`` syscall that handed the request's last bytes to the kernel
  (``transport.py``); before a response exists, httpcore's ``http11.send_request_body.complete`` trace event.
  Every latency metric is measured from here, so the client's own queueing (event loop, pool) and connection
  set-up stay out of TTFT; they are recorded as ``queue_ms`` and ``connect_ms``.
- ``headers_ns``: the arrival of the bytes that completed the response headers.
- each network read is stamped with the kernel's receive time (``SO_TIMESTAMPNS``, also under TLS), see
  ``transport.py``; the read loop only pairs each body chunk with that stamp, counts bytes against the cap
  and looks for the ``[DONE]``/``finish_reason`` markers.

The read loop stops at the total deadline, at the byte cap, and shortly after ``[DONE]`` (1 s for the server
to close) or after a ``finish_reason`` (a grace for the usage chunk) so that a server that never closes the
stream cannot hold the probe until the read timeout. Redirects are never followed (they would replay the
Authorization header), proxies and .netrc from the environment are ignored, and ``accept-encoding: identity``
keeps gzip buffering out of the timings.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from .config import EndpointConfig
from .errors import ProbeError, classify_status, parse_error_envelope, parse_retry_after
from .secrets import redact
from .transport import KernelStampedStream, StampingTransport

for _name in ("httpx", "httpcore"):
    # Their INFO/DEBUG lines carry URLs and header dumps.
    logging.getLogger(_name).setLevel(logging.WARNING)

logger = logging.getLogger(__name__)

DONE_GRACE_S = 1.0
FINISH_GRACE_S = 5.0
ERROR_BODY_CAP = 256 * 1024

_DONE_MARK = re.compile(rb"(?:^|[\r\n])data: ?\[DONE\]")
_FINISH_MARK = re.compile(rb'"finish_reason"\s*:\s*"')
_TRY_AGAIN = re.compile(r"try again in\s+([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b", re.IGNORECASE)

_WRITTEN_EVENTS = ("http11.send_request_body.complete", "http2.send_request_body.complete")
_HEADERS_EVENTS = ("http11.receive_response_headers.complete", "http2.receive_response_headers.complete")


@dataclass
class Exchange:
    """Everything one HTTP exchange produced: stamps, headers, raw stamped reads, and a classified error."""

    start_ns: int
    started_wall: float
    written_ns: int | None = None
    headers_ns: int | None = None
    connect_started_ns: int | None = None
    connect_done_ns: int | None = None
    end_ns: int | None = None
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    reads: list[tuple[int, bytes]] = field(default_factory=list)
    done_seen: bool = False
    finish_seen: bool = False
    eof: bool = False
    stopped_after_grace: bool = False
    event_cap_hit: bool = False
    error: ProbeError | None = None

    @property
    def body(self) -> bytes:
        return b"".join(chunk for _, chunk in self.reads)

    @property
    def body_bytes(self) -> int:
        return sum(len(chunk) for _, chunk in self.reads)

    @property
    def connect_ms(self) -> float | None:
        if self.connect_started_ns is None or self.connect_done_ns is None:
            return None
        return (self.connect_done_ns - self.connect_started_ns) / 1e6

    @property
    def queue_ms(self) -> float | None:
        if self.written_ns is None:
            return None
        return max(0.0, (self.written_ns - self.start_ns) / 1e6 - (self.connect_ms or 0.0))

    @property
    def ok_status(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def json(self):
        return json.loads(self.body)


def build_client(config: EndpointConfig, *, max_connections: int, reading_thread: bool = False) -> httpx.AsyncClient:
    timeout = httpx.Timeout(
        connect=config.connect_timeout_s,
        read=config.read_timeout_s,
        write=config.read_timeout_s,
        pool=config.request_deadline_s,
    )
    limits = httpx.Limits(
        max_connections=max_connections, max_keepalive_connections=max_connections, keepalive_expiry=60.0
    )
    return httpx.AsyncClient(
        timeout=timeout,
        transport=StampingTransport(
            limits=limits, tls=urlsplit(config.base_url).scheme == "https", ca_bundle=config.ca_bundle,
            reading_thread=reading_thread,
        ),
        follow_redirects=False,
        trust_env=False,
        headers={"accept-encoding": "identity", "user-agent": "inference-atlas-probe/1"},
    )


class ProbeHTTP:
    """A pooled client for one target. Use ``async with ProbeHTTP(config, max_connections=n) as http``; with
    ``reading_thread=True`` one thread reads and stamps every connection (transport.py)."""

    def __init__(self, config: EndpointConfig, *, max_connections: int = 1, reading_thread: bool = False) -> None:
        self.config = config
        self._client = build_client(config, max_connections=max(1, max_connections), reading_thread=reading_thread)
        self.rate_limit_retries = 0

    async def __aenter__(self) -> ProbeHTTP:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    def secrets(self) -> tuple[str, ...]:
        key = self.config.api_key()
        return (key,) if key else ()

    async def post(
        self, body: dict, *, stream: bool, max_events: int | None = None, deadline_s: float | None = None
    ) -> Exchange:
        """POST to ``/chat/completions``, honouring ``Retry-After`` on 429 within the configured cap."""
        config = self.config
        first_start = time.perf_counter()
        attempt = 0
        while True:
            remaining = (deadline_s or config.request_deadline_s) - (time.perf_counter() - first_start)
            exchange = await self._exchange(body, stream=stream, max_events=max_events, deadline_s=remaining)
            if exchange.status != 429 or attempt >= config.rate_limit_retries:
                return exchange
            wait = self._retry_after(exchange)
            elapsed = time.perf_counter() - first_start
            if wait is None or wait > config.max_retry_after_s or elapsed + wait >= config.request_deadline_s:
                return exchange
            attempt += 1
            self.rate_limit_retries += 1
            logger.info("rate limited by %s; retrying in %.2f s", urlsplit(config.base_url).netloc, wait)
            await asyncio.sleep(wait)

    @staticmethod
    def _retry_after(exchange: Exchange) -> float | None:
        headers = exchange.headers
        wait = parse_retry_after(headers.get("retry-after"))
        if wait is None:
            # Together documents x-ratelimit-reset as the suggested retry interval
            # (T2, Sources of docs/probes-measurement.md).
            wait = parse_retry_after(headers.get("x-ratelimit-reset"))
        if wait is None:
            # Groq's 429 message says "Please try again in 5.289s" (G9, Sources of docs/probes-measurement.md).
            match = _TRY_AGAIN.search(exchange.body[:ERROR_BODY_CAP].decode("utf-8", "replace"))
            if match:
                wait = float(match.group(1)) / (1000.0 if match.group(2).lower() == "ms" else 1.0)
        return wait

    async def _exchange(self, body: dict, *, stream: bool, max_events: int | None, deadline_s: float) -> Exchange:
        config = self.config
        exchange = Exchange(start_ns=time.perf_counter_ns(), started_wall=time.time())
        secrets = self.secrets()
        if config.key_missing():
            exchange.error = ProbeError(
                "auth_missing", f"environment variable {config.api_key_env} is not set; nothing was sent"
            )
            return exchange
        marks: dict[str, int] = {}

        async def trace(event_name: str, info: dict) -> None:
            marks[event_name] = time.perf_counter_ns()

        headers = {"content-type": "application/json", "accept": "text/event-stream" if stream else "application/json"}
        headers.update(config.extra_headers or {})
        if secrets:
            headers["authorization"] = f"Bearer {secrets[0]}"
        request = self._client.build_request(
            "POST",
            config.chat_url,
            content=json.dumps(body, separators=(",", ":")).encode(),
            headers=headers,
            extensions={"trace": trace},
        )
        del headers
        response: httpx.Response | None = None
        scope: asyncio.Timeout | None = None
        grace = False
        try:
            async with asyncio.timeout(max(0.001, deadline_s)) as scope:
                response = await self._client.send(request, stream=True)
                exchange.status = response.status_code
                exchange.headers = {k.lower(): v for k, v in response.headers.items()}
                self._apply_marks(exchange, marks)
                network = response.extensions.get("network_stream")
                if not isinstance(network, KernelStampedStream):
                    network = None
                if network is not None and network.last_write_ns is not None:
                    # The start of the send that completed the request (see transport.py).
                    exchange.written_ns = network.last_write_ns
                if network is not None and network.last_read_ns is not None:
                    # The arrival that completed the headers, not the moment this coroutine resumed.
                    exchange.headers_ns = network.last_read_ns
                if exchange.headers_ns is None:
                    exchange.headers_ns = time.perf_counter_ns()
                cap = (
                    config.max_response_bytes if exchange.ok_status else min(config.max_response_bytes, ERROR_BODY_CAP)
                )
                announced = exchange.headers.get("content-length", "")
                if announced.isdigit() and int(announced) > cap:
                    raise ProbeError(
                        "response_too_large",
                        f"Content-Length {announced} exceeds the cap of {cap} bytes",
                        http_status=exchange.status,
                    )
                encoding = exchange.headers.get("content-encoding", "identity").lower()
                chunks = response.aiter_raw() if encoding in ("", "identity") else response.aiter_bytes()
                reads = exchange.reads
                clock = time.perf_counter_ns
                total = 0
                events = 0
                tail = b""
                async for chunk in chunks:
                    stamp = network.last_read_ns if network is not None else clock()
                    reads.append((stamp, chunk))
                    total += len(chunk)
                    if total > cap:
                        raise ProbeError(
                            "response_too_large", f"body exceeded the cap of {cap} bytes", http_status=exchange.status
                        )
                    if not stream:
                        continue
                    window = tail + chunk
                    tail = chunk[-48:]
                    if max_events is not None:
                        events += chunk.count(b"data:")
                        if events > max_events:
                            exchange.event_cap_hit = True
                            break
                    # Plain substring tests first: they are ~10x cheaper than the regular expressions.
                    if not exchange.done_seen and b"[DONE]" in window and _DONE_MARK.search(window):
                        exchange.done_seen = True
                        grace = True
                        scope.reschedule(min(scope.when(), asyncio.get_running_loop().time() + DONE_GRACE_S))
                    elif not exchange.finish_seen and _has_finish(window):
                        exchange.finish_seen = True
                        grace = True
                        limit = min(FINISH_GRACE_S, config.read_timeout_s)
                        scope.reschedule(min(scope.when(), asyncio.get_running_loop().time() + limit))
                else:
                    exchange.eof = True
        except TimeoutError:
            if grace:
                exchange.stopped_after_grace = True
            else:
                exchange.error = ProbeError(
                    "deadline_exceeded",
                    f"request did not finish within its deadline of {deadline_s:.1f} s",
                    http_status=exchange.status,
                )
        except ProbeError as error:
            exchange.error = error
        except httpx.ConnectTimeout:
            exchange.error = ProbeError("connect_timeout", f"no connection within {config.connect_timeout_s:.1f} s")
        except httpx.PoolTimeout:
            exchange.error = ProbeError("pool_timeout", "no pooled connection became free in time")
        except httpx.WriteTimeout:
            exchange.error = ProbeError("write_timeout", "the request could not be written in time")
        except httpx.ReadTimeout:
            if exchange.status is None:
                exchange.error = ProbeError(
                    "stall_before_headers", f"no response headers within {config.read_timeout_s:.1f} s"
                )
            else:
                exchange.error = ProbeError(
                    "stall_mid_stream",
                    f"no bytes for {config.read_timeout_s:.1f} s after {exchange.body_bytes} bytes",
                    http_status=exchange.status,
                )
        except httpx.ConnectError as error:
            exchange.error = ProbeError("connect_error", redact(str(error) or type(error).__name__, secrets))
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.CloseError) as error:
            phase = "before the response headers" if exchange.status is None else "during the response body"
            exchange.error = ProbeError(
                "connection_reset",
                f"connection closed or reset {phase}: {redact(str(error) or type(error).__name__, secrets)}",
                http_status=exchange.status,
            )
        except httpx.HTTPError as error:
            exchange.error = ProbeError(
                "connect_error", redact(f"{type(error).__name__}: {error}", secrets), http_status=exchange.status
            )
        finally:
            exchange.end_ns = time.perf_counter_ns()
            if exchange.written_ns is None:
                self._apply_marks(exchange, marks)
            if response is not None:
                try:
                    await response.aclose()
                except (httpx.HTTPError, OSError):
                    pass
        if exchange.error is None and exchange.status is not None and not exchange.ok_status:
            exchange.error = self._status_error(exchange, secrets)
        return exchange

    @staticmethod
    def _apply_marks(exchange: Exchange, marks: dict[str, int]) -> None:
        for name in _WRITTEN_EVENTS:
            if name in marks:
                exchange.written_ns = marks[name]
        for name in _HEADERS_EVENTS:
            if name in marks:
                exchange.headers_ns = marks[name]
        exchange.connect_started_ns = marks.get("connection.connect_tcp.started")
        exchange.connect_done_ns = marks.get("connection.start_tls.complete") or marks.get(
            "connection.connect_tcp.complete"
        )

    @staticmethod
    def _status_error(exchange: Exchange, secrets: tuple[str, ...]) -> ProbeError:
        status = exchange.status or 0
        error_class = classify_status(status)
        envelope = parse_error_envelope(exchange.body[:ERROR_BODY_CAP], exchange.headers.get("content-type"))
        provider_message = redact(envelope.message, secrets)
        if error_class == "redirect":
            location = exchange.headers.get("location", "")
            target = urlsplit(location).netloc or location[:200]
            message = f"HTTP {status} redirect to {target or 'an unnamed location'} was not followed"
        else:
            message = f"HTTP {status}: {provider_message or '(empty body)'}"
        return ProbeError(
            error_class,
            redact(message, secrets),
            http_status=status,
            provider_message=provider_message,
            retry_after_s=parse_retry_after(exchange.headers.get("retry-after")),
        )


def _has_finish(window: bytes) -> bool:
    return (b'"finish_reason":"' in window or b'"finish_reason": "' in window) or (
        b"finish_reason" in window and _FINISH_MARK.search(window) is not None and b'"finish_reason":null' not in window
    )
