"""The probe suites against a real llama.cpp engine, checked against what the engine answers to direct requests.

Nothing here states what llama-cpp-python supports: every expected outcome is derived from a direct httpx
request carrying the same parameters as the suite's own request, read with this file's own parsing, and
every speed figure is compared with the engine's own token counts (usage) and timings (its perf log).
"""
import asyncio
import json
import time

import httpx
import jsonschema
import pytest

from probe_client import EndpointConfig, compat as suite, run_compat_suite, run_speed_suite
from probe_client.workloads import build_messages
from lab.engine.server import parse_perf_reports
from scoring.vocabulary import COMPAT_CHECKS

pytestmark = pytest.mark.engine

NOT_ABOUT_THE_REQUEST = {401, 403, 404, 408, 429}
SPEED_INPUT_TOKENS = 100
SPEED_MAX_TOKENS = 24
SPEED_REQUESTS = 4


# --- direct access to the engine, parsed here and not by the probe client ----------------------------------


class Direct:
    def __init__(self, server, http: httpx.Client):
        self.server = server
        self.http = http

    @property
    def url(self) -> str:
        return f"{self.server.base_url}/chat/completions"

    def post(self, body: dict) -> httpx.Response:
        return self.http.post(self.url, json=body)

    def stream(self, body: dict, *, max_events: int | None = None) -> tuple[int, list[dict], bool]:
        """(status, parsed data events, whether [DONE] arrived); stops reading after max_events events."""
        events: list[dict] = []
        done = False
        with self.http.stream("POST", self.url, json={**body, "stream": True}) as response:
            if response.status_code != 200:
                response.read()
                return response.status_code, [{"error_body": response.text}], False
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    break
                events.append(json.loads(data))
                if max_events is not None and len(events) > max_events:
                    break
        return 200, events, done

    def piece(self, token_id: int) -> str:
        response = self.http.post(f"{self.server.root_url}/extras/detokenize", json={"tokens": [token_id]})
        return response.json()["text"]

    def log(self) -> str:
        return self.server.log_path.read_text(errors="replace")


@pytest.fixture(scope="module")
def direct(llama_server):
    with httpx.Client(timeout=120.0, trust_env=False) as http:
        yield Direct(llama_server, http)


@pytest.fixture(scope="module")
def config(llama_server):
    return EndpointConfig(base_url=llama_server.base_url, model=llama_server.model)


def _content_pieces(events: list[dict]) -> list[str]:
    return [
        choice["delta"]["content"]
        for event in events
        for choice in event.get("choices") or []
        if (choice.get("delta") or {}).get("content")
    ]


def _stream_usage(events: list[dict]) -> dict | None:
    usages = [event["usage"] for event in events if isinstance(event.get("usage"), dict)]
    return usages[-1] if usages else None


@pytest.fixture(scope="module")
def engine_limits_with(direct, llama_server):
    """Which length parameter the engine honours in a stream, observed directly."""
    def produced(param: str) -> int:
        status, events, _ = direct.stream(
            {"model": llama_server.model, "messages": [{"role": "user", "content": suite.PROMPT_LONG}],
             param: suite.LIMIT_UNDER_TEST},
            max_events=suite.LIMIT_UNDER_TEST + 10,
        )
        assert status == 200, events
        return len(_content_pieces(events))

    return {param: produced(param) <= suite.LIMIT_UNDER_TEST for param in ("max_completion_tokens", "max_tokens")}


