"""Each hosted provider's documented quirks, reproduced by the simulator, and what both suites make of them.

Sources are the keys of the Sources section of docs/probes-measurement.md (G = Groq, C = Cerebras,
T = Together, F = Fireworks); "issue" means the expectation comes from issue #3 and is not in those sources.
"""

import pytest

from probe_client import run_compat_suite, run_speed_suite
from scoring.vocabulary import COMPAT_CHECKS
from tests.probe_client.conftest import config_for, run

SUPPORTED_EVERYWHERE = {name: "supported" for name in COMPAT_CHECKS}

EXPECTED = {
    "openai": ({}, "baseline"),
    "groq": (
        {
            "logprobs": ("rejected", "G1"),
            "top_logprobs": ("rejected", "G1"),
            "logit_bias": ("rejected", "G1"),
            "n": ("rejected", "G1,G6"),
            "tools_with_json_schema": ("rejected", "G12 (3rd-party)"),
        },
        "G",
    ),
    "cerebras": (
        {
            "logit_bias": ("rejected", "C4 (3rd-party)"),
            "n": ("rejected", "issue (UNCONFIRMED)"),
            "tool_choice_required": ("rejected", "C4 (3rd-party)"),
            "parallel_tool_calls": ("rejected", "C4 (3rd-party)"),
            "tools_with_json_schema": ("rejected", "issue, seed 002 (UNCONFIRMED), cf. C4"),
            "streaming_tool_calls": ("rejected", "C4 (3rd-party; gpt-oss-120b only, contradicted for qwen by C6)"),
        },
        "C",
    ),
    "together": ({"max_completion_tokens": ("ignored", "T4 (only max_tokens in the spec; assumption)")}, "T"),
    "fireworks": ({}, "F6: n=2 works"),
}

CASES = [
    pytest.param(
        profile,
        check,
        overrides.get(check, ("supported", "baseline"))[0],
        id=f"{profile}-{check}-[{overrides.get(check, ('', 'baseline'))[1]}]",
    )
    for profile, (overrides, _) in EXPECTED.items()
    for check in COMPAT_CHECKS
]


@pytest.fixture(scope="module")
def compat_results(simulator_factory):
    results = {}
    for profile in EXPECTED:
        sim = simulator_factory(profile)
        results[profile] = run(run_compat_suite(config_for(sim)))
    return results


@pytest.mark.parametrize("profile, check, outcome", CASES)
def test_compat_outcome(compat_results, profile, check, outcome):
    result = compat_results[profile].by_name()[check]
    assert result.outcome == outcome, (result.detail, result.message)
    if outcome == "rejected":
        assert result.http_status == 400
        assert result.message, "the provider's own message must be kept"


def test_every_check_runs_in_order(compat_results):
    for result in compat_results.values():
        assert [c.name for c in result.checks] == list(COMPAT_CHECKS)
        assert result.error_class == ""


def test_groq_rejection_keeps_its_message_and_json_schema_works(compat_results):
    logprobs = compat_results["groq"].by_name()["logprobs"]
    assert "logprobs" in logprobs.message and "unsupported" in logprobs.message
    # G5: json_schema is supported on gpt-oss models.
    assert compat_results["groq"].by_name()["json_schema"].outcome == "supported"


def test_cerebras_flat_error_envelope_is_parsed(compat_results):
    # C8: flat {message, type, param, code}; the message still reaches the matrix.
    logit_bias = compat_results["cerebras"].by_name()["logit_bias"]
    assert logit_bias.message.startswith("logit_bias:")


def test_together_logprobs_in_its_own_shape_count_as_supported(compat_results):
    # T4: {tokens, token_logprobs, top_logprobs} instead of OpenAI's logprobs.content.
    assert compat_results["together"].by_name()["logprobs"].outcome == "supported"
    assert compat_results["together"].by_name()["top_logprobs"].outcome == "supported"


