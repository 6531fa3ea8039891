"""Sending one request of a workload and reducing its exchange to a :class:`Sample`.

Prompts: ``prefix_tokens`` words shared by every request of a run (the same seed gives the same words), then a
per-request nonce, then unique filler, then the instruction. With no shared prefix the nonce comes first, so no
request can reuse another's KV cache. The filler words are single tokens in the common tokenizers (see
``probe_client/workloads.py``); the server's ``usage.prompt_tokens`` is what the figures use.
"""

from __future__ import annotations

import json

from ..compat import WEATHER_TOOL
from ..errors import ProbeError, parse_error_envelope
from ..http import Exchange, ProbeHTTP
from ..secrets import redact
from ..speed import _Params, max_events_for, post_negotiated, speed_body
from ..stream_analysis import engine_headers, measure, merged_reads, token_count
from ..workloads import INSTRUCTION, INSTRUCTION_TOKENS, filler_words
from .stats import Sample
from .workload import RequestShape

STRUCTURED_INSTRUCTION = (
    "The text above is random filler; ignore it. Answer only with a JSON object describing an imaginary book: "
    "its title, its year and a list of tags."
)
BOOK_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "year": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["title", "year", "tags"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "book", "strict": True, "schema": BOOK_SCHEMA}}
TOOL_INSTRUCTION = (
    "The text above is random filler; ignore it. Use the get_weather tool to look up the weather in Paris."
)
WEATHER_ARGUMENTS_SCHEMA = WEATHER_TOOL["function"]["parameters"]


def shaped_messages(shape: RequestShape, *, nonce: str, prefix_seed: str, instruction: str = INSTRUCTION) -> list:
    """About ``shape.input_tokens`` tokens, the first ``shape.prefix_tokens`` of them shared by the run."""
    parts = []
    if shape.prefix_tokens:
        parts.append(filler_words(shape.prefix_tokens, f"prefix-{prefix_seed}"))
    unique = shape.input_tokens - shape.prefix_tokens - INSTRUCTION_TOKENS - 6
    parts.append(f"Request {nonce}. {filler_words(unique, nonce)}".rstrip())
    return [{"role": "user", "content": " ".join(parts) + f"\n\n{instruction}"}]


def request_body(
    config, shape: RequestShape, *, nonce: str, prefix_seed: str, used: tuple[bool, str], variant: str, streaming: bool
) -> dict:
    """The chat body for one request. ``variant``: ``plain``, ``json_schema`` or ``tools``."""
    instruction = {"plain": INSTRUCTION, "json_schema": STRUCTURED_INSTRUCTION, "tools": TOOL_INSTRUCTION}[variant]
    messages = shaped_messages(shape, nonce=nonce, prefix_seed=prefix_seed, instruction=instruction)
    body = speed_body(
        config,
        messages=messages,
        max_tokens=shape.output_tokens,
        include_usage=used[0] and streaming,
        token_param=used[1],
    )
    if not streaming:
        body.pop("stream_options", None)
        body["stream"] = False
    if variant == "json_schema":
        body["response_format"] = RESPONSE_FORMAT
    elif variant == "tools":
        body["tools"] = [WEATHER_TOOL]
        body["tool_choice"] = "auto"
    return body


async def send(
    http: ProbeHTTP,
    config,
    shape: RequestShape,
    *,
    nonce: str,
    prefix_seed: str,
    params: _Params,
    variant: str = "plain",
    streaming: bool = True,
) -> Exchange:
    """One request, renegotiating the token-limit and usage parameters as the speed suite does
    (:func:`probe_client.speed.post_negotiated`)."""

    def body_for(attempt: int, used: tuple[bool, str]) -> dict:
        return request_body(
            config,
            shape,
            nonce=f"{nonce}-{attempt}" if attempt else nonce,
            prefix_seed=prefix_seed,
            used=used,
            variant=variant,
            streaming=streaming,
        )

    max_events = max_events_for(shape.output_tokens) if streaming else None
    exchange, _ = await post_negotiated(http, params, body_for, stream=streaming, max_events=max_events)
    return exchange


