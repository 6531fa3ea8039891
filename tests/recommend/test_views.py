"""The recommendation pages render, explain themselves, reject bad input with messages, and keep queries flat."""
from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import Tool

from tests.factories import CompatStatusFactory, HardwareSpecFactory, MeasurementSummaryFactory, SourceFactory, ToolFactory
from tests.factories import UseCaseFactory, UseCaseRecommendationFactory, grow_catalog

pytestmark = pytest.mark.django_db


def html(response) -> str:
    return response.content.decode()


def test_use_case_list_groups_the_three_seed_lists(client, loaded_catalog):
    response = client.get(reverse("recommend:use_case_list"))

    page = html(response)
    assert response.status_code == 200
    assert page.index("Where this step fits") < page.index("Opinionated map") < page.index("Hardware recipe")
    assert "Chat with your documents" in page and "8x H100 / H200 node" in page
    assert "Also listed by a source, not recommended here: Ollama" in page
    assert 'href="/static/css/recommend.css"' in page


def test_private_on_device_page_shows_ollama_listing_with_warning(client, loaded_catalog):
    response = client.get(reverse("recommend:use_case_detail", args=["private-on-device-ai"]))

    page = html(response)
    assert response.status_code == 200
    recommended = page[page.index("Where to start, and when to choose another"):page.index("Listed by a source, but not recommended")]
    assert recommended.index('data-tool="llama-cpp"') < recommended.index('data-tool="mlx"')
    assert "ollama" not in recommended
    listed = page[page.index("Listed by a source, but not recommended"):]
    assert 'data-tool="ollama"' in listed and "not to use" in listed
    assert "the engine guide" in page and "seed" not in page.lower()  # the pick's source is named, by what it is


def test_recipe_page_links_to_the_wizard_prefilled(client, loaded_catalog):
    response = client.get(reverse("recommend:use_case_detail", args=["recipe-single-rtx"]))

    assert f'{reverse("recommend:wizard")}?hardware=rtx_single' in html(response)


def test_recipe_alternatives_are_conditional_choices_not_a_ranking(client, loaded_catalog):
    page = html(client.get(reverse("recommend:use_case_detail", args=["recipe-single-rtx"])))

    assert "Start with <a" in page and ">ExLlamaV2</a>" in page
    assert ">llama.cpp</a> when you run GGUF files, need portability or must offload to system memory" in page
    assert ">vLLM</a> when you serve several users" in page
    assert "<ol" not in page.split("Where to start")[1].split("</ul>")[0]

    hopper = html(client.get(reverse("recommend:use_case_detail", args=["recipe-8x-h100-h200"])))
    assert "Evaluate <a" in hopper and ">TensorRT-LLM</a> when you optimize for throughput" in hopper
    assert "Add <a" in hopper and ">NVIDIA Dynamo</a> when you orchestrate a fleet" in hopper


def test_engine_guide_renders_the_seeds_knowledge(client, loaded_catalog, django_assert_max_num_queries):
    with django_assert_max_num_queries(4):
        response = client.get(reverse("recommend:engine_guide"))

    page = html(response)
    assert response.status_code == 200
    assert page.count('<tr data-rule="') == 8
    assert 'href="/tools/nvidia-dynamo/">NVIDIA Dynamo</a>' in page and "runs on top of vLLM" in page
    for heading in ("What a benchmark must state", "Ten benchmarking rules", "Common mistakes",
                    "Quantization advice"):
        assert heading in page
    assert page.count("<li>", page.index("id=\"rules-heading\""), page.index("id=\"mistakes-heading\"")) == 10
    assert "AWQ" in page and "GPTQ" in page and "up to about 13B" in page
    assert "Inference Engines for LLMs and Local AI Hardware (2026 edition), Portuguese edition" in page


def test_unknown_use_case_is_a_404(client, db):
    assert client.get(reverse("recommend:use_case_detail", args=["nope"])).status_code == 404


def test_empty_use_case_list_says_so(client, db):
    assert "No use cases are loaded yet" in html(client.get(reverse("recommend:use_case_list")))


def test_wizard_without_answers_shows_the_ten_questions(client, db):
    response = client.get(reverse("recommend:wizard"))

    page = html(response)
    assert response.status_code == 200
    for number in range(1, 11):
        assert f"{number}." in page
    assert 'name="needs" value="tools_with_json_schema"' in page
    assert 'id="result"' not in page


