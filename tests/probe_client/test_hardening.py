"""What a broken or hostile provider sends must come out of the client storable, bounded and secret-free."""

import datetime as dt
import json

import pytest

from probe_client import EndpointConfig, RequestResult
from probe_client.config import api_key_env_error
from probe_client.secrets import redact
from probe_client.stream_analysis import MAX_TIMING_ENTRIES, estimate_tokens, measure
from tests.probe_client.test_stream_analysis import chunk, exchange_of, sse


def _stream_with(finish_extra: dict, usage: dict | None = None):
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], **finish_extra}
    reads = [(10, chunk({"content": "Hello"})), (20, chunk({"content": " world"})), (30, sse(finish))]
    if usage is not None:
        reads.append((40, chunk(usage=usage, choices=False)))
    return exchange_of(reads)


def test_server_timings_keep_only_finite_numbers_and_short_text():
    # json.loads turns NaN/Infinity literals into floats and "\u0000" into a NUL character; JSONB refuses all three.
    raw = (
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        '"time_info":{"total_time":0.25,"queue_time":NaN,"prompt_time":Infinity,"completion_time":-Infinity,'
        '"label":"fine","poison":"a\\u0000b","surrogate":"\\ud800","flag":true,"nested":{"x":1},"list":[1,2],'
        '"long":"' + "x" * 5000 + '","a\\u0000key":1,"tokens":12},'
        '"timings":{"predicted_ms":9.5,"predicted_per_second":NaN}}'
    )
    ex = exchange_of([(10, chunk({"content": "Hi"})), (20, sse(raw))])
    result, _ = measure(ex, index=0, read_timeout_s=5)

    assert result.ok
    assert result.server_timings["time_info"] == {"total_time": 0.25, "label": "fine", "tokens": 12}
    assert result.server_timings["timings"] == {"predicted_ms": 9.5}
    json.dumps(result.server_timings, allow_nan=False)  # raises on NaN/Infinity
    assert "\x00" not in json.dumps(result.server_timings, ensure_ascii=False)


def test_a_huge_timing_object_is_cut_to_a_bounded_size():
    # Just under the decoder's 1 MiB line cap: the largest object that reaches the metric code.
    huge = {f"stage_{i}_time": float(i) for i in range(35_000)}
    ex = _stream_with({"metrics": huge})
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.ok, result.error_message
    ex = _stream_with({"perf_metrics": {"big": "y" * 900_000, "ttft": 0.1}})
    result.server_timings.update(measure(ex, index=0, read_timeout_s=5)[0].server_timings)
    assert len(result.server_timings["metrics"]) == MAX_TIMING_ENTRIES
    assert result.server_timings["perf_metrics"] == {"ttft": 0.1}
    assert len(json.dumps(result.server_timings)) < 10_000


def test_groq_usage_timings_drop_non_finite_values():
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "queue_time": float("nan"), "total_time": 0.1,
             "prompt_time": True}
    ex = _stream_with({"x_groq": {"usage": usage}})
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.server_timings["x_groq_usage"] == {"total_time": 0.1}


@pytest.mark.parametrize("bad", [True, False, -1, 2**31, 2**40, 2.0, "12", None])
def test_an_untrustworthy_completion_count_means_an_estimate(bad):
    ex = _stream_with({}, usage={"prompt_tokens": 7, "completion_tokens": bad})
    result, _ = measure(ex, index=0, read_timeout_s=5, input_tokens_requested=100)
    assert result.output_tokens_source == "estimate"
    assert result.output_tokens == estimate_tokens(len("Hello")) + estimate_tokens(len(" world"))
    assert result.input_tokens == 7


@pytest.mark.parametrize("bad", [True, -3, 2**31, 1.5, "7"])
def test_an_untrustworthy_prompt_count_falls_back_to_the_requested_size(bad):
    ex = _stream_with({}, usage={"prompt_tokens": bad, "completion_tokens": 2})
    result, _ = measure(ex, index=0, read_timeout_s=5, input_tokens_requested=100)
    assert result.input_tokens == 100
    assert (result.output_tokens, result.output_tokens_source) == (2, "usage")


