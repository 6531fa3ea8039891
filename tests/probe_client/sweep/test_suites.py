"""Prefill/decode, prefix-cache and structured-output suites against simulator engines with known constants."""

import statistics

import pytest

from probe_client.sweep import SuiteError, linear_fit, run_prefill_decode, run_prefix_cache, run_structured_output
from probe_client.sweep.server_facts import parse_metrics, prefix_counters_from
from tests.probe_client.conftest import config_for, run

FIRST_TOKEN_MS = 15.0
PREFILL_MS_PER_TOKEN = 0.05  # 20,000 prompt tokens/s
DECODE_ITL_MS = 5.0  # 200 tokens/s per stream
SCHEDULE = {"ttft_ms": FIRST_TOKEN_MS, "itl_ms": DECODE_ITL_MS, "reasoning_tokens": 0}
# The simulator shares two cores with everything else: its own timers can run late. Measured figures are held
# to what the simulator really did (its recorded stamps) tightly, and that to the nominal schedule loosely.
MEASURED_VS_TRUTH_MS = 2.0
# A client not scheduled for longer than one inter-token gap reads two merged packets and stamps the first token
# with the second's arrival: a single sample may be one gap late on a loaded machine, never the typical one.
ONE_SAMPLE_SLACK_MS = DECODE_ITL_MS + MEASURED_VS_TRUTH_MS
TRUTH_VS_SCHEDULE_MS = 10.0


def truth_by_id(sim) -> dict:
    """Each request as the simulator served it, by the id it answered with."""
    return {request["response_id"]: request for request in sim.chat_requests}


def true_ttft_ms(sample, truth: dict) -> float:
    """From the client's write to the simulator's emission of the first token (one CLOCK_MONOTONIC)."""
    return (truth[sample.request_id]["timeline"]["first_token_ns"] - sample.sent_ns) / 1e6


def assert_ttft_matches_truth(samples, truth: dict) -> None:
    errors = [abs(sample.ttft_ms - true_ttft_ms(sample, truth)) for sample in samples]
    assert statistics.median(errors) <= MEASURED_VS_TRUTH_MS, errors
    assert max(errors) <= ONE_SAMPLE_SLACK_MS, errors


def nominal_ttft_ms(request: dict) -> float:
    return (request["timeline"]["first_token_ns"] - request["recv_ns"]) / 1e6


def test_prefill_and_decode_rates_are_recovered_from_the_fit(simulator_factory):
    sim = simulator_factory("openai", schedule=SCHEDULE, engine={"prefill_ms_per_token": PREFILL_MS_PER_TOKEN})
    result = run(run_prefill_decode(config_for(sim), input_lengths=(128, 512, 1024, 2048), requests_per_length=2,
                                    output_tokens=16))
    assert result.error_class == "" and result.errors == {}
    assert len(result.points) == 8
    served = truth_by_id(sim)
    assert_ttft_matches_truth(result.samples, served)
    truth = linear_fit([(r["timeline"]["prompt_tokens"], nominal_ttft_ms(r)) for r in sim.chat_requests[1:]])
    assert result.fit.slope == pytest.approx(truth.slope, rel=0.05)
    assert result.prefill_tps == pytest.approx(1000 / PREFILL_MS_PER_TOKEN, rel=0.15)
    assert result.request_overhead_ms == pytest.approx(truth.intercept, abs=MEASURED_VS_TRUTH_MS)
    assert result.request_overhead_ms == pytest.approx(FIRST_TOKEN_MS, abs=TRUTH_VS_SCHEDULE_MS)
    assert result.decode_tps == pytest.approx(1000 / DECODE_ITL_MS, rel=0.1)
    assert result.to_dict()["fit"]["points"] == 8


def test_prefix_cache_ratio_and_hit_rate_from_usage(simulator_factory):
    sim = simulator_factory(
        "openai", schedule=SCHEDULE, engine={"prefill_ms_per_token": PREFILL_MS_PER_TOKEN * 4, "prefix_cache": True}
    )
    result = run(run_prefix_cache(config_for(sim), prefix_tokens=1024, suffix_tokens=64, requests=4))
    assert result.error_class == ""
    shared = [r["timeline"] for r in sim.chat_requests if r["timeline"].get("cached_tokens")]
    unique_tokens = max(r["timeline"]["prompt_tokens"] for r in sim.chat_requests)
    # Every shared request after the first reuses the 1,024-token prefix (64 whole blocks of 16).
    assert [t["cached_tokens"] for t in shared] == [1024] * 4
    expected_shared = FIRST_TOKEN_MS + PREFILL_MS_PER_TOKEN * 4 * (shared[0]["prompt_tokens"] - 1024)
    expected_unique = FIRST_TOKEN_MS + PREFILL_MS_PER_TOKEN * 4 * unique_tokens
    served = truth_by_id(sim)
    assert_ttft_matches_truth(result.samples, served)
    requests = sim.chat_requests
    true_shared = statistics.median(nominal_ttft_ms(r) for r in requests[3::2])
    true_unique = statistics.median(nominal_ttft_ms(r) for r in requests[2::2])
    assert true_shared == pytest.approx(expected_shared, abs=TRUTH_VS_SCHEDULE_MS)
    assert true_unique == pytest.approx(expected_unique, abs=TRUTH_VS_SCHEDULE_MS)
    assert result.ttft_ratio == pytest.approx(true_shared / true_unique, rel=0.15)
    assert result.ttft_ratio < 0.3
    assert requests[1]["timeline"]["cached_tokens"] == 0  # the first shared request fills the cache
    assert result.hit_rate == pytest.approx(1024 / shared[0]["prompt_tokens"])
    assert result.hit_rate_source == "usage.prompt_tokens_details.cached_tokens"
    assert result.unique_hit_rate == pytest.approx(0.0)


