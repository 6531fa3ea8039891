"""Error classes of the probe client, provider error envelopes and Retry-After parsing.

``error_class`` vocabulary (stable strings; stored by the probes app and shown on pages):

========================  ====================================================================================
auth_missing              the target names an API-key variable that is unset or empty; nothing was sent
auth_failed               HTTP 401 or 403
connect_timeout           TCP/TLS connection not established within ``connect_timeout_s``
connect_error             connection refused, DNS failure, TLS failure
pool_timeout              no pooled connection became free in time (client-side overload)
write_timeout             the request could not be written in time
stall_before_headers      connected and request written, but no response headers within ``read_timeout_s``
stall_mid_stream          headers received, then no bytes for ``read_timeout_s``
connection_reset          the server closed or reset the connection before the response was complete
deadline_exceeded         the whole request took longer than ``request_deadline_s`` while still making progress
slow_drip                 the deadline passed while bytes kept trickling in but no token event completed within
                          the last ``read_timeout_s`` (a low-and-slow server)
response_too_large        the body exceeded ``max_response_bytes`` (announced by Content-Length or counted)
unexpected_content_type   a 2xx streaming response that is not ``text/event-stream``
malformed_sse             bytes that are not valid SSE: invalid UTF-8, unknown field lines, oversized lines,
                          or a final event cut off without its terminating blank line
invalid_json              an SSE ``data:`` payload (or a JSON body) that does not parse as JSON
stream_error_event        an ``event: error`` or an in-stream ``{"error": ...}`` object
missing_done              the stream ended (or went silent after ``finish_reason``) without ``[DONE]`` and
                          without a finish reason, i.e. the response may be incomplete
no_tokens                 a complete stream that carried no content, reasoning or tool-call delta
max_tokens_ignored        the server produced far more tokens than the requested maximum (the length parameter
                          was silently ignored); the client stopped reading
redirect                  a 3xx answer; redirects are never followed (they would replay the Authorization header)
rate_limited              HTTP 429 (after honouring ``Retry-After`` within the cap, if any)
http_4xx                  any other 4xx
overloaded                HTTP 503 or 529 (load shedding)
http_5xx                  any other 5xx
client_error              an unexpected exception inside the client (a bug); the message names its type
========================  ====================================================================================
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from dataclasses import dataclass

ERROR_CLASSES = (
    "auth_missing",
    "auth_failed",
    "connect_timeout",
    "connect_error",
    "pool_timeout",
    "write_timeout",
    "stall_before_headers",
    "stall_mid_stream",
    "connection_reset",
    "deadline_exceeded",
    "slow_drip",
    "response_too_large",
    "unexpected_content_type",
    "malformed_sse",
    "invalid_json",
    "stream_error_event",
    "missing_done",
    "no_tokens",
    "max_tokens_ignored",
    "redirect",
    "rate_limited",
    "http_4xx",
    "overloaded",
    "http_5xx",
    "client_error",
)

MAX_MESSAGE_CHARS = 2000


class ProbeError(Exception):
    """A classified failure of one request. ``message`` never contains the API key."""

    def __init__(
        self,
        error_class: str,
        message: str,
        *,
        http_status: int | None = None,
        provider_message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        if error_class not in ERROR_CLASSES:
            raise ValueError(f"unknown error class {error_class!r}")
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message
        self.http_status = http_status
        self.provider_message = provider_message
        self.retry_after_s = retry_after_s

    def __repr__(self) -> str:
        return f"ProbeError({self.error_class!r}, {self.message!r}, http_status={self.http_status!r})"


def classify_status(status: int) -> str:
    if status in (401, 403):
        return "auth_failed"
    if status == 429:
        return "rate_limited"
    if status in (503, 529):
        return "overloaded"
    if 300 <= status < 400:
        return "redirect"
    if 400 <= status < 500:
        return "http_4xx"
    return "http_5xx"


@dataclass(frozen=True)
class ErrorEnvelope:
    """What a provider said when it refused: its message, and its type/code when it gave them."""

    message: str
    error_type: str | None = None
    code: str | None = None
    shape: str = "unknown"


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")


def _text_of(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_error_envelope(body: bytes, content_type: str | None = None) -> ErrorEnvelope:
    """Read every error shape cited in the Sources section of docs/probes-measurement.md.

    - OpenAI-nested ``{"error": {"message", "type", "code", ...}}`` (OpenAI, Groq, Together, vLLM, Ollama, llama.cpp)
    - flat object ``{"object": "error", "message", "type", "code"}`` (SGLang non-stream, TRT-LLM)
    - flat ``{"message", "type", "param", "code"}`` (Cerebras as printed by a client)
    - flat string ``{"error": "..."}`` (MLX-LM) and TGI's ``{"error": "...", "error_type": "..."}``
    - Groq's ``{"error": {..., "status_code": 400}}`` inside an SSE error event
    - plain text or an HTML page from a proxy (its ``<title>``, else the text without tags)
    """
    stripped = body.strip()
    if stripped[:1] in (b"{", b"["):
        try:
            data = json.loads(stripped)
        except (ValueError, UnicodeDecodeError):
            data = None
        if isinstance(data, dict):
            envelope = _envelope_from_json(data)
            if envelope is not None:
                return envelope
    if stripped[:1] == b"<" or (content_type and "html" in content_type.lower()):
        match = _TITLE.search(stripped)
        raw = match.group(1) if match else stripped
        text = _TAGS.sub(" ", raw.decode("utf-8", "replace"))
        return ErrorEnvelope(message=" ".join(text.split()), shape="html")
    text = stripped.decode("utf-8", "replace")
    return ErrorEnvelope(message=" ".join(text.split()), shape="text")


def _envelope_from_json(data: dict) -> ErrorEnvelope | None:
    error = data.get("error")
    if isinstance(error, dict):
        message = _text_of(error.get("message")) or _text_of(error.get("detail")) or _text_of(error)
        return ErrorEnvelope(
            message=message or "",
            error_type=_text_of(error.get("type")),
            code=_text_of(error.get("code")),
            shape="openai",
        )
    if isinstance(error, str):
        shape = "tgi" if "error_type" in data else "flat_string"
        return ErrorEnvelope(message=error, error_type=_text_of(data.get("error_type")), shape=shape)
    if "message" in data:
        shape = "flat_object" if data.get("object") == "error" else "flat"
        return ErrorEnvelope(
            message=_text_of(data.get("message")) or "",
            error_type=_text_of(data.get("type")),
            code=_text_of(data.get("code")),
            shape=shape,
        )
    if "detail" in data:
        return ErrorEnvelope(message=_text_of(data.get("detail")) or "", shape="detail")
    return None


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delay-seconds or HTTP-date); None when absent or invalid.

    Negative, NaN and infinite values are rejected (public parsers had to guard against values that would
    raise or hang); a date in the past means zero.
    """
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if parsed is None or parsed.tzinfo is None:
            return None
        return max(0.0, parsed.timestamp() - (now if now is not None else time.time()))
    if math.isnan(seconds) or math.isinf(seconds) or seconds < 0:
        return None
    return seconds