def test_wizard_answer_has_top_pick_reasons_sources_and_runner_ups(client, loaded_catalog):
    response = client.get(reverse("recommend:wizard"), {"hardware": "rtx_single", "hosted_ok": "on"})

    page = html(response)
    assert response.status_code == 200
    result = response.context["result"]
    assert result["results"][0]["tool"] == "exllamav2"
    assert result["results"][0]["reasons"][0]["source"]["key"] == "seed-000-engine-guide"
    assert "Our pick" in page and "Why not first:" in page
    assert "Listed by a source, never recommended here" in page and "do not use Ollama" in page
    assert {item["tool"] for item in result["results"] if item["kind"] == "provider"} >= {"groq", "together-ai"}


def test_wizard_puts_one_pick_first_with_when_to_switch_and_the_form_after(client, loaded_catalog):
    HardwareSpecFactory(slug="nvidia-rtx-4090", name="NVIDIA RTX 4090", memory_gb=24, bandwidth_gb_s=1008)
    response = client.get(reverse("recommend:wizard"), {"hardware": "rtx_single", "context_tokens": 16384})

    page = html(response)
    answer = page.index('class="reco-answer"')
    assert answer < page.index("<form") and answer < page.index("The ranking, with reasons")
    assert page.count("Our pick") == 1
    assert 'action="/recommend/#result"' in page
    switches = response.context["result"]["switch_when"]
    assert {"tool": "llama-cpp", "name": "llama.cpp", "companion_name": "",
            "when": "the model only fits in system memory (CPU+GPU offload)"} in switches
    assert "Switch to <a" in page and "when you serve several users at once" in page
    assert "/fit/?context_tokens=16384&amp;concurrency=1&amp;hardware=nvidia-rtx-4090&amp;devices=1#result" in page
    assert "/break-even/?gpu_count=1" in page


def test_wizard_labels_api_features_in_plain_language_and_numbers_each_question_once(client, db):
    page = html(client.get(reverse("recommend:wizard")))

    assert "Probabilities of the generated tokens" in page and "Boosting or banning chosen tokens" in page
    for number in range(1, 11):
        assert len(re.findall(rf"(?<![\d.,]){number}\. [A-Z]", page)) == 1, number


def test_ollama_notice_only_where_ollama_would_run(client, loaded_catalog):
    hosted = html(client.get(reverse("recommend:wizard"), {"hardware": "none"}))
    browser = html(client.get(reverse("recommend:wizard"), {"hardware": "browser_app"}))
    mac = html(client.get(reverse("recommend:wizard"), {"hardware": "mac"}))

    assert "Listed by a source, never recommended here" not in hosted
    assert "Listed by a source, never recommended here" not in browser
    assert mac.count("Listed by a source, never recommended here") == 1


def test_wizard_on_premises_excludes_providers(client, loaded_catalog):
    response = client.get(reverse("recommend:wizard"), {"hardware": "mac"})

    result = response.context["result"]
    assert result["results"][0]["tool"] == "mlx"
    assert all(item["kind"] != "provider" for item in result["results"])
    assert "You answered that the model may not run on a hosted API." in html(response)


def test_wizard_measured_rejection_removes_provider(client, loaded_catalog):
    CompatStatusFactory(target__tool=ToolFactory(slug="groq"), target__slug="groq-gpt-oss", check_name="logprobs",
                        outcome="rejected", message="logprobs is not supported with this model")

    response = client.get(reverse("recommend:wizard"), {"hardware": "none", "hosted_ok": "on", "needs": "logprobs"})

    tools = [item["tool"] for item in response.context["result"]["results"]]
    assert "groq" not in tools and "together-ai" in tools
    assert "logprobs was rejected by probe target groq-gpt-oss" in html(response)


@pytest.mark.parametrize(("query", "field"), [
    ({"hardware": "toaster"}, "What hardware do you actually have?"),
    ({"hardware": "mac", "context_tokens": "-5"}, "Context length (tokens)"),
    ({"hardware": "mac", "concurrency": "lots"}, "Requests at the same time"),
    ({"hardware": "mac", "needs": "telepathy"}, "Which API features must work?"),
    ({"context_tokens": "100"}, "What hardware do you actually have?"),
])
def test_wizard_bad_input_gets_a_message_naming_the_field(client, db, query, field):
    response = client.get(reverse("recommend:wizard"), query)

    assert response.status_code == 400
    summary = html(response)[html(response).index('id="form-errors"'):]
    assert field in summary
    assert response.context["result"] is None


