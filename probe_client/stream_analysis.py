"""Turn one timed exchange into the per-request metrics (definitions in docs/probes-measurement.md).

All times are from ``t0`` = the moment the request was written to the connection.

- token-bearing event: an SSE event whose chunk has, in any choice, non-empty ``delta.content``, non-empty
  ``delta.reasoning``/``delta.reasoning_content``, or a ``delta.tool_calls`` entry with a function name or
  argument text. A role-only chunk, an empty-content chunk, a usage-only chunk and ``[DONE]`` are not.
- TTFT: first token-bearing event. TTFAT: first event with answer content or a tool call (not reasoning).
- E2E: last token-bearing event (the trailing usage chunk and ``[DONE]`` do not count).
- N (output tokens): ``usage.completion_tokens`` from the server (last one seen, also ``x_groq.usage``) when
  it is a plain integer in [0, 2**31); otherwise (absent, a bool, a float, negative, too large) an estimate
  (characters / 4 per chunk, at least one per chunk) labelled ``estimate``.
- tokens per chunk: exact when the server sends cumulative usage on every chunk; otherwise N spread over the
  token-bearing chunks in proportion to their characters (largest remainder), or the per-chunk estimate.
- output speed: (N − tokens of the first chunk) / (last − first token-bearing event), tokens per second.
- TPOT: (E2E − TTFT) / (N − 1). ITL: the gaps between consecutive token-bearing events (one per chunk).
- buffered: at least three token-bearing events, and 80% of them arrived in the same network read as the
  previous one (clumps released together by a proxy or a fake stream).
- merged read: a token-bearing event that arrived in the same network read as the next one (the same kernel
  stamp). A read carries the kernel's receive time of its newest packet, so that event's stamp may be late by up
  to one inter-token gap (:func:`merged_reads`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field

from scoring.vocabulary import percentile

from .errors import ProbeError, parse_error_envelope
from .http import Exchange
from .results import RequestResult
from .secrets import redact
from .sse import SSEEvent, decode_reads

BUFFERED_SHARE = 0.8

TIMING_HEADER_PREFIXES = ("fireworks-", "x-compute-", "openai-processing-ms", "x-envoy-upstream-service-time")
TIMING_HEADERS = (
    "x-total-time",
    "x-validation-time",
    "x-queue-time",
    "x-inference-time",
    "x-time-per-token",
    "x-prompt-tokens",
    "x-generated-tokens",
)
# Objects in which engines and providers report their own timings (llama.cpp ``timings``, Cerebras
# ``time_info``, Fireworks ``perf_metrics``, TGI-style ``metrics``). What a server puts there is its word, not
# ours: only flat, finite numbers and short text are kept, and only so many, so that a broken or hostile server
# cannot make the stored row unstorable (NUL, NaN and Infinity are refused by PostgreSQL's JSONB) or huge.
SERVER_TIMING_KEYS = ("time_info", "timings", "perf_metrics", "metrics")
MAX_TIMING_ENTRIES = 32
MAX_TIMING_NAME_CHARS = 64
MAX_TIMING_TEXT_CHARS = 100
MAX_TIMING_INT = 2**53
# Token counts are stored in PositiveIntegerField columns (signed 32-bit on PostgreSQL).
MAX_TOKEN_COUNT = 2**31
ENGINE_HEADERS = ("server", "via", "x-powered-by", "openai-version", "x-served-by", "x-engine", "x-engine-version")


@dataclass
class TokenEvent:
    received_ns: int
    read_index: int
    chars: int
    kind: str  # "content", "reasoning", "tool"
    answer: bool
    cumulative_tokens: int | None = None


@dataclass
class StreamAnalysis:
    token_events: list[TokenEvent] = field(default_factory=list)
    usage: dict | None = None
    finish_reasons: list[str] = field(default_factory=list)
    done: bool = False
    content: str = ""
    reasoning: str = ""
    tool_calls: dict = field(default_factory=dict)
    server_timings: dict = field(default_factory=dict)
    request_id: str = ""
    model: str = ""
    system_fingerprint: str = ""
    usage_in_finish_chunk: bool = False
    usage_in_separate_chunk: bool = False
    error: ProbeError | None = None


def _nonempty(value) -> bool:
    return isinstance(value, str) and value != ""


def analyze_events(events: list[SSEEvent], secrets: tuple[str, ...] = ()) -> StreamAnalysis:
    """Interpret decoded SSE events as OpenAI chat-completion chunks."""
    analysis = StreamAnalysis()
    content_parts: list[str] = []
    reasoning_parts: list[str] = []
    for event in events:
        data = event.data
        if data.strip() == "[DONE]":
            analysis.done = True
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            if event.event == "error":
                if analysis.error is None or analysis.error.error_class != "stream_error_event":
                    message = redact(data, secrets)
                    analysis.error = ProbeError(
                        "stream_error_event", f"error event in the stream: {message}", provider_message=message
                    )
                continue
            if analysis.error is None:
                analysis.error = ProbeError("invalid_json", redact(f"SSE data is not JSON: {data!r}", secrets))
            continue
        if event.event == "error" or (isinstance(chunk, dict) and chunk.get("error") not in (None, "")):
            if analysis.error is None or analysis.error.error_class != "stream_error_event":
                envelope = parse_error_envelope(data.encode())
                message = redact(envelope.message or data, secrets)
                status = None
                inner = chunk.get("error") if isinstance(chunk, dict) else None
                if isinstance(inner, dict) and isinstance(inner.get("status_code"), int):
                    status = inner["status_code"]
                where = f" (status {status})" if status else ""
                analysis.error = ProbeError(
                    "stream_error_event",
                    f"error event in the stream{where}: {message}",
                    http_status=status,
                    provider_message=message,
                )
            continue
        if not isinstance(chunk, dict):
            if analysis.error is None:
                analysis.error = ProbeError("invalid_json", "SSE data is JSON but not an object")
            continue
        _read_chunk(chunk, event, analysis, content_parts, reasoning_parts)
    analysis.content = "".join(content_parts)
    analysis.reasoning = "".join(reasoning_parts)
    return analysis


def _read_chunk(chunk: dict, event: SSEEvent, analysis: StreamAnalysis, content_parts, reasoning_parts) -> None:
    x_groq = chunk.get("x_groq")
    if not isinstance(x_groq, dict):
        x_groq = {}
    if not analysis.request_id and x_groq.get("id"):
        analysis.request_id = str(x_groq["id"])
    if not analysis.model and isinstance(chunk.get("model"), str):
        analysis.model = chunk["model"]
    if chunk.get("system_fingerprint"):
        analysis.system_fingerprint = str(chunk["system_fingerprint"])
    choices = chunk.get("choices") or []
    usage = chunk.get("usage")
    if isinstance(x_groq.get("usage"), dict):
        analysis.server_timings["x_groq_usage"] = _times(x_groq["usage"])
        if not isinstance(usage, dict):
            usage = x_groq["usage"]
    for key in SERVER_TIMING_KEYS:
        if isinstance(chunk.get(key), dict):
            analysis.server_timings[key] = timing_values(chunk[key])
    has_finish = False
    chars = 0
    kind = ""
    answer = False
    if isinstance(choices, list):
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            if choice.get("finish_reason"):
                analysis.finish_reasons.append(str(choice["finish_reason"]))
                has_finish = True
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                delta = {"content": choice["text"]} if _nonempty(choice.get("text")) else {}
            content = delta.get("content")
            if _nonempty(content):
                content_parts.append(content)
                chars += len(content)
                kind, answer = "content", True
            for reasoning_key in ("reasoning", "reasoning_content"):
                reasoning = delta.get(reasoning_key)
                if _nonempty(reasoning):
                    reasoning_parts.append(reasoning)
                    chars += len(reasoning)
                    kind = kind or "reasoning"
            for call in delta.get("tool_calls") or []:
                if not isinstance(call, dict):
                    continue
                function = call.get("function") or {}
                name = function.get("name") or ""
                arguments = function.get("arguments") or ""
                slot = analysis.tool_calls.setdefault(
                    (choice.get("index", 0), call.get("index", 0)), {"name": "", "arguments": ""}
                )
                if name:
                    slot["name"] = name
                if arguments:
                    slot["arguments"] += arguments
                if name or arguments:
                    chars += len(name) + len(arguments)
                    kind, answer = "tool", True
    cumulative = None
    if isinstance(usage, dict):
        analysis.usage = usage
        cumulative = token_count(usage.get("completion_tokens"))
        timing = _times(usage)
        if timing:
            analysis.server_timings["usage"] = timing
        if has_finish:
            analysis.usage_in_finish_chunk = True
        elif not choices:
            analysis.usage_in_separate_chunk = True
    if chars:
        analysis.token_events.append(
            TokenEvent(event.received_ns, event.read_index, chars, kind, answer, cumulative_tokens=cumulative)
        )


def _times(usage: dict) -> dict:
    return timing_values({k: v for k, v in usage.items() if isinstance(k, str) and k.endswith("_time")})


def _timing_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_TIMING_INT < value < MAX_TIMING_INT
    return isinstance(value, float) and math.isfinite(value)


def _timing_text(value) -> bool:
    if not isinstance(value, str) or len(value) > MAX_TIMING_TEXT_CHARS or "\x00" in value:
        return False
    try:
        value.encode("utf-8")  # a lone surrogate ("\\ud800" in the JSON) cannot be stored
    except UnicodeEncodeError:
        return False
    return True


def timing_values(data: dict) -> dict:
    """The storable part of a server's timing object: finite numbers and short NUL-free strings under short
    NUL-free names, at most ``MAX_TIMING_ENTRIES`` of them. Nested objects, lists, booleans, NaN and Infinity
    (which ``json.loads`` accepts) are dropped."""
    kept: dict = {}
    for name, value in data.items():
        if len(kept) >= MAX_TIMING_ENTRIES:
            break
        if not _timing_text(name) or not name or len(name) > MAX_TIMING_NAME_CHARS:
            continue
        if _timing_number(value) or _timing_text(value):
            kept[name] = value
    return kept


def token_count(value) -> int | None:
    """A token count from a server's ``usage``, or None when it is not one we can trust and store: only a plain
    int in [0, 2**31) (not a bool, a float, a negative or a number too large for the column)."""
    if type(value) is int and 0 <= value < MAX_TOKEN_COUNT:
        return value
    return None


def estimate_tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 4))


def tokens_per_chunk(token_events: list[TokenEvent], total: int | None) -> list[int]:
    """Tokens carried by each token-bearing chunk (see the module docstring for the rules)."""
    if not token_events:
        return []
    cumulative = [e.cumulative_tokens for e in token_events]
    if all(c is not None for c in cumulative) and len(set(cumulative)) > 1:
        # Each chunk carries what the running total grew by since the chunk before it.
        return [max(0, value - previous) for previous, value in zip([0, *cumulative], cumulative)]
    if total is None:
        return [estimate_tokens(e.chars) for e in token_events]
    weight = sum(e.chars for e in token_events)
    shares = [total * e.chars / weight for e in token_events]
    result = [math.floor(s) for s in shares]
    leftover = total - sum(result)
    order = sorted(range(len(shares)), key=lambda i: (shares[i] - result[i]), reverse=True)
    for i in order[: max(0, leftover)]:
        result[i] += 1
    return result


def is_buffered(token_events: list[TokenEvent]) -> bool:
    """At least three token-bearing events, and 80% of them arrived in the same network read as the previous
    one: the text was released in clumps (a buffering proxy, gzip, a server that generates first and streams
    after). Short gaps alone are not the signature: a fast engine writes each token separately, and its
    events arrive in separate reads however close together they are."""
    if len(token_events) < 3:
        return False
    pairs = list(zip(token_events, token_events[1:]))
    shared = sum(1 for before, after in pairs if before.read_index == after.read_index)
    return shared / len(pairs) >= BUFFERED_SHARE


def merged_reads(token_events: list[TokenEvent]) -> list[bool]:
    """Per token-bearing event: whether its stamp may be late. One read that delivers two token events carries
    one kernel stamp, the newest packet's, so the earlier event may have arrived up to one gap before it (or the
    server wrote both at once; the client cannot tell which). Events are matched by their stamp, not by their
    chunk: the HTTP layer hands one network read over as one chunk per chunked-encoding frame, each with the
    read's stamp, and every read's stamp is its own newest packet's."""
    return [
        after is not None and before.received_ns == after.received_ns
        for before, after in zip(token_events, [*token_events[1:], None])
    ]


