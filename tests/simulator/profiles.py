"""Documented behaviour of each hosted provider, as the simulator reproduces it.

Every quirk cites its key in the Sources section of docs/probes-measurement.md.
Where that reference marks a point UNCONFIRMED or third-party, the comment says so: the simulator then
implements the most plausible reading, and a test asserting it documents an assumption, not a fact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

Rejection = tuple[int, dict]  # (HTTP status, error fields: message, type, param, code)


@dataclass(frozen=True)
class Profile:
    name: str
    base_path: str = "/v1"
    models: tuple[str, ...] = ()  # empty: any model id is accepted
    reasoning_models: tuple[str, ...] = ()
    reasoning_field: str = "reasoning"
    # How the stream reports usage: "opt_in" (separate choices:[] chunk only with include_usage),
    # "finish_chunk" (on the finish chunk, always), "groq" (x_groq.usage always; with include_usage also
    # top-level usage on the finish chunk plus a separate choices:[] chunk).
    usage_mode: str = "opt_in"
    done_sentinel: bool = True
    envelope: str = "nested"  # "nested" {"error": {...}} or "flat" {message, type, param, code}
    honours_max_completion_tokens: bool = True
    logprobs_shape: str = "openai"  # or "together": {tokens, token_logprobs, top_logprobs}
    models_bare_list: bool = False
    id_prefix: str = "chatcmpl-"
    extra_headers: dict = field(default_factory=dict)

    def error_body(self, status: int, fields: dict) -> bytes:
        if self.envelope == "flat":
            return json.dumps(fields).encode()
        return json.dumps({"error": fields}).encode()

    def reject(self, body: dict) -> Rejection | None:
        return _REJECTORS.get(self.name, _no_rejection)(self, body)


def _error(message: str, *, type_: str = "invalid_request_error", param: str | None = None, code=None) -> dict:
    return {"message": message, "type": type_, "param": param, "code": code}


def _wrong_api_format(message: str) -> Rejection:
    return 400, _error(message, param="validation_error", code="wrong_api_format")


def _no_rejection(profile: Profile, body: dict) -> Rejection | None:
    return None


def _groq(profile: Profile, body: dict) -> Rejection | None:
    # G1: "logprobs, logit_bias, top_logprobs ... not supported and will result in a 400 error". The exact
    # message text is not documented; this one is the simulator's.
    for param in ("logprobs", "top_logprobs", "logit_bias"):
        if body.get(param) not in (None, False):
            return 400, _error(f"'{param}' : property '{param}' is unsupported", param=param)
    # G1, G6: n must equal 1.
    if body.get("n") not in (None, 1):
        return 400, _error("'n' : number must be at most 1", param="n")
    # G1: messages[].name -> 400.
    if any(isinstance(m, dict) and "name" in m for m in body.get("messages") or []):
        return 400, _error("'messages.0' : property 'name' is unsupported", param="messages")
    # G12 (3rd-party maintainer comment): JSON mode together with tools is rejected; status/body UNCONFIRMED.
    if body.get("tools") and body.get("response_format"):
        return 400, _error("json mode cannot be combined with tool/function calling", param="response_format")
    return None


def _cerebras(profile: Profile, body: dict) -> Rejection | None:
    # C4 (3rd-party, UNCONFIRMED): these fields are rejected with 400.
    for param in ("logit_bias", "parallel_tool_calls", "frequency_penalty", "presence_penalty", "service_tier"):
        if param in body:
            return _wrong_api_format(f"{param}: property '{param}' is unsupported")
    # Issue #3 expects n=2 to be rejected on Cerebras; no cited Cerebras source covers n (UNCONFIRMED).
    if body.get("n") not in (None, 1):
        return _wrong_api_format("n: only n=1 is supported")
    # C4 (3rd-party, UNCONFIRMED): tool_choice only "auto" or "none".
    if "tool_choice" in body and body["tool_choice"] not in ("auto", "none"):
        return _wrong_api_format("tool_choice: only 'auto' and 'none' are supported")
    # C8: reasoning_content on an assistant message -> 400 wrong_api_format.
    for index, message in enumerate(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant" and "reasoning_content" in message:
            field = f"messages.{index}.assistant.reasoning_content"
            return _wrong_api_format(f"{field}: property '{field}' is unsupported")
    if body.get("model") == "gpt-oss-120b":
        # C4 (3rd-party): no streaming for reasoning models with JSON mode or tools (contradicted for
        # qwen-3-coder-480b by C6, so only the reasoning model gpt-oss-120b is affected here).
        if body.get("stream") and (body.get("tools") or body.get("response_format")):
            return 400, _error(
                "Streaming is not supported for reasoning models with tools or JSON mode", param="stream"
            )
        # Issue #3 and seed 002: tools together with a JSON schema on gpt-oss-120b is rejected; Cerebras'
        # own pages (C1) do not state it, so it stays UNCONFIRMED (cf. C4, 3rd-party).
        if body.get("tools") and body.get("response_format"):
            return 400, _error(
                "Tools and response_format cannot be used together for this model", param="response_format"
            )
    return None


def _together(profile: Profile, body: dict) -> Rejection | None:
    # T6 (inspect_ai PR #5149): newer models take OpenAI's boolean logprobs and reject the old integer form.
    if isinstance(body.get("logprobs"), int) and not isinstance(body.get("logprobs"), bool):
        return 400, _error(
            f"Invalid JSON data: invalid type: integer {body['logprobs']}, expected a boolean", param="logprobs"
        )
    # T4: n is 1-128.
    n = body.get("n")
    if isinstance(n, int) and not 1 <= n <= 128:
        return 400, _error("n must be between 1 and 128", param="n")
    return None


_REJECTORS = {"groq": _groq, "cerebras": _cerebras, "together": _together}

PROFILES: dict[str, Profile] = {
    # OpenAI baseline: usage only with include_usage, in a separate choices:[] chunk; [DONE] at the end.
    "openai": Profile(name="openai", reasoning_models=("gpt-oss-120b", "o4-mini")),
    "groq": Profile(
        name="groq",
        base_path="/openai/v1",  # G1
        # G4, G6, G8: flat and namespaced ids.
        models=(
            "openai/gpt-oss-120b",
            "openai/gpt-oss-20b",
            "llama-3.3-70b-versatile",
            "llama-3.1-8b-instant",
            "qwen/qwen3-32b",
        ),
        reasoning_models=("openai/gpt-oss-120b", "openai/gpt-oss-20b", "qwen/qwen3-32b"),  # G4
        reasoning_field="reasoning",  # G4, G6 (reasoning_format=parsed)
        usage_mode="groq",  # G6, G8
        done_sentinel=True,  # G6, G8
        id_prefix="chatcmpl-",
        # G10: observed rate-limit headers (values illustrative).
        extra_headers={
            "x-ratelimit-limit-requests": "1000",
            "x-ratelimit-limit-tokens": "250000",
            "x-ratelimit-remaining-requests": "999",
            "x-ratelimit-remaining-tokens": "249000",
            "x-ratelimit-reset-requests": "6s",
            "x-ratelimit-reset-tokens": "1.57s",
        },
    ),
    "cerebras": Profile(
        name="cerebras",
        base_path="/v1",  # C1
        models=("gpt-oss-120b", "llama3.1-8b", "llama-3.3-70b", "qwen-3-32b", "qwen-3-coder-480b"),  # C2, C6
        reasoning_models=("gpt-oss-120b",),
        reasoning_field="reasoning",  # C3, C8
        usage_mode="finish_chunk",  # C6: usage and time_info in the finish chunk, no separate chunk
        done_sentinel=False,  # C6: no data: [DONE] in the recorded streams
        envelope="flat",  # C8: {message, type, param, code} as printed by a client (envelope UNCONFIRMED)
        extra_headers={  # C2
            "x-ratelimit-limit-requests-day": "14400",
            "x-ratelimit-limit-tokens-minute": "60000",
            "x-ratelimit-remaining-requests-day": "14399",
            "x-ratelimit-remaining-tokens-minute": "59000",
            "x-ratelimit-reset-requests-day": "33011.38",
            "x-ratelimit-reset-tokens-minute": "11.38",
        },
    ),
    "together": Profile(
        name="together",
        base_path="/v1",  # T1
        models=("openai/gpt-oss-120b", "openai/gpt-oss-20b", "meta-llama/Llama-3.3-70B-Instruct-Turbo"),  # T1, T5
        reasoning_models=("openai/gpt-oss-120b", "openai/gpt-oss-20b"),
        reasoning_field="reasoning",  # T4
        usage_mode="finish_chunk",  # T5: usage on the finish chunk even without stream_options
        done_sentinel=True,  # T4
        # T4 lists only max_tokens; handling of max_completion_tokens is UNCONFIRMED. The simulator drops it
        # like any unknown field (an assumption).
        honours_max_completion_tokens=False,
        logprobs_shape="together",  # T4: {token_ids, tokens, token_logprobs, top_logprobs}
        models_bare_list=True,  # T7, T11: /models returned a bare list
        id_prefix="oBUtTzC-62bZhn-",  # T5
        extra_headers={"x-ratelimit-reset": "1"},  # T2
    ),
    "fireworks": Profile(
        name="fireworks",
        base_path="/inference/v1",  # F5, F7
        models=("accounts/fireworks/models/gpt-oss-120b", "accounts/fireworks/models/llama-v3p1-8b-instruct"),  # F5, F6
        reasoning_models=("accounts/fireworks/models/gpt-oss-120b",),
        reasoning_field="reasoning_content",  # F4
        # F6 (recording): usage in the chunk with finish_reason, without stream_options; the stored copy of
        # F1 does not state it.
        usage_mode="finish_chunk",
        done_sentinel=True,  # UNCONFIRMED (F); kept as OpenAI does
        id_prefix="",  # F6: bare UUID chunk ids
        extra_headers={  # F2 (tokens per second)
            "x-ratelimit-limit-tokens-prompt": "60000",
            "x-ratelimit-limit-tokens-cache-adjusted-prompt": "15000",
            "x-ratelimit-limit-tokens-generated": "600",
        },
    ),
}
