"""The speed suite: ``requests`` streamed chat completions, ``concurrency`` at a time (closed loop)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import logging
import threading
from collections.abc import Awaitable, Callable

from .config import EndpointConfig
from .http import Exchange, ProbeHTTP
from .results import RequestResult, SpeedResult
from .secrets import redact
from .stream_analysis import engine_headers, measure
from .transport import CONNECTION_SLOT
from .workloads import PROMPT_GENERATOR, build_messages, new_nonce, workload_for

logger = logging.getLogger(__name__)

# Suite-level failures: every further request would fail the same way, so the suite stops early.
FATAL_ERRORS = frozenset({"auth_missing", "auth_failed", "connect_error", "connect_timeout", "redirect"})
NEGOTIABLE_STATUSES = frozenset({400, 422})
TEMPERATURE = 0.7


class _Params:
    """Request parameters negotiated with the server, shared by all concurrent requests of a run."""

    def __init__(self) -> None:
        self.include_usage = True
        self.token_param = "max_completion_tokens"
        self.include_usage_confirmed: bool | None = None
        self.lock = asyncio.Lock()

    def snapshot(self) -> tuple[bool, str]:
        return self.include_usage, self.token_param

    def fallback(self, used: tuple[bool, str], message: str) -> bool:
        """Adopt the next parameter set after a 4xx to ``used``; False when nothing is left to try."""
        if used != self.snapshot():
            return True  # another request already moved on
        text = message.lower()
        include_usage, token_param = used
        if include_usage and ("stream_options" in text or "include_usage" in text):
            self.include_usage = False
            self.include_usage_confirmed = False
        elif token_param == "max_completion_tokens" and "max_completion_tokens" in text:
            self.token_param = "max_tokens"
        elif include_usage:
            self.include_usage = False
            self.include_usage_confirmed = False
        elif token_param == "max_completion_tokens":
            self.token_param = "max_tokens"
        else:
            return False
        return True


_gc_state = {"pauses": 0, "was_enabled": True}
_gc_lock = threading.Lock()


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection while streams are timed: a full collection stalls the event loop for
    several milliseconds (measured: 4-13 ms stalls shared by all streams in flight), and every stamp taken
    meanwhile would be late. Reference counting still frees memory; one collection runs before, one after."""
    with _gc_lock:
        if _gc_state["pauses"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.collect()
            gc.disable()
        _gc_state["pauses"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["pauses"] -= 1
            resume = _gc_state["pauses"] == 0 and _gc_state["was_enabled"]
            if resume:
                gc.enable()
        if resume:
            gc.collect()


def speed_body(
    config: EndpointConfig, *, messages: list[dict], max_tokens: int, include_usage: bool, token_param: str
) -> dict:
    body = {
        "model": config.model,
        "messages": messages,
        "stream": True,
        token_param: max_tokens,
        "temperature": TEMPERATURE,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def max_events_for(max_tokens: int) -> int:
    """Chunks beyond which the length parameter was clearly ignored (every token chunk holds at least one)."""
    return int(max_tokens * 1.5) + 32


async def post_negotiated(
    http: ProbeHTTP,
    params: _Params,
    body_for: Callable[[int, tuple[bool, str]], dict],
    *,
    stream: bool,
    max_events: int | None,
) -> tuple[Exchange, tuple[bool, str]]:
    """Post ``body_for(attempt, used)``, moving ``params`` to the next parameter set and sending again (at most
    three times) on a 400/422 naming them, and when a stream runs far past the limit because
    ``max_completion_tokens`` was ignored. Returns the last exchange and the parameters it was sent with.

    ``attempt`` counts from 0 so that a retry can carry a fresh prompt: the abandoned attempt's prompt may sit in
    a prefix cache."""
    attempts = 0
    while True:
        used = params.snapshot()
        exchange = await http.post(body_for(attempts, used), stream=stream, max_events=max_events)
        if exchange.status in NEGOTIABLE_STATUSES and attempts < 3 and exchange.error is not None:
            async with params.lock:
                moved = params.fallback(used, exchange.error.provider_message or exchange.error.message)
            if moved:
                attempts += 1
                continue
        if exchange.event_cap_hit and used[1] == "max_completion_tokens":
            # The server ignored max_completion_tokens and ran past the limit: max_tokens from now on.
            async with params.lock:
                if params.token_param == "max_completion_tokens":
                    params.token_param = "max_tokens"
            if attempts < 3:
                attempts += 1
                continue
        return exchange, used


async def run_speed_suite(
    config: EndpointConfig,
    *,
    input_tokens: int,
    max_tokens: int,
    requests: int,
    concurrency: int,
    on_request_done: Callable[[RequestResult], None] | None = None,
) -> SpeedResult:
    """Run the speed suite. Never raises for anything the server does: failures are classified per request
    (``RequestResult.error_class``) or, when nothing could run, on the result (``SpeedResult.error_class``)."""
    if input_tokens < 1 or max_tokens < 1 or requests < 1 or concurrency < 1:
        raise ValueError("input_tokens, max_tokens, requests and concurrency must all be at least 1")
    concurrency = min(concurrency, requests)
    run_nonce = new_nonce()
    params = _Params()
    result = SpeedResult(
        request_params={
            "endpoint": config.describe(),
            "workload": workload_for(input_tokens),
            "input_tokens": input_tokens,
            "max_tokens": max_tokens,
            "requests": requests,
            "concurrency": concurrency,
            "temperature": TEMPERATURE,
            "stream": True,
            "prompt": {"generator": PROMPT_GENERATOR, "run_nonce": run_nonce, "nonce": "<run_nonce>-<index>-<attempt>"},
        }
    )
    if config.key_missing():
        result.error_class = "auth_missing"
        result.error_message = f"environment variable {config.api_key_env} is not set; nothing was sent"
        return result

    results: dict[int, RequestResult] = {}
    server_info: dict = {}
    fatal: list[str] = []
    next_index = 0
    stop = asyncio.Event()
    pending: list[tuple[int, Exchange, tuple[bool, str]]] = []
    in_flight = 0
    with gc_paused():
        async with ProbeHTTP(config, max_connections=concurrency) as http:
            secrets = http.secrets()

            def finish(index: int, exchange: Exchange, used: tuple[bool, str]) -> None:
                """Parse and compute one request's metrics; never called while another stream is being read."""
                measured, analysis = measure(
                    exchange,
                    index=index,
                    read_timeout_s=config.read_timeout_s,
                    secrets=secrets,
                    input_tokens_requested=input_tokens,
                )
                if exchange.ok_status:
                    if used[0] and analysis.usage is not None:
                        params.include_usage_confirmed = True
                    _collect_server_info(server_info, exchange, analysis, secrets)
                results[index] = measured
                if on_request_done is not None:
                    _notify(on_request_done, measured)

            def drain_pending() -> None:
                while pending:
                    finish(*pending.pop(0))

            async def one_request(index: int) -> tuple[Exchange, tuple[bool, str]]:
                def body_for(attempt: int, used: tuple[bool, str]) -> dict:
                    messages = build_messages(input_tokens, f"{run_nonce}-{index}-{attempt}")
                    return speed_body(
                        config, messages=messages, max_tokens=max_tokens, include_usage=used[0], token_param=used[1]
                    )

                return await post_negotiated(http, params, body_for, stream=True, max_events=max_events_for(max_tokens))

            async def worker(slot: int) -> None:
                nonlocal next_index, in_flight
                CONNECTION_SLOT.set(slot)
                while not stop.is_set() and next_index < requests:
                    index = next_index
                    next_index += 1
                    in_flight += 1
                    try:
                        exchange, used = await one_request(index)
                    except Exception as error:  # a bug in the client must not lose the run
                        if _is_control_exception(error):
                            raise
                        message = redact(f"{type(error).__name__}: {error}", secrets)
                        # No traceback in the log: its frames' text is not redacted.
                        logger.error("probe client failed on request %s: %s", index, message)
                        results[index] = RequestResult(
                            index=index,
                            started_at=dt.datetime.now(dt.timezone.utc),
                            error_class="client_error",
                            error_message=message,
                        )
                        continue
                    finally:
                        in_flight -= 1
                    error_class = exchange.error.error_class if exchange.error else ""
                    if (error_class in FATAL_ERRORS and not any(r.ok for r in results.values())
                            and not exchange.ok_status):
                        fatal.append(error_class)
                        stop.set()
                    # Parsing waits until no other stream is being read, so it never delays their timestamps.
                    pending.append((index, exchange, used))
                    if in_flight == 0:
                        drain_pending()

            if concurrency > 1:
                await _settle_parameters(one_request)
            await asyncio.gather(*(worker(slot) for slot in range(concurrency)))
            drain_pending()
            result.rate_limit_retries = http.rate_limit_retries
    return _finish_result(result, results, server_info, params, fatal)


async def _settle_parameters(send: Callable[[int], Awaitable[object]]) -> None:
    """Send one unrecorded request before a parallel run, as vLLM's benchmark sends its initial test prompt.

    It settles which parameters the server honours (token limit, usage chunk) while nothing else is in
    flight, so a server that ignores one costs this request rather than one request per parallel stream,
    and no recorded request runs without the contention the run is meant to measure. Its failures are
    not recorded: the measured requests meet and classify the same faults themselves.
    """
    try:
        await send(-1)
    except Exception as error:  # noqa: BLE001 - see the docstring
        logger.debug("parameter-settling request failed: %s", type(error).__name__)


def _finish_result(
    result: SpeedResult, results: dict[int, RequestResult], server_info: dict, params: _Params, fatal: list[str]
) -> SpeedResult:
    result.requests = [results[i] for i in sorted(results)]
    result.server_info = server_info
    result.token_param = params.token_param
    if params.include_usage_confirmed is not None:
        result.include_usage_supported = params.include_usage_confirmed
    elif not params.include_usage:
        result.include_usage_supported = False
    result.request_params["token_param"] = params.token_param
    result.request_params["stream_options"] = {"include_usage": True} if params.include_usage else None
    if fatal and not any(r.ok for r in result.requests):
        first_fatal = next(r for r in result.requests if r.error_class == fatal[0])
        result.error_class = first_fatal.error_class
        result.error_message = first_fatal.error_message
    return result


def _collect_server_info(info: dict, exchange: Exchange, analysis, secrets: tuple[str, ...]) -> None:
    info.update(engine_headers(exchange.headers))
    if analysis.model:
        info["model"] = analysis.model
    if analysis.system_fingerprint:
        info["system_fingerprint"] = analysis.system_fingerprint
    info["done_sentinel"] = info.get("done_sentinel", False) or analysis.done
    if analysis.usage_in_finish_chunk:
        info["usage_placement"] = "finish_chunk"
    elif analysis.usage_in_separate_chunk:
        info.setdefault("usage_placement", "separate_chunk")
    # The key is removed before the cut: a cut first could leave a piece too short to recognise.
    ratelimit = {k: redact(v, secrets)[:100] for k, v in exchange.headers.items() if "ratelimit" in k}
    if ratelimit:
        info["rate_limit_headers"] = ratelimit


def _is_control_exception(error: BaseException) -> bool:
    """Celery's soft time limit (billiard) must reach the task; it is not a probe failure."""
    return type(error).__module__.startswith("billiard")


def _notify(callback: Callable, value) -> None:
    try:
        callback(value)
    except Exception as error:
        if _is_control_exception(error):
            raise
        logger.exception("on_request_done callback failed")