def sample_from(
    exchange: Exchange, *, index: int, shape: RequestShape, streaming: bool, read_timeout_s: float, secrets
) -> tuple[Sample, dict]:
    """Reduce one exchange to a :class:`Sample`; also returns the server facts seen (model, engine headers)."""
    if not streaming:
        return _complete_sample(exchange, index=index, shape=shape, secrets=secrets), {}
    measured, analysis = measure(
        exchange,
        index=index,
        read_timeout_s=read_timeout_s,
        secrets=secrets,
        input_tokens_requested=shape.input_tokens,
    )
    cached, cached_source = cached_tokens(analysis.usage or {}, analysis.server_timings)
    late = merged_reads(analysis.token_events)
    sample = Sample(
        index=index,
        ok=measured.ok,
        input_tokens=measured.input_tokens,
        output_tokens=measured.output_tokens,
        prefix_tokens=shape.prefix_tokens,
        ttft_ms=measured.ttft_ms,
        tpot_ms=measured.tpot_ms,
        e2e_ms=measured.e2e_ms,
        output_speed_tps=measured.output_speed_tps,
        cached_tokens=cached,
        cached_tokens_source=cached_source,
        output_tokens_source=measured.output_tokens_source,
        error_class=measured.error_class,
        error_message=measured.error_message,
        request_id=measured.request_id,
        sent_ns=exchange.written_ns,
        last_token_ns=measured.raw_stamps["last_token_ns"],
        gaps_ms=measured.gaps_ms,
        ttft_merged=bool(late) and late[0],
        merged_gaps=[gap for gap, (start, end) in enumerate(zip(late, late[1:])) if start or end],
        tokens_per_chunk=measured.tokens_per_chunk,
        content=analysis.content,
        tool_calls=[dict(call) for call in analysis.tool_calls.values()],
    )
    facts = engine_headers(exchange.headers) if exchange.ok_status else {}
    if analysis.model:
        facts["model"] = analysis.model
    return sample, facts


def cached_tokens(usage: dict, server_timings: dict) -> tuple[int | None, str]:
    """Prompt tokens the server says it served from its cache, and where it said so: OpenAI's
    ``usage.prompt_tokens_details.cached_tokens`` (vLLM, SGLang, hosted APIs), else llama.cpp's
    ``timings.cache_n``; (None, "") when it does not say."""
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        count = token_count(details.get("cached_tokens"))
        if count is not None:
            return count, "usage.prompt_tokens_details.cached_tokens"
    timings = server_timings.get("timings") or {}
    count = token_count(timings.get("cache_n"))
    return (count, "timings.cache_n") if count is not None else (None, "")


def _complete_sample(exchange: Exchange, *, index: int, shape: RequestShape, secrets) -> Sample:
    """A non-streamed answer: only E2E (the last byte's arrival) and the usage counts can be measured."""
    sample = Sample(
        index=index, ok=False, prefix_tokens=shape.prefix_tokens, input_tokens=shape.input_tokens,
        sent_ns=exchange.written_ns,
    )
    error = exchange.error
    data = None
    if error is None:
        try:
            data = json.loads(exchange.body)
        except ValueError:
            error = ProbeError("invalid_json", "the response body is not JSON")
    if error is None and not isinstance(data, dict):
        error = ProbeError("invalid_json", "the response body is JSON but not an object")
    if error is not None:
        sample.error_class = error.error_class
        sample.error_message = redact(error.message, secrets)
        return sample
    if isinstance(data.get("error"), (dict, str)):
        envelope = parse_error_envelope(exchange.body)
        sample.error_class = "stream_error_event"
        sample.error_message = redact(envelope.message or "error object in the response", secrets)
        return sample
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    choices = data.get("choices") if isinstance(data.get("choices"), list) else []
    message = (choices[0].get("message") if choices and isinstance(choices[0], dict) else None) or {}
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    calls = [
        {"name": (c.get("function") or {}).get("name", ""), "arguments": (c.get("function") or {}).get("arguments", "")}
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    last_read = exchange.reads[-1][0] if exchange.reads else exchange.end_ns
    if exchange.written_ns is not None and last_read is not None:
        sample.e2e_ms = (last_read - exchange.written_ns) / 1e6
    # Every token of a non-streamed answer arrives with its last byte.
    sample.last_token_ns = last_read
    sample.output_tokens = token_count(usage.get("completion_tokens"))
    sample.output_tokens_source = "usage" if sample.output_tokens is not None else ""
    prompt = token_count(usage.get("prompt_tokens"))
    sample.input_tokens = prompt if prompt is not None else shape.input_tokens
    sample.cached_tokens, sample.cached_tokens_source = cached_tokens(usage, {})
    sample.content = content
    sample.tool_calls = calls
    sample.ok = bool(content or calls)
    if not sample.ok:
        sample.error_class = "no_tokens"
        sample.error_message = "the answer carried no content and no tool call"
    return sample