def test_together_compat_falls_back_to_max_tokens(compat_results):
    assert compat_results["together"].token_param == "max_tokens"
    assert compat_results["openai"].token_param == "max_completion_tokens"


def speed(sim, **kwargs):
    return run(run_speed_suite(config_for(sim, **kwargs), input_tokens=100, max_tokens=20, requests=1, concurrency=1))


def test_groq_stream_timings_request_id_and_rate_limit_headers(simulator_factory):
    sim = simulator_factory("groq", schedule={"ttft_ms": 10, "itl_ms": 1})
    result = speed(sim)
    (request,) = result.requests
    assert request.ok
    # G7, G8: usage.*_time and x_groq.usage on the final chunk.
    assert set(request.server_timings["usage"]) == {"queue_time", "prompt_time", "completion_time", "total_time"}
    assert "x_groq_usage" in request.server_timings
    assert request.request_id  # G10: x-request-id
    assert result.server_info["rate_limit_headers"]["x-ratelimit-reset-tokens"] == "1.57s"
    assert result.server_info["done_sentinel"] is True
    assert request.ttfat_ms > request.ttft_ms  # G4: a reasoning phase in delta.reasoning comes first


def test_cerebras_stream_without_done_is_complete(simulator_factory):
    sim = simulator_factory("cerebras", schedule={"ttft_ms": 10, "itl_ms": 1})
    result = speed(sim)
    (request,) = result.requests
    # C6: no [DONE]; usage and time_info in the finish chunk; the stream is still complete.
    assert request.ok, request.error_message
    assert result.server_info["done_sentinel"] is False
    assert result.server_info["usage_placement"] == "finish_chunk"
    assert set(request.server_timings["time_info"]) >= {"queue_time", "prompt_time", "completion_time", "total_time"}
    assert request.output_tokens_source == "usage"


def test_fireworks_reasoning_content_and_perf_headers(simulator_factory):
    sim = simulator_factory("fireworks", schedule={"ttft_ms": 10, "itl_ms": 1})
    result = speed(sim)
    (request,) = result.requests
    assert request.ok
    # F4: reasoning arrives in delta.reasoning_content, and counts for TTFT but not for TTFAT.
    assert request.ttfat_ms > request.ttft_ms
    # F3: streaming responses carry some fireworks-* perf headers.
    assert "fireworks-server-time-to-first-token" in request.server_timings["headers"]
    assert result.include_usage_supported is True


def test_together_usage_arrives_without_asking(simulator_factory):
    sim = simulator_factory("together", reject_stream_options=True, schedule={"ttft_ms": 10, "itl_ms": 1, "tokens": 8})
    result = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=64, requests=1, concurrency=1))
    (request,) = result.requests
    # T5: usage on the finish chunk even without stream_options.
    assert request.ok and request.output_tokens_source == "usage"
    assert result.include_usage_supported is False


def test_unknown_model_is_a_404_not_a_rejected_parameter(simulator_factory):
    # T9: OpenAI model strings return 404 on Together.
    sim = simulator_factory("together")
    result = run(run_compat_suite(config_for(sim, model="gpt-4o"), checks=["n"]))
    check = result.by_name()["n"]
    assert check.outcome == "error" and check.http_status == 404
    speed_result = speed(sim, model="gpt-4o")
    assert speed_result.requests[0].error_class == "http_4xx"


@pytest.mark.parametrize("profile", ["openai", "groq", "cerebras", "together", "fireworks"])
def test_models_endpoint_lists_the_profile_ids(simulator_factory, profile):
    import httpx

    sim = simulator_factory(profile)
    data = httpx.get(sim.base_url + "/models", trust_env=False).json()
    # T7, T11: Together's /models returned a bare list rather than {"data": [...]}.
    entries = data if profile == "together" else data["data"]
    assert isinstance(entries, list)
    if profile != "openai":
        assert sim.model in {entry["id"] for entry in entries}
