"""Hard constraints hold for every profile, and measurements move hosted providers when they should."""
from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring import profile as choices
from scoring.profile import Profile
from scoring.ranking import CatalogData, CompatInfo, PriceInfo, SpeedInfo, ToolInfo, recommend
from scoring.rules import HARDWARE_TARGETS

profiles = st.builds(
    Profile,
    hardware=st.sampled_from(choices.values_of(choices.HARDWARE_CHOICES)),
    fits_fast_memory=st.sampled_from(choices.values_of(choices.FITS_FAST_MEMORY_CHOICES)),
    bottleneck=st.sampled_from(choices.values_of(choices.BOTTLENECK_CHOICES)),
    context_tokens=st.integers(1, choices.MAX_CONTEXT_TOKENS),
    concurrency=st.integers(1, choices.MAX_CONCURRENCY),
    shared_prefixes=st.booleans(),
    architecture=st.sampled_from(choices.values_of(choices.ARCHITECTURE_CHOICES)),
    deployment=st.sampled_from(choices.values_of(choices.DEPLOYMENT_CHOICES)),
    quantization=st.sampled_from(choices.values_of(choices.QUANTIZATION_CHOICES)),
    interconnect=st.sampled_from(choices.values_of(choices.INTERCONNECT_CHOICES)),
    optimize_for=st.sampled_from(choices.values_of(choices.OPTIMIZE_FOR_CHOICES)),
    hosted_ok=st.booleans(),
    needs=st.lists(st.sampled_from(choices.values_of(choices.NEEDS_CHOICES)), unique=True, max_size=4).map(tuple),
)
RELAXED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@RELAXED
@given(profile=profiles)
def test_ollama_is_never_recommended(catalog, profile):
    result = recommend(profile, catalog)

    assert "ollama" not in {item.tool for item in result.results}
    listed = {item.tool: item for item in result.not_recommended}
    runs_here = bool(set(HARDWARE_TARGETS[profile.hardware]) & set(catalog.tools["ollama"].hardware))
    # The notice appears once, and only where Ollama would otherwise be a candidate.
    assert ("ollama" in listed) == runs_here
    if runs_here:
        # The source's warning travels with the listing (DESIGN.md: show the listing and the warning).
        assert any("do not use" in caveat.title.lower() for caveat in listed["ollama"].caveats)


@RELAXED
@given(profile=profiles)
def test_no_engine_is_ranked_for_hardware_it_cannot_run_on(catalog, profile):
    result = recommend(profile, catalog)

    for item in result.results:
        if item.kind == "provider":
            continue
        supported = catalog.tools[item.tool].hardware
        assert set(HARDWARE_TARGETS[profile.hardware]) & set(supported), (item.tool, profile.hardware)


@RELAXED
@given(profile=profiles)
def test_no_provider_when_on_premises_is_required(catalog, profile):
    result = recommend(dataclasses.replace(profile, hosted_ok=False), catalog)

    if profile.hardware == "none":
        # No hardware of one's own: hosted APIs are the only possible answer, and the answer says so.
        assert "hosted-implied" in {warning.code for warning in result.warnings}
        assert all(item.kind == "provider" for item in result.results)
    else:
        assert all(item.kind != "provider" for item in result.results)


@RELAXED
@given(profile=profiles)
def test_every_reason_names_its_rule_and_source(catalog, profile):
    result = recommend(profile, catalog)

    for item in result.results:
        assert item.reasons, item.tool
        for reason in item.reasons:
            assert reason.rule and reason.text
            if not reason.rule.startswith(("constraint:", "price:none")):
                assert reason.source_key, (item.tool, reason.rule)
    for warning in result.warnings:
        assert warning.citation.source_key.startswith("seed-")


@RELAXED
@given(profile=profiles)
def test_results_are_best_first_within_each_kind(catalog, profile):
    result = recommend(profile, catalog)
    for kind in {item.kind == "provider" for item in result.results}:
        scores = [item.score for item in result.results if (item.kind == "provider") == kind]
        assert scores == sorted(scores, reverse=True)


def test_tensorrt_llm_is_excluded_on_amd_with_the_reason(catalog):
    result = recommend(Profile(hardware="amd_instinct", deployment="production"), catalog)

    excluded = {item.tool: item for item in result.excluded}
    assert "tensorrt-llm" in excluded
    assert "no support for your hardware" in excluded["tensorrt-llm"].reasons[0].text


def test_engine_without_hardware_row_is_never_ranked():
    catalog = CatalogData(tools={
        "vllm": ToolInfo("vllm", "vLLM", "engine", {"nvidia-cuda": "native"}),
        "sglang": ToolInfo("sglang", "SGLang", "engine", {}),
    })

    result = recommend(Profile(hardware="amd_instinct"), catalog)

    assert result.results == []
    assert {item.tool for item in result.excluded} == {"vllm", "sglang"}


def providers_catalog(**extra) -> CatalogData:
    tools = {
        slug: ToolInfo(slug, name, "provider", {"nvidia-cuda": "provider"})
        for slug, name in (("alpha", "Alpha"), ("beta", "Beta"), ("gamma", "Gamma"))
    }
    prices = tuple(PriceInfo(slug, "gpt-oss-120b", 0.15, 0.60, "seed-002-engine-comparison") for slug in tools)
    return CatalogData(tools=tools, prices=prices, **extra)


def speed(tool: str, tps: float, ttft: float = 200.0) -> SpeedInfo:
    return SpeedInfo(tool=tool, target=f"{tool}-gpt-oss", model="gpt-oss-120b", workload="in-1k", concurrency=1,
                     samples_72h=24, output_speed_tps=tps, ttft_ms=ttft)


