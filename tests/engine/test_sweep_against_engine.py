"""The sweep runner and the lab suites against the real llama.cpp engine (llama-cpp-python serving a tiny GGUF).

That server evaluates one request at a time, so a second concurrent stream waits for the first: its TTFT
includes a whole request. Prefill is checked against the engine's own perf log.
"""

import asyncio
import time

import pytest

from probe_client import EndpointConfig
from probe_client.sweep import (
    SLO,
    SweepPlan,
    Workload,
    fetch_server_facts,
    find_knee,
    run_prefill_decode,
    run_prefix_cache,
    run_sweep,
)
from lab.engine.server import parse_perf_reports

pytestmark = pytest.mark.engine

OUTPUT_TOKENS = 12


@pytest.fixture(scope="module")
def config(llama_server):
    return EndpointConfig(base_url=llama_server.base_url, model=llama_server.model, request_deadline_s=120.0)


def engine_reports(llama_server, log_offset: int, expected: int) -> list:
    """The engine's perf reports since ``log_offset``; a report may land a moment after the client is done."""
    deadline = time.monotonic() + 10
    while True:
        reports = parse_perf_reports(llama_server.log_path.read_text(errors="replace")[log_offset:])
        if len(reports) >= expected or time.monotonic() > deadline:
            return reports
        time.sleep(0.1)


def test_sweep_against_the_engine_shows_its_one_at_a_time_queue(config, llama_server):
    log_offset = len(llama_server.log_path.read_text(errors="replace"))
    workload = Workload.from_dict({"name": "short", "input": 100, "output": OUTPUT_TOKENS})
    plan = SweepPlan(mode="concurrency", levels=(1, 2), requests_per_level=4)
    result = asyncio.run(run_sweep(config, plan=plan, workload=workload))
    assert result.error_class == "" and result.stopped_reason == ""
    single, double = result.levels
    for level in (single, double):
        assert level.ok == level.requests == 4, level.errors
        assert level.output_tps > 0 and level.request_rate > 0
    # The engine generated exactly the tokens asked for, in every request (settling one included).
    reports = engine_reports(llama_server, log_offset, 9)
    assert [r.generated_tokens for r in reports[-8:]] == [OUTPUT_TOKENS] * 8
    # One stream at a time: at concurrency 2, half the requests wait for a whole other request before their
    # first token, so the slower TTFTs are at least the fast ones plus most of a request.
    waits = sorted(sample.ttft_ms for sample in double.samples)
    assert waits[-1] > single.ttft_ms["p50"] + 0.5 * (single.e2e_ms["p50"] - single.ttft_ms["p50"])
    assert double.ttft_ms["p95"] > single.ttft_ms["p95"]
    assert result.server_info.get("model") == config.model


def test_goodput_and_knee_follow_the_engines_queue(config):
    workload = Workload.from_dict({"name": "short", "input": 100, "output": OUTPUT_TOKENS})
    probe = asyncio.run(run_sweep(config, plan=SweepPlan(mode="concurrency", levels=(1,), requests_per_level=5),
                                  workload=workload)).levels[0]
    # Half a request above a lone stream's slower TTFTs, and half a request below the TTFT of a request that
    # waited for a whole other one: one stream's jitter on a busy machine stays on the right side of it.
    threshold = probe.ttft_ms["p95"] + 0.5 * probe.e2e_ms["p50"]
    slo = SLO(ttft_ms=threshold, tpot_ms=10_000, attainment=0.75)
    plan = SweepPlan(mode="concurrency", levels=(1, 2), requests_per_level=4, slo=slo)
    single, double = asyncio.run(run_sweep(config, plan=plan, workload=workload)).levels
    assert single.meets_slo and not double.meets_slo
    met = sum(1 for sample in double.samples if slo.met_by(sample))
    assert double.slo_attainment == met / 4 <= 0.5 + 0.25  # the second of each pair waited
    assert double.goodput_rps == pytest.approx(met / double.duration_s)
    knee = find_knee([single, double])
    assert (knee.level, knee.best) == (2, 1)


def test_prefix_ratio_agrees_with_what_the_engine_evaluated(config, llama_server):
    """llama-cpp-python keeps only the last prompt's KV: a shared prefix sent after a unique prompt is evaluated
    again in full, so the suite must find no cache benefit, and the engine's own report must agree."""
    log_offset = len(llama_server.log_path.read_text(errors="replace"))
    result = asyncio.run(run_prefix_cache(config, prefix_tokens=600, suffix_tokens=64, requests=3, output_tokens=4))
    assert result.error_class == "" and result.errors == {}
    reports = engine_reports(llama_server, log_offset, 8)[-6:]  # unique, shared, unique, shared, ...
    evaluated = [report.prompt_tokens for report in reports]
    assert min(evaluated) > 0.9 * max(evaluated)  # every prompt evaluated in full: nothing came from a cache
    engine_ratio = sum(r.prompt_eval_ms for r in reports[1::2]) / sum(r.prompt_eval_ms for r in reports[0::2])
    assert 0.7 < result.ttft_ratio < 1.4 and 0.7 < engine_ratio < 1.4
    assert result.hit_rate is None and result.hit_rate_source == ""  # this server reports no cached-token count


def test_prefill_fit_agrees_with_the_engines_own_prompt_rate(config, llama_server):
    log_offset = len(llama_server.log_path.read_text(errors="replace"))
    result = asyncio.run(
        run_prefill_decode(config, input_lengths=(64, 256, 512, 900), requests_per_length=2, output_tokens=4)
    )
    assert result.error_class == "" and result.errors == {}
    assert result.fit is not None and result.fit.r_squared > 0.8
    assert result.prefill_tps and result.decode_tps
    reports = engine_reports(llama_server, log_offset, 9)
    long_reports = [r for r in reports if r.prompt_tokens >= 200]
    engine_rate = sum(r.prompt_tokens for r in long_reports) / sum(r.prompt_eval_ms for r in long_reports) * 1000
    # The client's slope also carries tokenization and templating, which grow with the prompt too.
    assert engine_rate / 2 < result.prefill_tps < engine_rate * 2


def test_server_facts_name_the_served_model(config, llama_server):
    facts = asyncio.run(fetch_server_facts(config))
    assert "models" in facts["sources"]
    assert facts["model_id"] == llama_server.model