# --- speed suite -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 2])
def test_speed_suite_agrees_with_the_engines_own_counts_and_timings(
    direct, config, llama_server, engine_limits_with, concurrency
):
    log_offset = len(direct.log())
    result = asyncio.run(
        run_speed_suite(
            config,
            input_tokens=SPEED_INPUT_TOKENS,
            max_tokens=SPEED_MAX_TOKENS,
            requests=SPEED_REQUESTS,
            concurrency=concurrency,
        )
    )
    settling_requests = 1 if concurrency > 1 else 0  # unrecorded, before a parallel run
    # The engine logs its perf report after the stream ends; a report may land a moment after the client is done.
    deadline = time.monotonic() + 10
    while True:
        engine_reports = parse_perf_reports(direct.log()[log_offset:])
        finished = [r for r in engine_reports if r.generated_tokens == SPEED_MAX_TOKENS]
        if len(finished) >= SPEED_REQUESTS + settling_requests or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    assert engine_limits_with["max_tokens"], "the engine must honour max_tokens for the speed suite to be fair"
    honours_completion_param = engine_limits_with["max_completion_tokens"]
    assert result.token_param == ("max_completion_tokens" if honours_completion_param else "max_tokens")
    # A server that ignores max_completion_tokens costs one retried request while the first request
    # settles the parameter alone; no measured request is lost to it.
    assert [r.error_class for r in result.requests if not r.ok] == []
    assert len(result.requests) == SPEED_REQUESTS
    succeeded = result.requests

    # What the engine answers to the same request shape, directly: exactly max_tokens tokens.
    same_shape = direct.post(
        {"model": llama_server.model, "messages": build_messages(SPEED_INPUT_TOKENS, "direct-check"),
         "max_tokens": SPEED_MAX_TOKENS, "temperature": 0.7}
    ).json()
    engine_tokens = same_shape["usage"]["completion_tokens"]
    assert engine_tokens == SPEED_MAX_TOKENS
    _, stream_events, _ = direct.stream(
        {"model": llama_server.model, "messages": build_messages(SPEED_INPUT_TOKENS, "direct-stream"),
         "max_tokens": SPEED_MAX_TOKENS, "stream_options": {"include_usage": True}}
    )
    stream_usage = _stream_usage(stream_events)

    # The engine's own perf report for every request it finished (the cut ones may report too).
    finished_reports = [r for r in engine_reports if r.generated_tokens == SPEED_MAX_TOKENS]
    assert len(finished_reports) == len(succeeded) + settling_requests
    finished_reports = finished_reports[settling_requests:]

    for request in succeeded:
        assert request.http_status == 200
        assert 0 < request.headers_ms <= request.ttft_ms < request.e2e_ms
        assert request.ttfat_ms == pytest.approx(request.ttft_ms)
        assert request.output_speed_tps > 0 and request.tpot_ms > 0
        # The model emits one printable token per step and the server sends one chunk per token.
        assert request.chunks == engine_tokens
        if stream_usage is None:
            assert request.output_tokens_source == "estimate"
            assert request.output_tokens >= request.chunks
        else:
            assert request.output_tokens_source == "usage"
            assert request.output_tokens == engine_tokens
        # The engine computes one token per evaluation (its perf report) and the server writes each chunk as
        # soon as the token exists: nothing holds the stream back, so it must not be flagged as buffered.
        assert not request.buffered
        assert len(request.gaps_ms) in (request.chunks - 1, request.chunks)

    if concurrency == 1:
        # One request at a time: the engine's reports come in the order of the requests.
        for request, report in zip(succeeded, finished_reports, strict=True):
            engine_busy_ms = report.prompt_eval_ms + report.eval_ms
            assert engine_busy_ms <= request.e2e_ms, (engine_busy_ms, request.e2e_ms)
            # The client cannot see tokens arrive faster than the engine computed them (generous slack for
            # clock granularity on a shared machine).
            engine_decode_tps = report.eval_runs / (report.eval_ms / 1000.0)
            measured_tps = (request.chunks - 1) / ((request.e2e_ms - request.ttft_ms) / 1000.0)
            assert measured_tps <= engine_decode_tps * 1.5, (measured_tps, engine_decode_tps)
    else:
        # The server serialises requests: with two in flight the second one waits, so E2E spreads wider than
        # the engine's own busy time, and their sum still covers it.
        assert sum(r.prompt_eval_ms + r.eval_ms for r in finished_reports) <= sum(r.e2e_ms for r in succeeded)
        summary = result.summary()
        assert summary["ok"] == len(succeeded)
        assert summary["e2e_ms"]["p50"] is not None