def test_fit_page_renders_presets_and_a_result(client, db):
    HardwareSpecFactory(slug="nvidia-h100-sxm", name="NVIDIA H100 SXM", memory_gb=80, bandwidth_gb_s=3350,
                        source=SourceFactory(key="nvidia-h100-spec", title="NVIDIA H100 spec"))
    assert client.get(reverse("recommend:fit")).status_code == 200

    response = client.get(reverse("recommend:fit"), {
        "model": "mixtral-8x7b", "weight_format": "bf16", "context_tokens": 8192, "concurrency": 4,
        "kv_cache": "fp16", "hardware": "nvidia-h100-sxm", "devices": 2,
    })

    page = html(response)
    assert response.status_code == 200
    assert response.context["result"]["result"]["weights_gib"] == pytest.approx(93.4e9 / 2**30)
    assert 'data-fits="true"' in page and 'id="moe-note"' in page
    assert "memory counts <strong>all</strong>" in page and "NVIDIA H100 spec" in page


def test_fit_custom_model_needs_its_numbers(client, db):
    response = client.get(reverse("recommend:fit"), {
        "model": "custom", "weight_format": "bf16", "context_tokens": 4096, "concurrency": 1, "kv_cache": "fp16",
        "hardware": "custom", "memory_gib": "24", "bandwidth_gb_s": "1008", "devices": 1,
    })

    assert response.status_code == 400
    page = html(response)
    assert "Total parameters (billions): Required for a custom model." in page
    assert "Layers: Required for a custom model." in page


def test_fit_rejects_nonsense_without_a_500(client, db):
    response = client.get(reverse("recommend:fit"), {"model": "llama-3.1-8b", "context_tokens": "1e999",
                                                     "devices": "0", "hardware": "custom"})

    assert response.status_code == 400
    assert "Number of devices" in html(response)


def test_break_even_page_compares_providers_and_gpus(client, db):
    grow_catalog(2)

    response = client.get(reverse("recommend:break_even"), {
        "input_tokens_per_day": 100_000_000, "output_tokens_per_day": 20_000_000, "model": "gpt-oss-120b",
        "utilisation": 50, "gpu_count": 1,
    })

    page = html(response)
    assert response.status_code == 200
    assert "730 hours in a month" in page
    assert "Comparison (seed 002), verified 2026-10-19" in page
    providers = response.context["result"]["providers"]
    assert providers[0]["usd_per_day"] == pytest.approx(27.0)
    assert response.context["result"]["gpus"][0]["output_tokens_per_second_per_gpu"] == pytest.approx(463, abs=1)


def test_break_even_bad_input_names_the_field(client, db):
    grow_catalog(1)

    response = client.get(reverse("recommend:break_even"), {"input_tokens_per_day": "0", "output_tokens_per_day": "0",
                                                            "model": "gpt-oss-120b", "utilisation": 50,
                                                            "gpu_count": 1})

    assert response.status_code == 400
    assert "Output tokens per day: State some tokens per day" in html(response)


def test_break_even_without_prices_says_so(client, db):
    assert "No per-token prices are loaded" in html(client.get(reverse("recommend:break_even")))


def count_queries(client, url, params=None) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return len(queries)


def test_wizard_query_count_does_not_grow_with_rows(client, db):
    grow_catalog(1)
    params = {"hardware": "rtx_single", "hosted_ok": "on", "needs": "logprobs"}
    few = count_queries(client, reverse("recommend:wizard"), params)

    grow_catalog(12, start=1)
    many = count_queries(client, reverse("recommend:wizard"), params)

    assert few == many
    # The generation, then the snapshot of the catalog every answer reads (built once per data generation):
    # the catalog for scoring with its reported figures, sources, hardware specs, token and GPU prices.
    assert few <= 18
    other_answer = count_queries(client, reverse("recommend:wizard"), {**params, "needs": "tools"})
    assert other_answer == 1  # the generation alone: the snapshot is shared


def test_use_case_list_query_count_does_not_grow_with_rows(client, db):
    source = SourceFactory(key="seed-000-engine-guide")
    for index in range(2):
        UseCaseRecommendationFactory(use_case=UseCaseFactory(slug=f"few-{index}"), source=source)
    few = count_queries(client, reverse("recommend:use_case_list"))

    for index in range(15):
        use_case = UseCaseFactory(slug=f"many-{index}")
        for _ in range(3):
            UseCaseRecommendationFactory(use_case=use_case, source=source)
    many = count_queries(client, reverse("recommend:use_case_list"))

    assert few == many


def test_use_case_detail_query_count_does_not_grow_with_rows(client, db):
    source = SourceFactory(key="seed-000-engine-guide")
    use_case = UseCaseFactory(slug="detail")
    UseCaseRecommendationFactory(use_case=use_case, source=source)
    few = count_queries(client, reverse("recommend:use_case_detail", args=["detail"]))

    for _ in range(10):
        UseCaseRecommendationFactory(use_case=use_case, source=SourceFactory())
    many = count_queries(client, reverse("recommend:use_case_detail", args=["detail"]))

    assert few == many