def server_header_timings(headers: dict[str, str]) -> dict:
    found = {}
    for name, value in headers.items():
        if (name in TIMING_HEADERS or name.startswith(TIMING_HEADER_PREFIXES)) and len(found) < MAX_TIMING_ENTRIES:
            found[name] = value[:200].replace("\x00", "")
    return found


def engine_headers(headers: dict[str, str]) -> dict:
    return {name: headers[name][:200] for name in ENGINE_HEADERS if name in headers}


def request_id_from(headers: dict[str, str]) -> str:
    for name in ("x-request-id", "request-id", "x-amzn-requestid", "cf-ray"):
        if headers.get(name):
            return headers[name][:200]
    return ""


def _ms(ns: int | None, t0: int | None) -> float | None:
    if ns is None or t0 is None:
        return None
    return (ns - t0) / 1e6


def measure(
    exchange: Exchange,
    *,
    index: int,
    read_timeout_s: float,
    secrets: tuple[str, ...] = (),
    input_tokens_requested: int | None = None,
) -> tuple[RequestResult, StreamAnalysis]:
    """All per-request metrics of one streamed exchange, and its classified error (if any)."""
    result = RequestResult(
        index=index,
        started_at=dt.datetime.fromtimestamp(exchange.started_wall, tz=dt.timezone.utc),
        http_status=exchange.status,
        queue_ms=exchange.queue_ms,
        connect_ms=exchange.connect_ms,
        headers_ms=_ms(exchange.headers_ns, exchange.written_ns),
    )
    analysis = StreamAnalysis()
    error = exchange.error
    if exchange.ok_status and exchange.reads:
        content_type = exchange.headers.get("content-type", "")
        if "text/event-stream" not in content_type.lower():
            error = error or ProbeError(
                "unexpected_content_type",
                redact(f"expected text/event-stream, got {content_type or 'no content type'}", secrets),
                http_status=exchange.status,
            )
        events, decoder = decode_reads(exchange.reads)
        analysis = analyze_events(events, secrets)
        if error is None and analysis.error is not None:
            error = analysis.error
        if error is None and decoder.problems:
            error = ProbeError("malformed_sse", "not valid SSE: " + ", ".join(decoder.problems[:5]))
        if error is None and decoder.truncated_data is not None and exchange.eof:
            if decoder.truncated_data.strip() == "[DONE]":
                analysis.done = True
            else:
                error = ProbeError(
                    "malformed_sse", "the stream ended inside an event (no blank line after its last data line)"
                )
    if error is None and exchange.event_cap_hit:
        error = ProbeError("max_tokens_ignored", "far more chunks than the requested maximum; stopped reading")
    if error is None and exchange.ok_status:
        if not analysis.done and not analysis.finish_reasons:
            reason = "went silent" if exchange.stopped_after_grace else "ended"
            error = ProbeError("missing_done", f"the stream {reason} without [DONE] or a finish reason")
        elif exchange.stopped_after_grace and not analysis.done and not exchange.eof:
            error = ProbeError("missing_done", "no [DONE] and no end of stream after the finish reason")
        elif not analysis.token_events:
            error = ProbeError("no_tokens", "the stream carried no content, reasoning or tool-call delta")
    if error is not None and error.error_class == "deadline_exceeded" and exchange.status is not None:
        last_progress = analysis.token_events[-1].received_ns if analysis.token_events else exchange.headers_ns
        if last_progress is None or (exchange.end_ns - last_progress) / 1e9 >= min(read_timeout_s, 1.0):
            error = ProbeError(
                "slow_drip",
                f"deadline passed while {exchange.body_bytes} bytes trickled in without a token event recently",
                http_status=exchange.status,
            )

    t0 = exchange.written_ns
    tokens = analysis.token_events
    usage = analysis.usage or {}
    server_count = token_count(usage.get("completion_tokens"))
    first_token_ns = tokens[0].received_ns if tokens else None
    first_answer_ns = next((e.received_ns for e in tokens if e.answer), None)
    last_token_ns = tokens[-1].received_ns if tokens else None
    result.ttft_ms = _ms(first_token_ns, t0)
    result.ttfat_ms = _ms(first_answer_ns, t0)
    result.e2e_ms = _ms(last_token_ns, t0)
    if tokens:
        if server_count is not None and server_count > 0:
            total, source = server_count, "usage"
        else:
            total, source = sum(estimate_tokens(e.chars) for e in tokens), "estimate"
        per_chunk = tokens_per_chunk(tokens, total)
        result.output_tokens = total
        result.output_tokens_source = source
        result.tokens_per_chunk = per_chunk
        result.chunks = len(tokens)
        gaps = [(b.received_ns - a.received_ns) / 1e6 for a, b in zip(tokens, tokens[1:])]
        result.gaps_ms = [round(g, 3) for g in gaps]
        result.itl_p50_ms = percentile(gaps, 50)
        result.itl_p95_ms = percentile(gaps, 95)
        result.itl_p99_ms = percentile(gaps, 99)
        window_s = (last_token_ns - first_token_ns) / 1e9
        after_first = total - per_chunk[0]
        if len(tokens) >= 2 and window_s > 0 and after_first > 0:
            result.output_speed_tps = after_first / window_s
        if total > 1 and result.e2e_ms is not None and result.ttft_ms is not None:
            result.tpot_ms = (result.e2e_ms - result.ttft_ms) / (total - 1)
        result.buffered = is_buffered(tokens)
    result.raw_stamps = {
        "start_ns": exchange.start_ns,
        "written_ns": exchange.written_ns,
        "headers_ns": exchange.headers_ns,
        "first_token_ns": first_token_ns,
        "first_answer_ns": first_answer_ns,
        "last_token_ns": last_token_ns,
    }
    prompt_count = token_count(usage.get("prompt_tokens"))
    result.input_tokens = prompt_count if prompt_count is not None else input_tokens_requested
    timings = dict(analysis.server_timings)
    header_timings = server_header_timings(exchange.headers)
    if header_timings:
        timings["headers"] = header_timings
    result.server_timings = timings
    result.request_id = request_id_from(exchange.headers) or analysis.request_id
    if error is not None:
        result.ok = False
        result.error_class = error.error_class
        result.error_message = redact(error.message, secrets)
        if error.http_status is not None and result.http_status is None:
            result.http_status = error.http_status
    else:
        result.ok = True
    return result, analysis