def test_prefix_hit_rate_from_vllm_metrics_when_usage_is_silent(simulator_factory):
    sim = simulator_factory(
        "openai", schedule=SCHEDULE,
        engine={"prefill_ms_per_token": PREFILL_MS_PER_TOKEN, "prefix_cache": True, "report_cached_tokens": False},
    )
    result = run(run_prefix_cache(config_for(sim), prefix_tokens=512, suffix_tokens=64, requests=3))
    # Sent: a settling request, the cache-filling shared one, then (unique, shared) three times; the counters
    # are read around each of those three shared requests.
    shared = [r["timeline"] for r in sim.chat_requests[3::2]]
    queried = sum(t["prompt_tokens"] for t in shared)
    hits = sum(t["cached_tokens"] for t in shared)
    assert hits > 0
    assert result.hit_rate_source.startswith("/metrics")
    assert result.hit_rate == pytest.approx(hits / queried)
    assert result.ttft_ratio < 1


def test_metrics_text_is_parsed_over_label_sets():
    text = (
        "# HELP x\nvllm:prefix_cache_queries_total{model_name=\"a\"} 100.0\n"
        "vllm:prefix_cache_queries_total{model_name=\"b\"} 50\nvllm:prefix_cache_hits_total 30\nbad line\n"
    )
    assert prefix_counters_from(parse_metrics(text)) == {"queries": 150.0, "hits": 30.0}
    assert prefix_counters_from(parse_metrics("llamacpp:prompt_tokens_total 5")) is None


def test_structured_output_overhead_and_validity(simulator_factory):
    sim = simulator_factory("openai", schedule=SCHEDULE, engine={"grammar_ms": 30.0, "grammar_itl_ms": 5.0})
    result = run(run_structured_output(config_for(sim), requests=3))
    assert result.error_class == ""
    plain, schema, tools = (result.variants[v] for v in ("plain", "json_schema", "tools"))
    assert plain["valid"] == schema["valid"] == tools["valid"] == 3
    served = truth_by_id(sim)
    for variant, samples in result.samples.items():
        assert_ttft_matches_truth(samples, served)
        for sample in samples:
            body = served[sample.request_id]["body"]
            assert bool(body.get("tools")) == (variant == "tools")
            assert bool(body.get("response_format")) == (variant == "json_schema")
    assert plain["ttft_ms"]["p50"] == pytest.approx(FIRST_TOKEN_MS, abs=TRUTH_VS_SCHEDULE_MS)
    assert schema["ttft_ms"]["p50"] - plain["ttft_ms"]["p50"] == pytest.approx(30.0, abs=TRUTH_VS_SCHEDULE_MS)
    assert result.ttft_cost["json_schema"] > 2
    # Each constrained step takes 10 ms instead of 5: half the speed.
    assert result.speed_cost["json_schema"] == pytest.approx(0.5, rel=0.1)
    bodies = [r["body"] for r in sim.chat_requests]
    assert any(b.get("response_format", {}).get("type") == "json_schema" for b in bodies)
    assert any(b.get("tools") for b in bodies)


def test_structured_output_answers_that_break_the_schema_are_counted_invalid(simulator_factory):
    # Cut short by the token limit, the JSON cannot parse: the suite says so instead of counting it as valid.
    sim = simulator_factory("openai", schedule=SCHEDULE)
    result = run(run_structured_output(config_for(sim), requests=1, output_tokens=16, variants=("plain", "json_schema")))
    assert result.variants["json_schema"]["ok"] == 1
    assert result.variants["json_schema"]["valid"] == (0 if sim.chat_requests[-1]["timeline"]["token_chunks"] >= 16 else 1)


def test_a_rejected_response_format_is_reported_with_the_providers_message(simulator_factory):
    sim = simulator_factory("cerebras", schedule=SCHEDULE)
    result = run(run_structured_output(config_for(sim), requests=1, variants=("plain", "json_schema")))
    row = result.variants["json_schema"]
    assert row["ok"] == 0 and row["valid"] == 0
    assert "Streaming is not supported" in row["rejected_message"]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: run_prefill_decode(c, input_lengths=(128,)), "input_lengths"),
        (lambda c: run_prefill_decode(c, input_lengths=(128, 10)), "input_lengths[1]"),
        (lambda c: run_prefix_cache(c, requests=1), "requests"),
        (lambda c: run_structured_output(c, variants=("tools",)), "variants"),
    ],
)
def test_bad_suite_parameters_name_the_field(simulator_factory, call, field):
    sim = simulator_factory("openai", schedule=SCHEDULE)
    with pytest.raises(SuiteError) as error:
        run(call(config_for(sim)))
    assert str(error.value).startswith(field + ":")
