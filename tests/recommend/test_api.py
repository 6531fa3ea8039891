"""/api/v1/recommendations/, /api/v1/fit/ and /api/v1/break-even/: answers, schema enums, 400s naming fields."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.factories import CompatStatusFactory, HardwareSpecFactory, SourceFactory
from tests.factories import grow_catalog

pytestmark = pytest.mark.django_db

RECOMMENDATIONS = "/api/v1/recommendations/"
FIT = "/api/v1/fit/"
BREAK_EVEN = "/api/v1/break-even/"


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def test_recommendations_best_first_with_reasons_and_sources(api, loaded_catalog):
    response = api.get(RECOMMENDATIONS, {"hardware": "nvidia_hopper_node", "deployment": "production",
                                         "architecture": "moe", "hosted_ok": "true"})

    assert response.status_code == 200
    body = response.json()
    assert [item["tool"] for item in body["results"][:2]] == ["sglang", "vllm"]
    top = body["results"][0]
    assert top["score"] == 100 and top["reasons"][0]["rule"] == "recipe:nvidia_hopper_node:sglang"
    assert top["reasons"][0]["source"]["key"] == "seed-000-engine-guide"
    assert "ollama" not in {item["tool"] for item in body["results"]}
    assert body["not_recommended"][0]["tool"] == "ollama"
    assert isinstance(body["warnings"], list)


def test_recommendations_say_when_to_switch(api, loaded_catalog):
    body = api.get(RECOMMENDATIONS, {"hardware": "nvidia_hopper_node", "deployment": "production"}).json()

    assert body["results"][0]["tool"] == "vllm"
    switches = {item["tool"]: item["when"] for item in body["switch_when"]}
    assert switches["sglang"] in {"contexts run to 100K tokens and more", "prompts share long prefixes",
                                  "the model is a mixture of experts"}
    # The same engine with an orchestration layer on top is a switch worth naming; the bare pick is not.
    fleet = next(item for item in body["switch_when"] if item["tool"] == "vllm")
    assert fleet["companion_name"] == "NVIDIA Dynamo" and fleet["when"] == "you orchestrate a fleet of nodes"


def test_recommendations_warn_where_the_seeds_do(api, loaded_catalog):
    body = api.get(RECOMMENDATIONS, {"hardware": "rtx_multi", "interconnect": "pcie", "quantization": "fp8"}).json()

    assert {"weak-interconnect", "fp8-hardware"} <= {warning["code"] for warning in body["warnings"]}


def test_needs_accepts_commas_and_repeats_and_removes_rejecting_providers(api, loaded_catalog):
    CompatStatusFactory(target__tool__slug="cerebras", target__slug="cerebras-gpt-oss", check_name="n",
                        outcome="rejected")
    for query in ({"needs": "n,logprobs"}, {"needs": ["n", "logprobs"]}):
        body = api.get(RECOMMENDATIONS, {"hardware": "none", "hosted_ok": "1", **query}).json()
        assert "cerebras" not in {item["tool"] for item in body["results"]}
        assert "cerebras" in {item["tool"] for item in body["excluded"]}


def test_documented_gaps_remove_providers_and_the_rest_rank_on_one_publishers_reported_figures(api, loaded_catalog):
    body = api.get(RECOMMENDATIONS, {"hardware": "none", "needs": "logprobs,logit_bias"}).json()

    assert "groq" not in {item["tool"] for item in body["results"]}
    groq = next(item for item in body["excluded"] if item["tool"] == "groq")
    assert groq["reasons"][0]["rule"] == "documented-gap:logprobs"
    assert groq["reasons"][0]["source"]["key"] == "groq-docs-openai"
    # Nothing is measured on a freshly loaded catalog, but it holds sourced third-party figures: providers are
    # ranked on one publisher's figures (the one covering most of them), and every answer says so.
    assert body["provider_evidence"] == "reported"
    by_tool = {item["tool"]: item for item in body["results"]}
    speed = next(reason for reason in by_tool["cerebras"]["reasons"] if reason["rule"] == "reported:speed")
    assert speed["text"].startswith("Reported by Artificial Analysis on ")
    assert "Not measured by this site." in speed["text"]
    assert "No figure from the same publisher" in by_tool["together-ai"]["reasons"][0]["text"]


@pytest.mark.parametrize(("url", "query", "field"), [
    (RECOMMENDATIONS, {}, "hardware"),
    (RECOMMENDATIONS, {"hardware": "toaster"}, "hardware"),
    (RECOMMENDATIONS, {"hardware": "mac", "context_tokens": "0"}, "context_tokens"),
    (RECOMMENDATIONS, {"hardware": "mac", "concurrency": "many"}, "concurrency"),
    (RECOMMENDATIONS, {"hardware": "mac", "optimize_for": "vibes"}, "optimize_for"),
    (RECOMMENDATIONS, {"hardware": "mac", "hosted_ok": "perhaps"}, "hosted_ok"),
    (RECOMMENDATIONS, {"hardware": "mac", "needs": "logprobs,telepathy"}, "needs"),
    (RECOMMENDATIONS, {"hardware": "mac", "interconnect": "carrier-pigeon"}, "interconnect"),
    (FIT, {"model": "custom", "memory_gib": 24, "bandwidth_gb_s": 1000}, "params_b"),
    (FIT, {"model": "llama-3.1-8b"}, "memory_gib"),
    (FIT, {"model": "llama-3.1-8b", "hardware": "no-such-gpu"}, "hardware"),
    (FIT, {"model": "llama-3.1-8b", "memory_gib": 24, "bandwidth_gb_s": 1000, "weight_format": "q1"}, "weight_format"),
    (FIT, {"model": "llama-3.1-8b", "memory_gib": 24, "bandwidth_gb_s": 1000, "active_params_b": 50},
     "active_params_b"),
    (FIT, {"model": "llama-3.1-8b", "memory_gib": "NaN", "bandwidth_gb_s": 1000}, "memory_gib"),
    # A custom model without a weight format.
    (FIT, {"model": "custom", "params_b": 7, "layers": 32, "kv_heads": 8, "head_dim": 128, "memory_gib": 24,
           "bandwidth_gb_s": 1008}, "weight_format"),
    (BREAK_EVEN, {"output_tokens_per_day": 5}, "input_tokens_per_day"),
    (BREAK_EVEN, {"input_tokens_per_day": 5, "output_tokens_per_day": 5, "utilisation": 2}, "utilisation"),
    (BREAK_EVEN, {"input_tokens_per_day": 0, "output_tokens_per_day": 0}, "output_tokens_per_day"),
    (BREAK_EVEN, {"input_tokens_per_day": 5, "output_tokens_per_day": 5, "model": "unknown-model"}, "model"),
    (BREAK_EVEN, {"input_tokens_per_day": 5, "output_tokens_per_day": 5, "gpu_count": 0}, "gpu_count"),
    *[(BREAK_EVEN, {"input_tokens_per_day": 1, "output_tokens_per_day": 1, "own_gpu_usd_per_hour": value},
       "own_gpu_usd_per_hour") for value in ("0", "-1", "lots", "20000")],
])
def test_bad_input_is_a_400_naming_the_field(api, db, url, query, field):
    if url == BREAK_EVEN:
        grow_catalog(1)  # priced models to break even on

    response = api.get(url, query)

    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_recommendations_query_count_is_constant(api, db):
    grow_catalog(1)
    with CaptureQueriesContext(connection) as few:
        assert api.get(RECOMMENDATIONS, {"hardware": "rtx_single", "hosted_ok": "true"}).status_code == 200
    grow_catalog(10, start=1)
    with CaptureQueriesContext(connection) as many:
        assert api.get(RECOMMENDATIONS, {"hardware": "rtx_single", "hosted_ok": "true"}).status_code == 200

    assert len(few) == len(many)


def test_fit_with_a_preset_and_a_hardware_spec(api, db):
    HardwareSpecFactory(slug="apple-m3-ultra", name="Apple M3 Ultra", memory_gb=512, bandwidth_gb_s=819,
                        source=SourceFactory(key="apple-m3-ultra-newsroom"))

    response = api.get(FIT, {"model": "llama-3.1-70b", "weight_format": "q4_k_m", "hardware": "apple-m3-ultra",
                             "context_tokens": 32768})

    assert response.status_code == 200
    result = response.json()["result"]
    assert result["fits"] is True
    assert result["weights_gib"] == pytest.approx(70.6e9 * 4.84 / 8 / 2**30)
    assert result["decode_ceiling_tps"] == pytest.approx(819 / result["bytes_per_token_gb"])


def test_fit_when_it_does_not_fit_has_no_ceiling_and_says_what_would(api, db):
    response = api.get(FIT, {"model": "llama-3.1-70b", "weight_format": "q4_k_m", "memory_gib": 24,
                             "bandwidth_gb_s": 1008})

    assert response.status_code == 200
    result = response.json()["result"]
    assert result["fits"] is False and result["decode_ceiling_tps"] is None
    assert result["what_would_fit"]["devices_needed"] == 2


def test_fit_context_beyond_the_preset_maximum_is_a_400(api, db):
    response = api.get(FIT, {"model": "llama-2-7b", "context_tokens": 8192, "memory_gib": 8, "bandwidth_gb_s": 448})

    assert response.status_code == 400
    assert "4,096" in response.json()["error"]["fields"]["context_tokens"][0]


def test_break_even_defaults_to_the_most_priced_model(api, db):
    grow_catalog(2)

    response = api.get(BREAK_EVEN, {"input_tokens_per_day": 100_000_000, "output_tokens_per_day": 20_000_000})

    assert response.status_code == 200
    body = response.json()
    assert body["model"] == "gpt-oss-120b"
    assert body["assumptions"]["hours_per_month"] == 730
    assert body["providers"][0]["usd_per_day"] == pytest.approx(27.0)
    assert body["providers"][0]["source"] == "Comparison (seed 002)"
    assert body["gpus"][0]["monthly_usd"] == pytest.approx(3.99 * 730)


def test_schema_documents_allowed_values(api, db):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    parameters = {param["name"]: param for param in schema["paths"][RECOMMENDATIONS]["get"]["parameters"]}
    assert "rtx_single" in parameters["hardware"]["schema"]["enum"]
    assert parameters["hardware"]["required"] is True
    assert "tools_with_json_schema" in parameters["needs"]["schema"]["items"]["enum"]
    for name in ("fits_fast_memory", "bottleneck", "architecture", "deployment", "quantization", "interconnect",
                 "optimize_for"):
        assert parameters[name]["schema"]["enum"], name
    assert FIT in schema["paths"] and BREAK_EVEN in schema["paths"]


# --- issue 23: the API answers as the pages do ----------------------------------------------------------

def test_fit_gpt_oss_120b_defaults_to_mxfp4_and_fits_one_h100(api, loaded_catalog):
    body = api.get(FIT, {"model": "gpt-oss-120b", "hardware": "nvidia-h100-sxm"}).json()

    assert body["input"]["weight_format"] == "mxfp4" and body["input"]["native_format"] == "mxfp4"
    assert body["result"]["fits"] is True
    assert body["result"]["weights_gib"] == pytest.approx(60.8, abs=0.3)  # the model card's checkpoint


def test_fit_moe_on_a_24_gb_card_keeps_experts_in_system_memory(api, loaded_catalog):
    moe = api.get(FIT, {"model": "gpt-oss-120b", "hardware": "nvidia-rtx-4090",
                        "system_bandwidth_gb_s": 89.6}).json()["result"]["what_would_fit"]
    dense = api.get(FIT, {"model": "llama-3.3-70b", "weight_format": "q4_k_m",
                          "hardware": "nvidia-rtx-4090"}).json()["result"]["what_would_fit"]

    assert moe["expert_offload"]["n_cpu_moe"] == 26 and moe["expert_offload"]["decode_ceiling_tps"] > 0
    assert moe["offload"] is None and moe["devices_needed"] == 4
    assert dense["expert_offload"] is None and dense["offload"]["gpu_layers"] > 0


def test_fit_on_eight_h100_offers_no_llama_cpp_and_only_valid_device_counts(api, loaded_catalog):
    body = api.get(FIT, {"model": "llama-3.3-70b", "hardware": "nvidia-h100-sxm", "devices": 8,
                         "context_tokens": 131072, "concurrency": 64}).json()["result"]

    assert body["what_would_fit"]["offload"] is None and body["what_would_fit"]["expert_offload"] is None
    assert "engine guide" in body["what_would_fit"]["offload_ruled_out"]
    assert body["tensor_parallel_sizes"] == [1, 2, 4, 8, 16, 32, 64]
    three = api.get(FIT, {"model": "llama-3.3-70b", "hardware": "nvidia-h100-sxm", "devices": 3}).json()
    assert three["result"]["devices_valid_for_tensor_parallel"] is False


def test_break_even_finds_a_model_by_any_spelling_and_names_it(api, loaded_catalog):
    for spelling in ("qwen3-8-27b", "Qwen 3.8 27B", "qwen3.8-27b"):
        body = api.get(BREAK_EVEN, {"input_tokens_per_day": 1000, "output_tokens_per_day": 1000,
                                    "model": spelling}).json()
        assert (body["model"], body["model_name"]) == ("qwen3-8-27b", "Qwen 3.8 27B"), spelling
        assert {row["tool"] for row in body["providers"]} == {"groq", "cerebras"}


def test_break_even_compares_your_own_gpu_price(api, loaded_catalog):
    body = api.get(BREAK_EVEN, {"input_tokens_per_day": 1000, "output_tokens_per_day": 1000, "gpu_count": 2,
                                "own_gpu_usd_per_hour": 1.25}).json()

    own = [row for row in body["gpus"] if row["user_supplied"]]
    assert len(own) == 1 and own[0]["monthly_usd"] == pytest.approx(1.25 * 730 * 2)
    assert own[0]["source"] == "Your figure"
    assert not any(row["user_supplied"] for row in body["gpus"] if row is not own[0])


def test_fit_and_break_even_query_counts_are_constant(api, db):
    grow_catalog(1)
    HardwareSpecFactory(slug="nvidia-h100-sxm")
    queries = {FIT: {"model": "gpt-oss-120b", "hardware": "nvidia-h100-sxm"},
               BREAK_EVEN: {"input_tokens_per_day": 5, "output_tokens_per_day": 5, "own_gpu_usd_per_hour": 2}}

    def counts():
        result = []
        for url, params in queries.items():
            with CaptureQueriesContext(connection) as captured:
                assert api.get(url, params).status_code == 200
            result.append(len(captured))
        return result

    few = counts()
    grow_catalog(10, start=1)
    for index in range(8):
        HardwareSpecFactory(slug=f"gpu-{index}")
    assert counts() == few


def test_recommendations_cite_published_comparisons_for_the_model_and_refuse_an_unknown_one(api, loaded_catalog):
    body = api.get(RECOMMENDATIONS, {"hardware": "nvidia_hopper_node", "deployment": "production",
                                     "architecture": "moe"}).json()
    entry = next(entry for entry in body["published_evidence"] if entry["hardware_slug"] == "nvidia-h100-sxm")
    assert entry["model_slug"] == "gpt-oss-120b" and entry["same_load"]
    assert {"vllm", "sglang", "tensorrt-llm"} <= {figure["engine_slug"] for figure in entry["figures"]}
    assert entry["leader"] == "vLLM" and entry["disagreement"]
    assert all(figure["publisher"] == "GPUStack" and figure["url"].startswith("https://") for figure in entry["figures"])
    chosen = api.get(RECOMMENDATIONS, {"hardware": "amd_instinct", "model": "deepseek-r1"}).json()
    assert {entry["hardware_slug"] for entry in chosen["published_evidence"]} == {"amd-mi300x"}
    refused = api.get(RECOMMENDATIONS, {"hardware": "amd_instinct", "model": "no-such-model"})
    assert refused.status_code == 400 and "model" in refused.json()["error"]["fields"]


def test_an_answer_ranks_each_comparison_by_the_same_figure_as_the_evidence_matrix(api, loaded_catalog):
    from lab import evidence

    body = api.get(RECOMMENDATIONS, {"hardware": "nvidia_hopper_node", "deployment": "production"}).json()
    entry = next(entry for entry in body["published_evidence"] if entry["hardware_slug"] == "nvidia-h100-sxm")
    assert (entry["mode"], entry["load"], entry["figure"]) == ("burst", "1,000 prompts at once", "total_tps")
    assert [(figure["engine"], figure["figure"]) for figure in entry["figures"]] == [
        ("vLLM", 6095.4), ("TensorRT-LLM", 2139.5), ("SGLang", 1814.3)]
    assert [figure["output_tps_per_gpu"] for figure in entry["figures"]] == [2901.1, 1013.7, 865.8]
    for answer in body["published_evidence"]:
        row = next(row for row in evidence.evidence_matrix().compared
                   if (row.model_slug, row.hardware_slug, row.hardware_count, row.weight_format, row.workload)
                   == (answer["model_slug"], answer["hardware_slug"], answer["hardware_count"],
                       answer["weight_format"], answer["workload"]))
        assert answer["figure"] == row.rank_by
        assert [figure["engine"] for figure in answer["figures"]] == [ranked.series.engine for ranked in row.by_engine]
        assert [figure["figure"] for figure in answer["figures"]] == [round(ranked.value, 1) for ranked in row.by_engine]