HOSTED = Profile(hardware="none", hosted_ok=True, optimize_for="latency")


def test_faster_median_at_the_same_price_ranks_higher():
    slow_alpha = recommend(HOSTED, providers_catalog(speeds=(speed("alpha", 150), speed("beta", 600))))
    fast_alpha = recommend(HOSTED, providers_catalog(speeds=(speed("alpha", 900), speed("beta", 600))))

    assert [item.tool for item in slow_alpha.results][:2] == ["beta", "alpha"]
    assert [item.tool for item in fast_alpha.results][:2] == ["alpha", "beta"]
    assert "slower median output (150 vs 600 tokens/s)" in slow_alpha.results[1].lost_because
    assert any(reason.rule == "measurement:output_speed_tps" and "600 tokens/s" in reason.text
               for reason in slow_alpha.results[0].reasons)


def test_lower_ttft_breaks_a_speed_tie_for_latency():
    result = recommend(HOSTED, providers_catalog(speeds=(speed("alpha", 500, ttft=900), speed("beta", 500, 150))))

    assert [item.tool for item in result.results][:2] == ["beta", "alpha"]


def test_unmeasured_provider_ranks_after_measured_ones_at_the_same_price():
    result = recommend(HOSTED, providers_catalog(speeds=(speed("beta", 100),)))

    assert result.results[0].tool == "beta"
    assert "no recent speed measurement" in result.results[1].lost_because


def test_cheaper_price_wins_when_optimizing_cost():
    catalog = providers_catalog()
    cheaper = dataclasses.replace(catalog, prices=(
        PriceInfo("alpha", "gpt-oss-120b", 0.35, 0.75, "seed-002-engine-comparison"),
        PriceInfo("beta", "gpt-oss-120b", 0.15, 0.60, "seed-002-engine-comparison"),
    ))

    result = recommend(dataclasses.replace(HOSTED, optimize_for="cost"), cheaper)

    assert result.results[0].tool == "beta"
    assert "higher blended price ($0.450 vs $0.262)" in result.results[1].lost_because


def test_a_rejected_required_feature_removes_the_provider():
    compat = (
        CompatInfo("alpha", "alpha-gpt-oss", "logprobs", "rejected", "logprobs is not supported"),
        CompatInfo("beta", "beta-gpt-oss", "logprobs", "supported"),
        CompatInfo("gamma", "gamma-gpt-oss", "logprobs", "ignored"),
    )
    needing = dataclasses.replace(HOSTED, needs=("logprobs",))

    result = recommend(needing, providers_catalog(compat=compat))

    assert [item.tool for item in result.results] == ["beta"]
    excluded = {item.tool: item.reasons[0].text for item in result.excluded}
    assert "logprobs was rejected" in excluded["alpha"] and "not supported" in excluded["alpha"]
    assert "logprobs was ignored" in excluded["gamma"]


def test_a_rejected_feature_nobody_needs_changes_nothing():
    compat = (CompatInfo("alpha", "alpha-gpt-oss", "logit_bias", "rejected"),)

    result = recommend(dataclasses.replace(HOSTED, needs=("logprobs",)), providers_catalog(compat=compat))

    assert {item.tool for item in result.results} == {"alpha", "beta", "gamma"}
    assert all(any(reason.rule == "compat:unmeasured" for reason in item.reasons) for item in result.results)


def test_engines_lead_providers_when_the_user_has_hardware(catalog):
    result = recommend(Profile(hardware="rtx_single", hosted_ok=True), catalog)

    kinds = [item.kind == "provider" for item in result.results]
    assert kinds == sorted(kinds)
    assert result.top.tool == "exllamav2"
    assert result.reference_model == "gpt-oss-120b"


def test_recipe_pick_that_cannot_run_hands_the_lead_to_the_next_entry(catalog):
    without_exllama = dataclasses.replace(catalog, tools={
        slug: (dataclasses.replace(tool, hardware={}) if slug == "exllamav2" else tool)
        for slug, tool in catalog.tools.items()
    })

    result = recommend(Profile(hardware="rtx_single"), without_exllama)

    assert result.top.tool == "llama-cpp"
    assert any("first choice for your answers, exllamav2, is not listed" in reason.text
               for reason in result.top.reasons)
    assert "exllamav2" in {item.tool for item in result.excluded}


def test_engine_measurement_is_shown_but_never_moves_the_ranking(catalog):
    measured = dataclasses.replace(catalog, speeds=(
        SpeedInfo("vllm", "vllm-local", "qwen3-8b", "in-1k", 1, 30, 2500.0, 40.0, hardware="1x H100 SXM"),
    ))

    plain = recommend(Profile(hardware="rtx_single"), catalog)
    with_speed = recommend(Profile(hardware="rtx_single"), measured)

    assert [item.tool for item in with_speed.results] == [item.tool for item in plain.results]
    vllm = next(item for item in with_speed.results if item.tool == "vllm")
    assert any(reason.rule == "measurement:engine-reference" and "on 1x H100 SXM" in reason.text
               for reason in vllm.reasons)


def test_workload_shape_warnings_follow_the_guide(catalog):
    decode = recommend(Profile(hardware="mac", bottleneck="decode"), catalog)
    prefill = recommend(Profile(hardware="mac", bottleneck="prefill", interconnect="thunderbolt"), catalog)

    assert "decode-bound" in {warning.code for warning in decode.warnings}
    assert "prefill-bound" in {warning.code for warning in prefill.warnings}
    assert any(reason.rule == "guide:mlx-thunderbolt" for reason in prefill.top.reasons)