def test_the_largest_storable_count_is_accepted():
    ex = _stream_with({}, usage={"prompt_tokens": 0, "completion_tokens": 2**31 - 1})
    result, _ = measure(ex, index=0, read_timeout_s=5, input_tokens_requested=100)
    assert (result.output_tokens, result.output_tokens_source, result.input_tokens) == (2**31 - 1, "usage", 0)


def test_raw_stamps_belong_to_one_result_and_are_never_serialized():
    first = RequestResult(index=0, started_at=dt.datetime.now(dt.UTC))
    second = RequestResult(index=1, started_at=dt.datetime.now(dt.UTC))
    first.raw_stamps["written_ns"] = 123
    assert second.raw_stamps == {}
    assert RequestResult(index=2, started_at=first.started_at).raw_stamps == {}
    assert "raw_stamps" not in first.as_fields()
    assert "raw_stamps" not in json.dumps(first.to_json(), default=str)
    assert "raw_stamps" not in repr(first)
    twin = RequestResult(index=0, started_at=first.started_at)
    assert twin == first, "the stamps are not part of a result's identity"


def test_measured_results_do_not_share_stamps():
    one, _ = measure(_stream_with({}), index=0, read_timeout_s=5)
    two, _ = measure(_stream_with({}), index=1, read_timeout_s=5)
    assert one.raw_stamps is not two.raw_stamps
    one.raw_stamps["start_ns"] = -1
    assert two.raw_stamps["start_ns"] == 0


KEY = "sk-proj-Abcdefgh1234567890ijklmnopQRSTuvwx9876"


@pytest.mark.parametrize(
    "echoed",
    [
        f"Incorrect API key provided: {KEY[:12]}...{KEY[-10:]}",
        f"Incorrect API key provided: {KEY[:8]}************{KEY[-8:]}",
        f"key {KEY[:20]}",
        f"key ending {KEY[-15:]}.",
    ],
)
def test_redact_removes_echoed_starts_and_ends_of_the_key(echoed):
    message = redact(echoed + " See https://platform.example.com/api-keys for help.", [KEY])
    for size in range(8, len(KEY)):
        assert KEY[:size] not in message and KEY[-size:] not in message
    assert "[REDACTED]" in message
    assert "See https://platform.example.com/api-keys for help." in message


def test_redact_leaves_unrelated_text_and_short_fragments():
    text = "Invalid request: sk-proj is not a model; the key ends in 0x9876 and starts sk-proj; model gpt-oss-120b"
    assert redact(text, [KEY]) == text


def test_redact_of_the_whole_key_still_works():
    assert redact(f"a {KEY} b", [KEY]) == "a [REDACTED] b"


@pytest.mark.parametrize("name", ["GROQ_API_KEY", "HF_TOKEN", "ATLAS_TEST_API_KEY", "VLLM2_API_KEY", "A_TOKEN"])
def test_key_variable_names_that_are_allowed(name):
    assert api_key_env_error(name) is None
    assert EndpointConfig(base_url="https://api.example.com/v1", model="m", api_key_env=name).api_key_env == name


@pytest.mark.parametrize(
    "name",
    [
        "DJANGO_SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "REDIS_URL", "CELERY_BROKER_URL",
        "POSTGRES_PASSWORD", "DJANGO_API_KEY", "AWS_API_KEY", "CELERY_TOKEN", "DATABASE_API_KEY", "REDIS_TOKEN",
        "POSTGRESQL_API_KEY", "GROQ_KEY", "GROQ_API_KEYS", "HOME", "PATH", "groq_api_key", "_API_KEY",
        "GROQ_API_KEY\n", "sk-live-123_API_KEY", "",
    ],
)
def test_key_variable_names_that_are_refused_name_the_field_and_the_rule(name):
    problem = api_key_env_error(name)
    assert problem and problem.startswith("api_key_env:")
    assert "_API_KEY or _TOKEN" in problem and "DJANGO_" in problem and "^[A-Z][A-Z0-9_]*$" in problem
    with pytest.raises(ValueError, match="api_key_env: .*_API_KEY or _TOKEN"):
        EndpointConfig(base_url="https://api.example.com/v1", model="m", api_key_env=name)
