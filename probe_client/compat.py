"""The compatibility suite: one small request (two for ``seed``) per check, each with one outcome.

Every check is written once, under a name of the vocabulary (``scoring.vocabulary.COMPAT_CHECKS``, whose order
the suite runs them in): ``@compat_check`` registers it in ``CHECKS`` with the API parameters it exercises and,
in plain words, what it sends and when it counts as supported; the methodology page and the compat matrix read
those words from here.

Outcomes: ``supported`` (accepted and the effect verified), ``accepted`` (accepted, effect not verifiable),
``ignored`` (accepted, effect verifiably absent), ``rejected`` (a 4xx naming the request as the problem: the
status and the provider's own message are kept), ``error`` (5xx, timeout, broken stream, 401/403/404/408/429,
which say nothing about the parameter). The rules of each check are in ``docs/probes-measurement.md``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import jsonschema

from scoring.vocabulary import ACCEPTED, COMPAT_CHECKS, ERROR, IGNORED, REJECTED, SUPPORTED

from .config import EndpointConfig
from .http import Exchange, ProbeHTTP
from .results import CompatCheckResult, CompatResult
from .secrets import redact
from .speed import FATAL_ERRORS, _is_control_exception, _notify
from .sse import decode_reads
from .stream_analysis import StreamAnalysis, analyze_events, engine_headers, measure, token_count

logger = logging.getLogger(__name__)

NOT_ABOUT_THE_REQUEST = frozenset({401, 403, 404, 408, 429})
SMALL = 16
ROOM = 400  # reasoning models spend tokens before answering: every check that inspects the answer needs room
LIMIT_UNDER_TEST = 5
# Token id 15 is "0" in cl100k/o200k; any id works: a +100 bias makes one token repeat, whatever it is.
BIAS_TOKEN_ID = "15"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
# The same tool with OpenAI's structured tool calling: "strict": true asks the server to constrain the arguments to
# the parameters schema (every property required, no others), as json_schema's strict mode does for an answer.
STRICT_WEATHER_TOOL = {"type": "function", "function": {**WEATHER_TOOL["function"], "strict": True}}
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}},
    "required": ["city", "temperature_c"],
    "additionalProperties": False,
}
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "city_weather", "strict": True, "schema": WEATHER_SCHEMA},
}

PROMPT_SHORT = "Reply with one short sentence about the sea."
PROMPT_WEATHER = "What is the weather in Paris right now? Use the get_weather tool."
PROMPT_TWO_CITIES = "What is the weather in Paris and in Tokyo right now? Call get_weather once for each city."
PROMPT_JSON = 'Return only a JSON object with the key "city" set to "Paris". No other text.'
PROMPT_SCHEMA = "Give the current weather of Paris as JSON with the city and the temperature in Celsius."
PROMPT_COUNT = "Count from 1 to 10, separated by spaces. Output only the numbers."
PROMPT_LONG = "Write a long story about a lighthouse keeper. Keep writing until you are stopped."
PROMPT_RANDOM = "Write one random, unusual sentence."


class _Decided(Exception):
    """Raised when an exchange decides its check's outcome before the answer is judged (the request failed, the
    response is unreadable), so that each check only says how it judges an answer."""

    def __init__(self, result: CompatCheckResult) -> None:
        super().__init__(result.detail)
        self.result = result


class _Context:
    def __init__(self, http: ProbeHTTP, config: EndpointConfig) -> None:
        self.http = http
        self.config = config
        self.token_param = "max_tokens"
        self.server_info: dict = {}

    def body(self, prompt: str, *, max_tokens: int = SMALL, temperature: float = 0.0, **extra) -> dict:
        body = {
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
            self.token_param: max_tokens,
            "temperature": temperature,
        }
        body.update(extra)
        return body

    async def post(self, name: str, body: dict, *, stream: bool = False, max_events: int | None = None) -> Exchange:
        """Send a request of the check ``name``; a failed exchange decides the check (``_Decided``)."""
        exchange = await self.http.post(body, stream=stream, max_events=max_events)
        self.server_info.update(engine_headers(exchange.headers))
        failed = failure(name, exchange, self.http.secrets())
        if failed is not None:
            raise _Decided(failed)
        return exchange


# A check: called with the suite's context and its own name, it sends its request(s) and judges the answer.
CheckFunction = Callable[[_Context, str], Awaitable[CompatCheckResult]]


@dataclass(frozen=True)
class CompatCheck:
    """One check of the suite: ``parameters`` are the request parameters it exercises (a dotted path for a nested
    one), each present in what it sends; ``request`` and ``supported_when`` say, for readers of the methodology
    page and the compat matrix, what it sends and what counts as support (the full rules are in
    docs/probes-measurement.md section 4)."""

    name: str
    parameters: tuple[str, ...]
    request: str
    supported_when: str
    run: CheckFunction


CHECKS: dict[str, CompatCheck] = {}


def compat_check(
    name: str, *, parameters: tuple[str, ...], request: str, supported_when: str
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated coroutine as the check ``name``; it is called with the context and that name."""

    if name not in COMPAT_CHECKS:
        raise ValueError(f"compat check {name!r} is not one of the vocabulary's check names")

    def register(run: CheckFunction) -> CheckFunction:
        if name in CHECKS:
            raise ValueError(f"compat check {name!r} is registered twice")
        CHECKS[name] = CompatCheck(name, parameters, request, supported_when, run)
        return run

    return register