def test_fit_link_with_only_a_preset_and_hardware_uses_defaults(client, db):
    HardwareSpecFactory(slug="nvidia-rtx-4090", name="NVIDIA RTX 4090", memory_gb=24, bandwidth_gb_s=1008)

    response = client.get(reverse("recommend:fit"), {"model": "llama-3.1-8b", "hardware": "nvidia-rtx-4090"})

    assert response.status_code == 200
    result = response.context["result"]
    assert result["input"]["context_tokens"] == 8192 and result["input"]["bits_per_weight"] == 16.0
    assert result["result"]["fits"] is True


def test_fit_context_beyond_the_models_maximum_is_a_message_not_a_silent_cap(client, db):
    response = client.get(reverse("recommend:fit"), {
        "model": "llama-2-7b", "weight_format": "q4_k_m", "context_tokens": 8192, "hardware": "custom",
        "memory_gib": 8, "bandwidth_gb_s": 448,
    })

    assert response.status_code == 400
    assert "Llama 2 7B handles at most 4,096 tokens of context" in html(response)


def test_fit_llama_2_7b_on_an_8_gib_card_defaults_to_its_own_context_and_fits(client, db):
    response = client.get(reverse("recommend:fit"), {
        "model": "llama-2-7b", "weight_format": "q4_k_m", "hardware": "custom", "memory_gib": 8,
        "bandwidth_gb_s": 448,
    })

    assert response.status_code == 200
    assert response.context["result"]["input"]["context_tokens"] == 4096
    assert 'data-fits="true"' in html(response)


def test_fit_70b_on_a_4090_shows_no_ceiling_and_what_would_fit(client, db):
    HardwareSpecFactory(slug="nvidia-rtx-4090", name="NVIDIA RTX 4090", memory_gb=24, bandwidth_gb_s=1008)

    response = client.get(reverse("recommend:fit"), {
        "model": "llama-3.3-70b", "weight_format": "q4_k_m", "hardware": "nvidia-rtx-4090",
        "system_bandwidth_gb_s": 89.6,
    })

    page = html(response)
    assert 'data-fits="false"' in page
    assert 'id="decode-ceiling"' not in page and "Decode ceiling, one sequence" not in page
    assert 'id="what-would-fit"' in page
    assert "<strong>2 devices</strong>" in page
    assert "llama.cpp CPU+GPU offload" in page and "slower than if every layer were on the GPU" in page
    assert "GiB" in page and " GB of" not in page



HOSTED_LATENCY = {"hardware": "none", "hosted_ok": "on", "optimize_for": "latency"}


def evidence_line(page: str) -> str:
    match = re.search(r'<p class="reco-evidence" data-evidence="(\w+)">([^<]+)</p>', page)
    assert match, "the answer names the evidence that ranked the providers"
    return f"{match[1]}: {unescape(match[2])}"


def speed_reasons(result: dict, rule: str) -> list[str]:
    return [reason["text"] for item in result["results"] for reason in item["reasons"] if reason["rule"] == rule]


def test_wizard_says_a_fresh_catalogs_providers_are_ranked_on_a_named_publishers_reported_figures(
    client, loaded_catalog,
):
    response = client.get(reverse("recommend:wizard"), HOSTED_LATENCY)

    page = html(response)
    reported = speed_reasons(response.context["result"], "reported:speed")
    assert reported, "a fresh catalog ranks providers on reported figures"
    publisher, observed = re.match(r"Reported by (.+?) on (\d{4}-\d\d-\d\d) for ", reported[0]).groups()
    line = evidence_line(page)
    assert line.startswith(f"reported: Hosted providers ranked on figures reported by {publisher} (observed ")
    assert observed in line and line.endswith("; not measured by this site.")
    assert page.index('class="reco-answer"') < page.index('class="reco-evidence"') < page.index("<form")
    unranked = [reason for item in response.context["result"]["results"] for reason in item["reasons"]
                if reason["rule"] == "measurement:none"]
    assert unranked and all(reason["source"] is None for reason in unranked), "no probe is cited for a missing figure"
    assert ".. Not measured" not in page


def test_wizard_says_providers_are_ranked_on_this_sites_measurements_once_a_summary_exists(client, loaded_catalog):
    MeasurementSummaryFactory(target__tool=Tool.objects.get(slug="groq"), target__slug="groq-gpt-oss-120b",
                              target__model_id="openai/gpt-oss-120b")

    response = client.get(reverse("recommend:wizard"), HOSTED_LATENCY)

    assert evidence_line(html(response)) == (
        "measured: Hosted providers ranked on this site's own measurements: 72-hour medians of its probe runs."
    )
    assert speed_reasons(response.context["result"], "measurement:output_speed_tps")
    assert not speed_reasons(response.context["result"], "reported:speed")
