"""The answers a practitioner checks first, against the seeds: the scenarios that used to go wrong, seed 000's
hardware recipes and its final opinionated map, and the properties every answer keeps (ties are ties,
orchestration layers never stand alone, documented API gaps constrain like measured ones)."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given

from scoring.profile import Profile
from scoring.ranking import (
    EVIDENCE_DOCUMENTED,
    EVIDENCE_MEASURED,
    EVIDENCE_REPORTED,
    CatalogData,
    CompatInfo,
    PriceInfo,
    ReportedSpeed,
    SpeedInfo,
    ToolInfo,
    recommend,
)
from scoring.rules import LOCAL_ONLY_SERVERS, RECIPES
from tests.scoring.test_constraints import RELAXED, profiles
from tests.scoring.test_decision_rules import RECIPE_CASES


def engines(result) -> list[str]:
    return [item.tool for item in result.results if item.kind != "provider"]


def providers(result) -> list[str]:
    return [item.tool for item in result.results if item.kind == "provider"]


# --- the scenarios that went wrong ------------------------------------------------------------


def test_hosted_latency_leads_with_the_providers_sold_on_per_user_speed(catalog):
    # Seed 002: "specialised chips (Groq, Cerebras) sell very high speed per user". With nothing measured or
    # reported, that documented claim orders the answer; Fireworks and Together stay tied, not alphabetised.
    result = recommend(Profile(hardware="none", hosted_ok=True, optimize_for="latency"), catalog)

    assert result.provider_evidence == EVIDENCE_DOCUMENTED
    assert providers(result)[:2] == ["groq", "cerebras"]
    by_tool = {item.tool: item for item in result.results}
    assert by_tool["groq"].rank == 1 and not by_tool["groq"].tied
    assert by_tool["fireworks-ai"].rank == by_tool["together-ai"].rank
    assert by_tool["fireworks-ai"].tied and by_tool["together-ai"].tied
    assert all("alphabetic" not in item.lost_because for item in result.results)
    assert any(reason.rule == "documented:speed" and reason.source_key == "seed-002-engine-comparison"
               for reason in by_tool["groq"].reasons)


def test_documented_rejections_remove_a_provider_like_measured_ones(catalog):
    # Groq's own OpenAI-compatibility page: logprobs, top_logprobs and logit_bias are rejected with 400.
    result = recommend(Profile(hardware="none", hosted_ok=True, needs=("logprobs", "logit_bias")), catalog)

    assert "groq" not in providers(result)
    groq = next(item for item in result.excluded if item.tool == "groq")
    assert {reason.rule for reason in groq.reasons} == {"documented-gap:logprobs", "documented-gap:logit_bias"}
    assert all(reason.source_key == "groq-docs-openai" for reason in groq.reasons)
    assert "rejected" in groq.reasons[0].text


def test_a_measured_success_outranks_the_documentation(catalog):
    # A probe that saw logprobs work is newer evidence than the page that says it fails.
    measured = dataclasses.replace(catalog, compat=(CompatInfo("groq", "groq-gpt-oss", "logprobs", "supported"),))

    result = recommend(Profile(hardware="none", hosted_ok=True, needs=("logprobs",)), measured)

    assert "groq" in providers(result)


def test_no_hardware_of_ones_own_means_hosted_answers_even_unticked(catalog):
    result = recommend(Profile(hardware="none", hosted_ok=False), catalog)

    assert providers(result) and not engines(result)
    assert "hosted-implied" in {warning.code for warning in result.warnings}
    assert not any(reason.rule == "constraint:on-premises" for item in result.excluded for reason in item.reasons)


def test_mac_production_for_many_users_keeps_local_only_servers_off_the_top(catalog):
    # Seed 000: treating local engines as production servers is a common mistake; for high-concurrency public
    # serving, start from a real serving stack. MLX-LM's own server says it is not for production.
    result = recommend(Profile(hardware="mac", deployment="production", concurrency=200), catalog)

    assert result.top.tool not in LOCAL_ONLY_SERVERS
    for slug in ("mlx", "mlx-lm"):
        item = next(item for item in result.results if item.tool == slug)
        assert any(reason.rule == "guide:local-only-server" for reason in item.reasons)
        assert item.rank > result.top.rank
    assert "local-servers-not-for-production" in {warning.code for warning in result.warnings}


def test_mac_for_a_couple_of_users_still_answers_mlx(catalog):
    result = recommend(Profile(hardware="mac", deployment="production", concurrency=2), catalog)

    assert result.top.tool == "mlx"


def test_h100_dense_throughput_starts_with_vllm_and_evaluates_tensorrt_llm(catalog):
    # Seed 000: "Start with vLLM or SGLang. Evaluate TensorRT-LLM if NVIDIA-only and the performance justifies
    # the tuning."
    result = recommend(Profile(hardware="nvidia_hopper_node", deployment="production", architecture="dense",
                               optimize_for="throughput"), catalog)

    assert engines(result)[:3] == ["vllm", "sglang", "tensorrt-llm"]
    trt = next(item for item in result.results if item.tool == "tensorrt-llm")
    assert "Evaluate it for peak performance" in trt.reasons[0].text


@pytest.mark.parametrize("hardware", ["nvidia_blackwell", "nvidia_hopper_node"])
def test_fleet_orchestration_comes_with_an_engine(catalog, hardware):
    result = recommend(Profile(hardware=hardware, deployment="fleet"), catalog)

    assert result.top.kind != "orchestration"
    assert result.top.companion == "nvidia-dynamo"
    dynamo = result.results[1]
    assert dynamo.tool == "nvidia-dynamo"
    assert f"together with {result.top.name}" in dynamo.reasons[0].text


# --- evidence tiers ---------------------------------------------------------------------------


def _hosted_catalog(**extra) -> CatalogData:
    tools = {slug: ToolInfo(slug, slug.title(), "provider") for slug in ("alpha", "beta", "gamma")}
    prices = tuple(PriceInfo(slug, "gpt-oss-120b", 0.15, 0.60, "seed-002-engine-comparison") for slug in tools)
    return CatalogData(tools=tools, prices=prices, **extra)


def _reported(tool: str, tps: float, publisher: str = "Artificial Analysis") -> ReportedSpeed:
    return ReportedSpeed(tool=tool, model="gpt-oss-120b", publisher=publisher, url=f"https://example.org/{tool}",
                         observed_on="2026-11-20", output_speed_tps=tps, ttft_ms=None, workload="10k in")


HOSTED = Profile(hardware="none", hosted_ok=True, optimize_for="throughput")


def test_reported_figures_rank_when_nothing_is_measured_and_say_so():
    result = recommend(HOSTED, _hosted_catalog(reported=(_reported("alpha", 300), _reported("beta", 900))))

    assert result.provider_evidence == EVIDENCE_REPORTED
    assert providers(result) == ["beta", "alpha", "gamma"]
    reason = next(reason for reason in result.results[0].reasons if reason.rule == "reported:speed")
    assert reason.text.startswith("Reported by Artificial Analysis on 2026-11-20")
    assert "Not measured by this site" in reason.text
    assert reason.external.url == "https://example.org/beta"


def test_measured_figures_win_over_reported_ones_and_are_never_mixed():
    measured = SpeedInfo("alpha", "alpha-gpt-oss", "gpt-oss-120b", "in-1k", 1, 30, 200.0, 300.0)

    result = recommend(HOSTED, _hosted_catalog(speeds=(measured,), reported=(_reported("beta", 900),)))

    assert result.provider_evidence == EVIDENCE_MEASURED
    assert providers(result)[0] == "alpha"
    assert not any(reason.rule == "reported:speed" for item in result.results for reason in item.reasons)


def test_one_publisher_only_within_the_reported_tier():
    reported = (_reported("alpha", 300), _reported("beta", 400), _reported("gamma", 5000, publisher="Vendor blog"))

    result = recommend(HOSTED, _hosted_catalog(reported=reported))

    assert providers(result)[:2] == ["beta", "alpha"]
    gamma = next(item for item in result.results if item.tool == "gamma")
    assert not any(reason.rule == "reported:speed" for reason in gamma.reasons)


# --- properties -------------------------------------------------------------------------------


@RELAXED
@given(profile=profiles)
def test_no_answer_ranks_two_tools_by_name(catalog, profile):
    """Within a kind, a better rank always means a strictly higher score; equal scores share a rank."""
    result = recommend(profile, catalog)
    for is_provider in (True, False):
        items = [item for item in result.results if (item.kind == "provider") == is_provider]
        for first, second in zip(items, items[1:]):
            if abs(first.score - second.score) < 0.005:
                assert first.rank == second.rank and first.tied and second.tied, (first.tool, second.tool)
                assert "alphabetic" not in second.lost_because
            else:
                assert first.score > second.score and first.rank < second.rank, (first.tool, second.tool)


@RELAXED
@given(profile=profiles)
def test_an_orchestration_layer_is_never_the_answer_alone(catalog, profile):
    result = recommend(profile, catalog)
    if result.top is not None:
        assert result.top.kind != "orchestration"
    for item in result.results:
        if item.tool == "nvidia-dynamo" and item.score > 90:
            assert result.top.companion == "nvidia-dynamo"


@RELAXED
@given(profile=profiles)
def test_documented_failures_never_reach_the_results(catalog, profile):
    result = recommend(profile, catalog)
    for item in result.results:
        for need in profile.needs:
            documented = catalog.tools[item.tool].documented_checks.get(need)
            assert documented is None or documented.outcome in {"supported", "partial"}, (item.tool, need)


# --- seed 000: every hardware recipe and the final opinionated map ------------------------------


def test_every_seed_recipe_has_a_case():
    covered = {case.values[0].hardware for case in RECIPE_CASES}
    assert covered >= {recipe.hardware for recipe in RECIPES} - {"laptop_edge"}


@pytest.mark.parametrize(("profile", "expected"), RECIPE_CASES)
def test_seed_recipe(catalog, profile, expected):
    assert engines(recommend(profile, catalog))[: len(expected)] == expected


FINAL_MAP = [
    # Local AI user: llama.cpp for control, MLX on the Mac, ExLlamaV2/V3 for local CUDA performance.
    pytest.param(Profile(hardware="laptop_edge"), "llama-cpp", id="local user: llama.cpp for control"),
    pytest.param(Profile(hardware="mac"), "mlx", id="local user: MLX on the Mac"),
    pytest.param(Profile(hardware="rtx_single"), "exllamav2", id="local user: ExLlamaV2 for CUDA"),
    pytest.param(Profile(hardware="rtx_multi"), "exllamav3", id="local user: ExLlamaV3 for CUDA"),
    # Building a local agent: llama.cpp for portability, MLX on Apple silicon, vLLM to simulate production.
    pytest.param(Profile(hardware="rtx_single", optimize_for="portability"), "llama-cpp",
                 id="local agent: llama.cpp for portability"),
    pytest.param(Profile(hardware="rtx_single", deployment="production", concurrency=8), "vllm",
                 id="local agent: vLLM if simulating production serving locally"),
    # Serving an internal team: start with vLLM; SGLang for structured output, long context, MoE or routing.
    pytest.param(Profile(hardware="nvidia_hopper_node", deployment="production", concurrency=20), "vllm",
                 id="internal team: start with vLLM"),
    pytest.param(Profile(hardware="nvidia_hopper_node", deployment="production", needs=("json_schema",)), "sglang",
                 id="internal team: SGLang for structured output"),
    pytest.param(Profile(hardware="nvidia_hopper_node", deployment="production", context_tokens=131072), "sglang",
                 id="internal team: SGLang for long context"),
    pytest.param(Profile(hardware="nvidia_hopper_node", deployment="production", architecture="moe"), "sglang",
                 id="internal team: SGLang for MoE"),
    pytest.param(Profile(hardware="nvidia_hopper_node", deployment="production", shared_prefixes=True), "sglang",
                 id="internal team: SGLang for routing / prefix reuse"),
    # NVIDIA datacenter: TensorRT-LLM for peak, vLLM for flexibility, SGLang for complex serving, Dynamo for fleets.
    pytest.param(Profile(hardware="nvidia_blackwell", deployment="production"), "tensorrt-llm",
                 id="NVIDIA datacenter: TensorRT-LLM for maximum performance"),
    pytest.param(Profile(hardware="nvidia_blackwell", deployment="production", optimize_for="portability"), "vllm",
                 id="NVIDIA datacenter: vLLM for flexibility"),
    pytest.param(Profile(hardware="nvidia_blackwell", deployment="production", architecture="moe"), "sglang",
                 id="NVIDIA datacenter: SGLang for complex serving"),
    # Apple silicon: MLX for native development, llama.cpp for GGUF.
    pytest.param(Profile(hardware="mac", quantization="gguf"), "llama-cpp", id="Apple silicon: llama.cpp for GGUF"),
    # Edge, app, browser or native Windows: depending on the stack.
    pytest.param(Profile(hardware="browser_app"), "mlc-llm", id="app/browser: MLC LLM"),
    pytest.param(Profile(hardware="laptop_edge", quantization="onnx"), "onnxruntime-genai",
                 id="Windows native / ONNX: ONNX Runtime GenAI"),
    pytest.param(Profile(hardware="intel"), "openvino-genai", id="Intel client: OpenVINO"),
]


@pytest.mark.parametrize(("profile", "expected_top"), FINAL_MAP)
def test_final_map(catalog, profile, expected_top):
    assert recommend(profile, catalog).top.tool == expected_top


def test_final_map_customers_at_scale_evaluates_three_engines(catalog):
    # "Serving customers at scale: evaluate vLLM, SGLang and TensorRT-LLM."
    result = recommend(Profile(hardware="nvidia_hopper_node", deployment="production", concurrency=500,
                               optimize_for="throughput"), catalog)

    assert set(engines(result)[:3]) == {"vllm", "sglang", "tensorrt-llm"}


def test_final_map_routing_and_disaggregation_at_scale_is_sglang_with_dynamo(catalog):
    # "If routing and disaggregation matter, SGLang and Dynamo deserve attention."
    result = recommend(Profile(hardware="nvidia_hopper_node", deployment="fleet", shared_prefixes=True), catalog)

    assert result.top.tool == "sglang" and result.top.companion == "nvidia-dynamo"