def failure(name: str, exchange: Exchange, secrets: tuple[str, ...]) -> CompatCheckResult | None:
    """The outcome of a failed exchange, or None when it succeeded."""
    error = exchange.error
    if error is None:
        return None
    status = error.http_status or exchange.status
    message = redact(error.provider_message or "", secrets)
    if status is not None and 400 <= status < 500 and status not in NOT_ABOUT_THE_REQUEST:
        return CompatCheckResult(name, REJECTED, status, message, f"HTTP {status}")
    return CompatCheckResult(name, ERROR, status, message, f"{error.error_class}: {redact(error.message, secrets)}")


def _result(name: str, outcome: str, exchange: Exchange, detail: str) -> CompatCheckResult:
    """The outcome of a check whose request went through: its status, what was seen, no provider message."""
    return CompatCheckResult(name, outcome, exchange.status, "", detail)


async def _answer(name: str, ctx: _Context, body: dict) -> tuple[dict, Exchange]:
    """Send a non-streamed request: its JSON answer (with at least one choice) and the exchange."""
    exchange = await ctx.post(name, body)
    try:
        data = exchange.json()
    except (ValueError, UnicodeDecodeError):
        raise _Decided(_result(name, ERROR, exchange, "invalid_json: the response is not JSON")) from None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
        raise _Decided(_result(name, ERROR, exchange, "invalid_json: no choices in the response"))
    return data, exchange


async def _streamed(
    name: str, ctx: _Context, body: dict, *, tolerated: tuple[str, ...] = ()
) -> tuple[StreamAnalysis, Exchange]:
    """Send a streamed request: the analysis of a stream that was sound (or failed only in a ``tolerated``
    way) and the exchange."""
    exchange = await ctx.post(name, body, stream=True)
    secrets = ctx.http.secrets()
    measured, analysis = measure(exchange, index=0, read_timeout_s=ctx.config.read_timeout_s, secrets=secrets)
    if not measured.ok and measured.error_class not in tolerated:
        raise _Decided(_result(name, ERROR, exchange, f"{measured.error_class}: {measured.error_message}"))
    return analysis, exchange


def _message(data: dict) -> dict:
    return data["choices"][0].get("message") or {}


def _finish(data: dict) -> str:
    return str(data["choices"][0].get("finish_reason") or "")


def _content(data: dict) -> str:
    content = _message(data).get("content")
    return content if isinstance(content, str) else ""


def _tool_calls(data: dict) -> list[dict]:
    calls = _message(data).get("tool_calls") or []
    return [c for c in calls if isinstance(c, dict)]


def _parse_json_text(text: str):
    try:
        return json.loads(text.strip())
    except ValueError:
        return None


def _periodic(text: str) -> bool:
    """True when ``text`` is one piece repeated at least twice (e.g. "0000")."""
    return len(text) >= 2 and (text + text).find(text, 1) < len(text)


@compat_check(
    "stream_usage",
    parameters=("stream_options.include_usage",),
    request="a stream with stream_options.include_usage",
    supported_when="a usage object with completion_tokens arrives",
)
async def check_stream_usage(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_SHORT, stream=True, stream_options={"include_usage": True})
    analysis, exchange = await _streamed(name, ctx, body, tolerated=("no_tokens",))
    completion_tokens = (analysis.usage or {}).get("completion_tokens")
    if token_count(completion_tokens) is not None:
        placement = "in the finish chunk" if analysis.usage_in_finish_chunk else "in a separate chunk"
        return _result(name, SUPPORTED, exchange, f"usage {placement}: {completion_tokens} completion tokens")
    return _result(name, IGNORED, exchange, "stream completed without a usage object")