# --- compat suite ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compat_outcomes(config):
    result = asyncio.run(run_compat_suite(config))
    assert not result.error_class, result.error_message
    return result.by_name()


def _status_outcome(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 400 <= status < 500 and status not in NOT_ABOUT_THE_REQUEST:
        return "rejected"
    return "error"


class Verdict:
    """What the engine's direct answer shows, in the terms of the outcome definitions."""

    def __init__(self, outcome: str, evidence: str, answer: str = ""):
        self.outcome = outcome
        self.evidence = evidence
        self.answer = answer


def _body(model: str, token_param: str, prompt: str, *, max_tokens: int = suite.SMALL, temperature=0.0, **extra):
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        token_param: max_tokens,
        "temperature": temperature,
        **extra,
    }


def _answer(response: httpx.Response) -> tuple[str | None, dict]:
    """(outcome if the status decides it, the JSON body otherwise)."""
    decided = _status_outcome(response.status_code)
    return decided, ({} if decided else response.json())


def _message(data: dict) -> dict:
    return data["choices"][0].get("message") or {}


def _json_or_none(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _schema_verdict(data: dict) -> Verdict:
    content = _message(data).get("content") or ""
    parsed = _json_or_none(content)
    if parsed is None:
        if data["choices"][0].get("finish_reason") == "length":
            return Verdict("accepted", f"cut at the limit: {content[:60]!r}")
        return Verdict("ignored", f"not JSON: {content[:60]!r}")
    try:
        jsonschema.validate(parsed, suite.WEATHER_SCHEMA)
    except jsonschema.ValidationError as error:
        return Verdict("ignored", f"JSON not matching the schema: {error.message}")
    return Verdict("supported", f"valid against the schema: {content[:60]!r}")


def _assembled_tool_calls(events: list[dict]) -> list[dict]:
    calls: dict[int, dict] = {}
    for event in events:
        for choice in event.get("choices") or []:
            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                call = calls.setdefault(delta.get("index", 0), {"name": "", "arguments": ""})
                function = delta.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
    return list(calls.values())


def direct_verdict(check: str, direct: Direct, token_param: str) -> Verdict:
    model = direct.server.model

    if check == "max_completion_tokens":
        limit = suite.LIMIT_UNDER_TEST
        status, events, _ = direct.stream(
            {"model": model, "messages": [{"role": "user", "content": suite.PROMPT_LONG}],
             "max_completion_tokens": limit},
            max_events=limit + 10,
        )
        if _status_outcome(status):
            return Verdict(_status_outcome(status), str(events))
        pieces = len(_content_pieces(events))
        usage = _stream_usage(events) or {}
        produced = usage.get("completion_tokens", pieces)
        if produced > limit:
            return Verdict("ignored", f"{produced} tokens for a limit of {limit}")
        finishes = [c.get("finish_reason") for e in events for c in e.get("choices") or []]
        return Verdict("supported" if "length" in finishes else "accepted", f"{produced} tokens")

    if check == "stream_usage":
        status, events, _ = direct.stream(
            _body(model, token_param, suite.PROMPT_SHORT, stream_options={"include_usage": True})
        )
        if _status_outcome(status):
            return Verdict(_status_outcome(status), str(events))
        usage = _stream_usage(events)
        if usage and isinstance(usage.get("completion_tokens"), int):
            return Verdict("supported", f"usage {usage}")
        return Verdict("ignored", "no usage object in the stream")

    if check == "streaming_tool_calls":
        status, events, _ = direct.stream(
            _body(model, token_param, suite.PROMPT_WEATHER, max_tokens=suite.ROOM, tools=[suite.WEATHER_TOOL],
                  tool_choice="auto")
        )
        if _status_outcome(status):
            return Verdict(_status_outcome(status), str(events))
        calls = _assembled_tool_calls(events)
        if not calls:
            return Verdict("accepted", f"text only: {''.join(_content_pieces(events))[:60]!r}")
        arguments = _json_or_none(calls[0]["arguments"])
        if calls[0]["name"] == "get_weather" and isinstance(arguments, dict):
            return Verdict("supported", f"tool call {calls[0]}")
        return Verdict("ignored", f"unusable streamed tool call {calls[0]}")

    if check == "seed":
        answers = []
        for _ in range(2):
            decided, data = _answer(
                direct.post(_body(model, token_param, suite.PROMPT_RANDOM, temperature=1.0, seed=1234))
            )
            if decided:
                return Verdict(decided, "seeded request failed")
            answers.append(_message(data).get("content") or "")
        same = answers[0] == answers[1] and bool(answers[0])
        return Verdict("supported" if same else "accepted", f"answers {answers}")

    requests = {
        "logprobs": _body(model, token_param, suite.PROMPT_SHORT, logprobs=True),
        "top_logprobs": _body(model, token_param, suite.PROMPT_SHORT, logprobs=True, top_logprobs=3),
        "logit_bias": _body(model, token_param, suite.PROMPT_SHORT, max_tokens=suite.LIMIT_UNDER_TEST,
                            logit_bias={suite.BIAS_TOKEN_ID: 100}),
        "n": _body(model, token_param, suite.PROMPT_SHORT, n=2, temperature=0.7),
        "tools": _body(model, token_param, suite.PROMPT_WEATHER, max_tokens=suite.ROOM, tools=[suite.WEATHER_TOOL],
                       tool_choice="auto"),
        "strict_tools": _body(model, token_param, suite.PROMPT_WEATHER, max_tokens=suite.ROOM,
                              tools=[suite.STRICT_WEATHER_TOOL], tool_choice="auto"),
        "tool_choice_required": _body(model, token_param, "Say hello.", max_tokens=suite.ROOM,
                                      tools=[suite.WEATHER_TOOL], tool_choice="required"),
        "parallel_tool_calls": _body(model, token_param, suite.PROMPT_TWO_CITIES, max_tokens=suite.ROOM,
                                     tools=[suite.WEATHER_TOOL], tool_choice="auto", parallel_tool_calls=False),
        "json_object": _body(model, token_param, suite.PROMPT_JSON, max_tokens=suite.ROOM,
                             response_format={"type": "json_object"}),
        "json_schema": _body(model, token_param, suite.PROMPT_SCHEMA, max_tokens=suite.ROOM,
                             response_format=suite.JSON_SCHEMA_FORMAT),
        "tools_with_json_schema": _body(model, token_param, suite.PROMPT_SCHEMA, max_tokens=suite.ROOM,
                                        tools=[suite.WEATHER_TOOL], tool_choice="auto",
                                        response_format=suite.JSON_SCHEMA_FORMAT),
        "stop": _body(model, token_param, suite.PROMPT_COUNT, max_tokens=40, stop=["5"]),
    }
    response = direct.post(requests[check])
    decided, data = _answer(response)
    if decided:
        return Verdict(decided, f"HTTP {response.status_code}: {response.text[:200]}")
    choice = data["choices"][0]
    message = _message(data)
    content = message.get("content") or ""
    tool_calls = message.get("tool_calls") or []

    if check in ("logprobs", "top_logprobs"):
        entries = ((choice.get("logprobs") or {}).get("content")) or []
        wanted = 1 if check == "logprobs" else 2
        alternatives = max((len(e.get("top_logprobs") or []) for e in entries), default=0)
        present = bool(entries) and (check == "logprobs" or alternatives >= wanted)
        return Verdict("supported" if present else "ignored", f"{len(entries)} entries, {alternatives} alternatives")
    if check == "logit_bias":
        biased = direct.piece(int(suite.BIAS_TOKEN_ID))
        produced = data["usage"]["completion_tokens"]
        if biased and content == biased * produced:
            return Verdict(
                "supported", f"the answer is token {suite.BIAS_TOKEN_ID} ({biased!r}) {produced} times", content
            )
        return Verdict("ignored", f"the answer is not token {suite.BIAS_TOKEN_ID} repeated: {content!r}")
    if check == "n":
        return Verdict("supported" if len(data["choices"]) >= 2 else "ignored", f"{len(data['choices'])} choices")
    if check == "tools":
        if tool_calls and tool_calls[0]["function"]["name"] == "get_weather" and isinstance(
            _json_or_none(tool_calls[0]["function"]["arguments"]), dict
        ):
            return Verdict("supported", f"tool call {tool_calls[0]}")
        return Verdict("accepted", f"no usable tool call: {content[:60]!r}")
    if check == "strict_tools":
        if not tool_calls:
            return Verdict("accepted", f"no tool call: {content[:60]!r}")
        arguments = _json_or_none(tool_calls[0]["function"]["arguments"])
        if tool_calls[0]["function"]["name"] != "get_weather" or not isinstance(arguments, dict):
            return Verdict("ignored", f"unusable tool call {tool_calls[0]}")
        try:
            jsonschema.validate(arguments, suite.STRICT_WEATHER_TOOL["function"]["parameters"])
        except jsonschema.ValidationError as error:
            return Verdict("ignored", f"arguments break the strict schema: {error.message}")
        return Verdict("supported", f"strict tool call {tool_calls[0]}")
    if check == "tool_choice_required":
        return Verdict("supported" if tool_calls else "ignored", f"{len(tool_calls)} tool calls, text {content[:40]!r}")
    if check == "parallel_tool_calls":
        outcome = "ignored" if len(tool_calls) > 1 else "supported" if tool_calls else "accepted"
        return Verdict(outcome, f"{len(tool_calls)} tool calls")
    if check == "json_object":
        if isinstance(_json_or_none(content), dict):
            return Verdict("supported", f"JSON object {content[:60]!r}")
        if choice.get("finish_reason") == "length":
            return Verdict("accepted", "cut at the limit")
        return Verdict("ignored", f"not a JSON object: {content[:60]!r}")
    if check == "json_schema":
        return _schema_verdict(data)
    if check == "tools_with_json_schema":
        return Verdict("accepted", "a tool call came back") if tool_calls else _schema_verdict(data)
    if check == "stop":
        if "5" in content:
            return Verdict("ignored", f"the stop sequence is in the answer: {content!r}")
        if choice.get("finish_reason") == "stop" and content.strip():
            return Verdict("supported", f"stopped before it: {content!r}")
        return Verdict("accepted", f"never reached the stop sequence: {content!r}")
    raise AssertionError(f"no direct check for {check}")


def test_the_suite_runs_every_documented_check(compat_outcomes):
    assert tuple(compat_outcomes) == COMPAT_CHECKS


@pytest.mark.parametrize("check", COMPAT_CHECKS)
def test_compat_outcome_agrees_with_a_direct_request(compat_outcomes, direct, engine_limits_with, check):
    token_param = "max_completion_tokens" if engine_limits_with["max_completion_tokens"] else "max_tokens"
    verdict = direct_verdict(check, direct, token_param)
    reported = compat_outcomes[check]
    assert reported.outcome == verdict.outcome, (
        f"{check}: the suite says {reported.outcome!r} ({reported.detail}); "
        f"the engine's direct answer shows {verdict.outcome!r} ({verdict.evidence})"
    )
    if verdict.outcome in ("rejected", "error"):
        assert reported.http_status is not None and reported.http_status >= 400
        assert reported.message, "the engine's own error message is kept"