def _logprob_entries(logprobs) -> tuple[int, int]:
    """(number of token entries, most alternatives seen for one token), for the OpenAI and Together shapes."""
    if not isinstance(logprobs, dict):
        return 0, 0
    content = logprobs.get("content")
    if isinstance(content, list) and content:
        alternatives = max((len(e.get("top_logprobs") or []) for e in content if isinstance(e, dict)), default=0)
        return len(content), alternatives
    tokens = logprobs.get("tokens") or logprobs.get("token_logprobs")
    if isinstance(tokens, list) and tokens:
        top = logprobs.get("top_logprobs") or []
        alternatives = max((len(e) for e in top if isinstance(e, (dict, list))), default=0)
        return len(tokens), alternatives
    return 0, 0


@compat_check(
    "logprobs",
    parameters=("logprobs",),
    request="logprobs: true",
    supported_when="log-probabilities come back (OpenAI or Together shape)",
)
async def check_logprobs(ctx: _Context, name: str) -> CompatCheckResult:
    data, exchange = await _answer(name, ctx, ctx.body(PROMPT_SHORT, max_tokens=ROOM, logprobs=True))
    entries, _ = _logprob_entries(data["choices"][0].get("logprobs"))
    if entries:
        return _result(name, SUPPORTED, exchange, f"log probabilities for {entries} tokens")
    return _result(name, IGNORED, exchange, "no logprobs in the response")


@compat_check(
    "top_logprobs",
    parameters=("top_logprobs",),
    request="logprobs: true, top_logprobs: 3",
    supported_when="at least two alternatives per token",
)
async def check_top_logprobs(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_SHORT, max_tokens=ROOM, logprobs=True, top_logprobs=3)
    data, exchange = await _answer(name, ctx, body)
    entries, alternatives = _logprob_entries(data["choices"][0].get("logprobs"))
    if entries and alternatives >= 2:
        return _result(name, SUPPORTED, exchange, f"up to {alternatives} alternatives per token (asked 3)")
    return _result(name, IGNORED, exchange, "no top_logprobs alternatives in the response")


@compat_check(
    "logit_bias",
    parameters=("logit_bias",),
    request="a +100 bias on one token, 5 tokens long",
    supported_when="the answer is one token repeated",
)
async def check_logit_bias(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_SHORT, max_tokens=LIMIT_UNDER_TEST, logit_bias={BIAS_TOKEN_ID: 100})
    data, exchange = await _answer(name, ctx, body)
    content = _content(data)
    # The biased token may be whitespace (id 15 is a newline byte in some SentencePiece vocabularies), so only
    # an empty answer, or a non-repeating blank one, leaves nothing to check.
    if not content or (not content.strip() and not _periodic(content)):
        return _result(name, ACCEPTED, exchange, "accepted; no answer text to check the bias against")
    if _periodic(content):
        detail = f"a +100 bias on token {BIAS_TOKEN_ID} made the answer repeat one token: {content[:40]!r}"
        return _result(name, SUPPORTED, exchange, detail)
    detail = f"a +100 bias on token {BIAS_TOKEN_ID} did not make one token repeat: {content[:60]!r}"
    return _result(name, IGNORED, exchange, detail)


@compat_check(
    "n",
    parameters=("n",),
    request="n: 2",
    supported_when="two choices come back",
)
async def check_n(ctx: _Context, name: str) -> CompatCheckResult:
    data, exchange = await _answer(name, ctx, ctx.body(PROMPT_SHORT, n=2, temperature=0.7))
    count = len(data["choices"])
    if count >= 2:
        return _result(name, SUPPORTED, exchange, f"{count} choices for n=2")
    return _result(name, IGNORED, exchange, f"{count} choice for n=2")


@compat_check(
    "tools",
    parameters=("tools",),
    request="one get_weather tool, tool_choice: auto",
    supported_when="a get_weather call with JSON-object arguments",
)
async def check_tools(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_WEATHER, max_tokens=ROOM, tools=[WEATHER_TOOL], tool_choice="auto")
    data, exchange = await _answer(name, ctx, body)
    calls = _tool_calls(data)
    if not calls:
        return _result(name, ACCEPTED, exchange, "answered in text without a tool call")
    function = calls[0].get("function") or {}
    called = str(function.get("name") or "")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments = _parse_json_text(arguments)
    if called == "get_weather" and isinstance(arguments, dict):
        return _result(name, SUPPORTED, exchange, f"tool call get_weather({json.dumps(arguments)[:80]})")
    return _result(name, ACCEPTED, exchange, f"a tool call with unusable name/arguments: {called!r}")


@compat_check(
    "tool_choice_required",
    parameters=("tool_choice",),
    request="tool_choice: required with a prompt that needs no tool",
    supported_when="a tool call anyway",
)
async def check_tool_choice_required(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body("Say hello.", max_tokens=ROOM, tools=[WEATHER_TOOL], tool_choice="required")
    data, exchange = await _answer(name, ctx, body)
    if _tool_calls(data):
        return _result(name, SUPPORTED, exchange, "a tool call for a prompt that needs none")
    return _result(name, IGNORED, exchange, "answered in text although a tool call was required")


@compat_check(
    "parallel_tool_calls",
    parameters=("parallel_tool_calls",),
    request="parallel_tool_calls: false with a question about two cities",
    supported_when="exactly one call",
)
async def check_parallel_tool_calls(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(
        PROMPT_TWO_CITIES, max_tokens=ROOM, tools=[WEATHER_TOOL], tool_choice="auto", parallel_tool_calls=False
    )
    data, exchange = await _answer(name, ctx, body)
    count = len(_tool_calls(data))
    if count > 1:
        return _result(name, IGNORED, exchange, f"{count} tool calls although parallel_tool_calls=false")
    if count == 1:
        detail = "one tool call for a two-city request with parallel_tool_calls=false"
        return _result(name, SUPPORTED, exchange, detail)
    return _result(name, ACCEPTED, exchange, "accepted; the model made no tool call")


@compat_check(
    "strict_tools",
    parameters=("tools",),
    request="one get_weather tool with strict: true, tool_choice: auto",
    supported_when="a get_weather call whose arguments validate against the tool's parameters schema",
)
async def check_strict_tools(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_WEATHER, max_tokens=ROOM, tools=[STRICT_WEATHER_TOOL], tool_choice="auto")
    data, exchange = await _answer(name, ctx, body)
    calls = _tool_calls(data)
    if not calls:
        return _result(name, "accepted", exchange, "answered in text without a tool call")
    function = calls[0].get("function") or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments = _parse_json_text(arguments)
    if function.get("name") != "get_weather" or not isinstance(arguments, dict):
        return _result(name, "ignored", exchange, f"a tool call with unusable name/arguments: {function.get('name')!r}")
    try:
        jsonschema.validate(arguments, STRICT_WEATHER_TOOL["function"]["parameters"])
    except jsonschema.ValidationError as error:
        return _result(name, "ignored", exchange, f"arguments that break the strict schema: {error.message[:120]}")
    return _result(name, "supported", exchange, f"strict tool call get_weather({json.dumps(arguments)[:80]})")


def _cut_or_ignored(name: str, data: dict, exchange: Exchange, not_json: str) -> CompatCheckResult:
    """The outcome of an answer that is not the JSON asked for: no verdict when the token limit cut it."""
    if _finish(data) == "length":
        return _result(name, ACCEPTED, exchange, "accepted; the answer was cut at the token limit")
    return _result(name, IGNORED, exchange, f"{not_json}: {_content(data)[:60]!r}")


@compat_check(
    "json_object",
    parameters=("response_format",),
    request="response_format: json_object",
    supported_when="the answer parses as a JSON object",
)
async def check_json_object(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_JSON, max_tokens=ROOM, response_format={"type": "json_object"})
    data, exchange = await _answer(name, ctx, body)
    if isinstance(_parse_json_text(_content(data)), dict):
        return _result(name, SUPPORTED, exchange, "the answer is a JSON object")
    return _cut_or_ignored(name, data, exchange, "the answer is not a JSON object")


def _schema_outcome(name: str, data: dict, exchange: Exchange) -> CompatCheckResult:
    parsed = _parse_json_text(_content(data))
    if parsed is None:
        return _cut_or_ignored(name, data, exchange, "the answer is not JSON")
    try:
        jsonschema.validate(parsed, WEATHER_SCHEMA)
    except jsonschema.ValidationError as error:
        return _result(name, IGNORED, exchange, f"JSON that does not match the schema: {error.message[:120]}")
    return _result(name, SUPPORTED, exchange, "the answer validates against the schema")


@compat_check(
    "json_schema",
    parameters=("response_format",),
    request="a strict json_schema",
    supported_when="the answer validates against the schema",
)
async def check_json_schema(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_SCHEMA, max_tokens=ROOM, response_format=JSON_SCHEMA_FORMAT)
    data, exchange = await _answer(name, ctx, body)
    return _schema_outcome(name, data, exchange)


@compat_check(
    "tools_with_json_schema",
    parameters=("tools", "response_format"),
    request="tools and a json_schema in one request",
    supported_when="the answer validates against the schema",
)
async def check_tools_with_json_schema(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(
        PROMPT_SCHEMA, max_tokens=ROOM, tools=[WEATHER_TOOL], tool_choice="auto", response_format=JSON_SCHEMA_FORMAT
    )
    data, exchange = await _answer(name, ctx, body)
    if _tool_calls(data):
        detail = "accepted; a tool call was returned, so the schema could not be checked"
        return _result(name, ACCEPTED, exchange, detail)
    return _schema_outcome(name, data, exchange)


@compat_check(
    "streaming_tool_calls",
    parameters=("tools", "stream"),
    request="a stream with a tool",
    supported_when="the deltas assemble into a call with JSON arguments",
)
async def check_streaming_tool_calls(ctx: _Context, name: str) -> CompatCheckResult:
    body = ctx.body(PROMPT_WEATHER, max_tokens=ROOM, tools=[WEATHER_TOOL], tool_choice="auto", stream=True)
    analysis, exchange = await _streamed(name, ctx, body)
    if not analysis.tool_calls:
        return _result(name, ACCEPTED, exchange, "streamed a text answer without a tool call")
    call = next(iter(analysis.tool_calls.values()))
    arguments = _parse_json_text(call["arguments"])
    if call["name"] == "get_weather" and isinstance(arguments, dict):
        pieces = sum(1 for e in analysis.token_events if e.kind == "tool")
        return _result(name, SUPPORTED, exchange, f"tool call assembled from {pieces} streamed deltas")
    detail = f"streamed tool-call deltas do not assemble into a valid call: {call['arguments'][:60]!r}"
    return _result(name, IGNORED, exchange, detail)


@compat_check(
    "seed",
    parameters=("seed",),
    request="two samples at temperature 1.0 with the same seed",
    supported_when="identical answers",
)
async def check_seed(ctx: _Context, name: str) -> CompatCheckResult:
    answers = []
    for _ in range(2):
        data, exchange = await _answer(name, ctx, ctx.body(PROMPT_RANDOM, temperature=1.0, seed=1234))
        # Reasoning models may spend a short budget before any answer text; their reasoning is sampled too.
        message = _message(data)
        answers.append(_content(data) + str(message.get("reasoning") or message.get("reasoning_content") or ""))
    if answers[0] == answers[1] and answers[0]:
        return _result(name, SUPPORTED, exchange, "two sampled answers with the same seed were identical")
    detail = "accepted; the two answers with the same seed differed (determinism is best-effort on many servers)"
    return _result(name, ACCEPTED, exchange, detail)


@compat_check(
    "stop",
    parameters=("stop",),
    request='a request to count from 1 to 10, with stop: ["5"]',
    supported_when="no “5” and finish_reason stop",
)
async def check_stop(ctx: _Context, name: str) -> CompatCheckResult:
    data, exchange = await _answer(name, ctx, ctx.body(PROMPT_COUNT, max_tokens=ROOM, stop=["5"]))
    content = _content(data)
    if "5" in content:
        return _result(name, IGNORED, exchange, f"the stop sequence appears in the answer: {content[:60]!r}")
    if _finish(data) == "stop" and content.strip():
        return _result(name, SUPPORTED, exchange, f"stopped before the stop sequence: {content[:60]!r}")
    detail = f"accepted; the answer never reached the stop sequence: {content[:60]!r}"
    return _result(name, ACCEPTED, exchange, detail)


@compat_check(
    "max_completion_tokens",
    parameters=("max_completion_tokens",),
    request="max_completion_tokens: 5 without max_tokens",
    supported_when="at most 5 tokens, finish_reason length",
)
async def check_max_completion_tokens(ctx: _Context, name: str) -> CompatCheckResult:
    body = {
        "model": ctx.config.model,
        "messages": [{"role": "user", "content": PROMPT_LONG}],
        "max_completion_tokens": LIMIT_UNDER_TEST,
        "stream": True,
    }
    exchange = await ctx.post(name, body, stream=True, max_events=LIMIT_UNDER_TEST + 10)
    if exchange.event_cap_hit:
        detail = f"more than {LIMIT_UNDER_TEST + 10} chunks for a limit of {LIMIT_UNDER_TEST} tokens; stopped reading"
        return _result(name, IGNORED, exchange, detail)
    events, _ = decode_reads(exchange.reads)
    analysis = analyze_events(events, ctx.http.secrets())
    reported = (analysis.usage or {}).get("completion_tokens")
    if isinstance(reported, int):
        produced, source = reported, "usage"
    else:
        produced, source = len(analysis.token_events), "chunks"
    if produced > LIMIT_UNDER_TEST:
        return _result(name, IGNORED, exchange, f"{produced} tokens ({source}) for a limit of {LIMIT_UNDER_TEST}")
    if "length" in analysis.finish_reasons:
        detail = f"stopped at {produced} tokens ({source}) with finish_reason=length"
        return _result(name, SUPPORTED, exchange, detail)
    detail = f"{produced} tokens ({source}); the model finished on its own before the limit"
    return _result(name, ACCEPTED, exchange, detail)


async def run_compat_suite(
    config: EndpointConfig,
    *,
    checks: Sequence[str] = COMPAT_CHECKS,
    on_check_done: Callable[[CompatCheckResult], None] | None = None,
) -> CompatResult:
    """Run the named checks in order. Never raises for anything the server does."""
    unknown = [name for name in checks if name not in CHECKS]
    if unknown:
        raise ValueError(f"checks: unknown check names {unknown}; valid: {list(COMPAT_CHECKS)}")
    result = CompatResult()
    if config.key_missing():
        result.error_class = "auth_missing"
        result.error_message = f"environment variable {config.api_key_env} is not set; nothing was sent"
        return result
    async with ProbeHTTP(config, max_connections=1) as http:
        ctx = _Context(http, config)
        fatal: CompatCheckResult | None = None
        results: dict[str, CompatCheckResult] = {}
        # The length parameter is settled first, since every other check sends one; it runs even when not asked
        # for, but is then neither reported nor returned.
        for name in dict.fromkeys(["max_completion_tokens", *checks]):
            if fatal is not None:
                check = CompatCheckResult(name, ERROR, fatal.http_status, fatal.message, f"not run: {fatal.detail}")
            else:
                check = await _run_check(ctx, name)
                if check.outcome == ERROR and _fatal_class(check):
                    fatal = check
                if name == "max_completion_tokens" and check.outcome == SUPPORTED:
                    ctx.token_param = "max_completion_tokens"
            results[name] = check
            if name in checks and on_check_done is not None:
                _notify(on_check_done, check)
        result.checks = [results[name] for name in checks]
        result.token_param = ctx.token_param
        result.server_info = ctx.server_info
        if fatal is not None and all(c.outcome == ERROR for c in result.checks):
            result.error_class = fatal.detail.split(":", 1)[0]
            result.error_message = fatal.detail
    return result


def _fatal_class(check: CompatCheckResult) -> bool:
    return check.detail.split(":", 1)[0] in FATAL_ERRORS


async def _run_check(ctx: _Context, name: str) -> CompatCheckResult:
    try:
        check = await CHECKS[name].run(ctx, name)
    except _Decided as decided:
        check = decided.result
    except Exception as error:  # a bug in one check must not lose the others
        if _is_control_exception(error):
            raise
        # No traceback in the log: its frames' text is not redacted.
        detail = redact(f"client_error: {type(error).__name__}: {error}", ctx.http.secrets())
        logger.error("compat check %s failed inside the client: %s", name, detail)
        return CompatCheckResult(name, ERROR, None, "", detail)
    # Answers and provider messages can echo anything, so they pass the redaction too.
    check.message = redact(check.message, ctx.http.secrets())
    check.detail = redact(check.detail, ctx.http.secrets())
    return check
