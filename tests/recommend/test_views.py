"""The recommendation pages render, explain themselves, reject bad input with messages, and keep queries flat."""
from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse, reverse_lazy

from catalog.models import Tool
from scoring import profile as choices

from tests.factories import CompatStatusFactory, HardwareSpecFactory, MeasurementSummaryFactory, SourceFactory, ToolFactory
from tests.factories import UseCaseFactory, UseCaseRecommendationFactory, grow_catalog

pytestmark = pytest.mark.django_db

WIZARD, FIT, BREAK_EVEN = (reverse_lazy(f"recommend:{name}") for name in ("wizard", "fit", "break_even"))


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

    assert f'{WIZARD}?hardware=rtx_single' in html(response)


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
    response = client.get(WIZARD)

    page = html(response)
    assert response.status_code == 200
    for number in range(1, 11):
        assert f"{number}." in page
    assert 'name="needs" value="tools_with_json_schema"' in page
    assert 'id="result"' not in page


def test_wizard_answer_has_top_pick_reasons_sources_and_runner_ups(client, loaded_catalog):
    response = client.get(WIZARD, {"hardware": "rtx_single", "hosted_ok": "on"})

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
    response = client.get(WIZARD, {"hardware": "rtx_single", "context_tokens": 16384})

    page = html(response)
    answer = page.index('class="reco-answer"')
    assert answer < page.index("<form") and answer < page.index("The ranking, with reasons")
    assert page.count("Our pick") == 1
    assert 'action="/recommend/#result"' in page
    switches = response.context["result"]["switch_when"]
    assert {"tool": "llama-cpp", "name": "llama.cpp", "companion_name": "",
            "when": "the model only fits in system memory (CPU+GPU offload)", "adds_companion": False} in switches
    assert "Switch to <a" in page and "when you serve several users at once" in page
    # The links carry the model and its published format as well, so that they answer (issue 23).
    assert ("/fit/?model=gpt-oss-120b&amp;weight_format=mxfp4&amp;hardware=nvidia-rtx-4090&amp;devices=1"
            "&amp;concurrency=1&amp;context_tokens=16384#result") in page
    assert "/break-even/?input_tokens_per_day=50000000&amp;output_tokens_per_day=10000000" \
        "&amp;gpu_count=1&amp;model=gpt-oss-120b#result" in page


def test_wizard_labels_api_features_in_plain_language_and_numbers_each_question_once(client, db):
    page = html(client.get(WIZARD))

    assert "Probabilities of the generated tokens" in page and "Boosting or banning chosen tokens" in page
    for number in range(1, 11):
        assert len(re.findall(rf"(?<![\d.,]){number}\. [A-Z]", page)) == 1, number


def test_ollama_notice_only_where_ollama_would_run(client, loaded_catalog):
    hosted = html(client.get(WIZARD, {"hardware": "none"}))
    browser = html(client.get(WIZARD, {"hardware": "browser_app"}))
    mac = html(client.get(WIZARD, {"hardware": "mac"}))

    assert "Listed by a source, never recommended here" not in hosted
    assert "Listed by a source, never recommended here" not in browser
    assert mac.count("Listed by a source, never recommended here") == 1


def test_wizard_on_premises_excludes_providers(client, loaded_catalog):
    response = client.get(WIZARD, {"hardware": "mac"})

    result = response.context["result"]
    assert result["results"][0]["tool"] == "mlx"
    assert all(item["kind"] != "provider" for item in result["results"])
    assert "You answered that the model may not run on a hosted API." in html(response)


def test_wizard_measured_rejection_removes_provider(client, loaded_catalog):
    CompatStatusFactory(target__tool=ToolFactory(slug="groq"), target__slug="groq-gpt-oss", check_name="logprobs",
                        outcome="rejected", message="logprobs is not supported with this model")

    response = client.get(WIZARD, {"hardware": "none", "hosted_ok": "on", "needs": "logprobs"})

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
    response = client.get(WIZARD, query)

    assert response.status_code == 400
    summary = html(response)[html(response).index('id="form-errors"'):]
    assert field in summary
    assert response.context["result"] is None


def test_fit_page_renders_presets_and_a_result(client, db):
    HardwareSpecFactory(slug="nvidia-h100-sxm", name="NVIDIA H100 SXM", memory_gb=80, bandwidth_gb_s=3350,
                        source=SourceFactory(key="nvidia-h100-spec", title="NVIDIA H100 spec"))
    assert client.get(FIT).status_code == 200

    response = client.get(FIT, {"model": "mixtral-8x7b", "weight_format": "bf16", "context_tokens": 8192,
                                "concurrency": 4, "kv_cache": "fp16", "hardware": "nvidia-h100-sxm", "devices": 2})

    page = html(response)
    assert response.status_code == 200
    assert response.context["result"]["result"]["weights_gib"] == pytest.approx(93.4e9 / 2**30)
    assert 'data-fits="true"' in page and 'id="moe-note"' in page
    assert "memory counts <strong>all</strong>" in page and "NVIDIA H100 spec" in page


@pytest.mark.parametrize(("query", "messages"), [
    pytest.param({"model": "custom", "weight_format": "bf16", "context_tokens": 4096, "concurrency": 1,
                  "kv_cache": "fp16", "hardware": "custom", "memory_gib": "24", "bandwidth_gb_s": "1008", "devices": 1},
                 ["Total parameters (billions): Required for a custom model.", "Layers: Required for a custom model."],
                 id="custom-model-needs-its-numbers"),
    pytest.param({"model": "custom", "params_b": 7, "layers": 32, "kv_heads": 8, "head_dim": 128, "hardware": "custom",
                  "memory_gib": 24, "bandwidth_gb_s": 1008},
                 ["Weight format: Choose the weight format"], id="custom-model-without-a-format-is-asked-for-one"),
    pytest.param({"model": "llama-3.1-8b", "context_tokens": "1e999", "devices": "0", "hardware": "custom"},
                 ["Number of devices"], id="nonsense-without-a-500"),
    pytest.param({"model": "llama-2-7b", "weight_format": "q4_k_m", "context_tokens": 8192, "hardware": "custom",
                  "memory_gib": 8, "bandwidth_gb_s": 448},
                 ["Llama 2 7B handles at most 4,096 tokens of context"],
                 id="context-beyond-the-models-maximum-is-a-message-not-a-silent-cap"),
])
def test_fit_bad_input_is_a_400_saying_what_is_wrong(client, db, query, messages):
    response = client.get(FIT, query)

    assert response.status_code == 400
    for message in messages:
        assert message in html(response)


def test_break_even_page_compares_providers_and_gpus(client, db):
    grow_catalog(2)

    response = client.get(BREAK_EVEN, {"input_tokens_per_day": 100_000_000, "output_tokens_per_day": 20_000_000,
                                       "model": "gpt-oss-120b", "utilisation": 50, "gpu_count": 1})

    page = html(response)
    assert response.status_code == 200
    assert "730 hours in a month" in page
    assert "Comparison (seed 002), verified 2026-10-19" in page
    providers = response.context["result"]["providers"]
    assert providers[0]["usd_per_day"] == pytest.approx(27.0)
    assert response.context["result"]["gpus"][0]["output_tokens_per_second_per_gpu"] == pytest.approx(463, abs=1)


def test_break_even_bad_input_names_the_field(client, db):
    grow_catalog(1)

    response = client.get(BREAK_EVEN, {"input_tokens_per_day": "0", "output_tokens_per_day": "0",
                                       "model": "gpt-oss-120b", "utilisation": 50, "gpu_count": 1})

    assert response.status_code == 400
    assert "Output tokens per day: State some tokens per day" in html(response)


def test_break_even_link_naming_only_the_model_answers_with_the_default_workload(client, db):
    grow_catalog(1)

    response = client.get(BREAK_EVEN, {"model": "gpt-oss-120b"})

    assert response.status_code == 200
    assert response.context["form"].cleaned_data["input_tokens_per_day"] == 50_000_000
    assert response.context["form"].cleaned_data["output_tokens_per_day"] == 10_000_000
    assert response.context["result"]["providers"]


def test_break_even_without_prices_says_so(client, db):
    assert "No per-token prices are loaded" in html(client.get(BREAK_EVEN))


def count_queries(client, url, params=None) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return len(queries)


def test_wizard_query_count_does_not_grow_with_rows(client, db):
    grow_catalog(1)
    params = {"hardware": "rtx_single", "hosted_ok": "on", "needs": "logprobs"}
    few = count_queries(client, WIZARD, params)

    grow_catalog(12, start=1)
    many = count_queries(client, WIZARD, params)

    assert few == many
    # The snapshot of the catalog every answer reads (built once per generation of the page cache): the catalog
    # for scoring with its reported figures, sources, hardware specs, token and GPU prices.
    assert few <= 17
    other_answer = count_queries(client, WIZARD, {**params, "needs": "tools"})
    assert other_answer == 0  # the snapshot is shared


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

    response = client.get(FIT, {"model": "llama-3.1-8b", "hardware": "nvidia-rtx-4090"})

    assert response.status_code == 200
    result = response.context["result"]
    assert result["input"]["context_tokens"] == 8192 and result["input"]["bits_per_weight"] == 16.0
    assert result["result"]["fits"] is True


def test_fit_llama_2_7b_on_an_8_gib_card_defaults_to_its_own_context_and_fits(client, db):
    response = client.get(FIT, {"model": "llama-2-7b", "weight_format": "q4_k_m", "hardware": "custom",
                                "memory_gib": 8, "bandwidth_gb_s": 448})

    assert response.status_code == 200
    assert response.context["result"]["input"]["context_tokens"] == 4096
    assert 'data-fits="true"' in html(response)


def test_fit_70b_on_a_4090_shows_no_ceiling_and_what_would_fit(client, db):
    HardwareSpecFactory(slug="nvidia-rtx-4090", name="NVIDIA RTX 4090", memory_gb=24, bandwidth_gb_s=1008)

    response = client.get(FIT, {"model": "llama-3.3-70b", "weight_format": "q4_k_m", "hardware": "nvidia-rtx-4090",
                                "system_bandwidth_gb_s": 89.6})

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
    response = client.get(WIZARD, HOSTED_LATENCY)

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

    response = client.get(WIZARD, HOSTED_LATENCY)

    assert evidence_line(html(response)) == (
        "measured: Hosted providers ranked on this site's own measurements: 72-hour medians of its probe runs."
    )
    assert speed_reasons(response.context["result"], "measurement:output_speed_tps")
    assert not speed_reasons(response.context["result"], "reported:speed")


# --- issue 23: a fit calculator that knows each model, break-even that names models, no dead ends ---------

def test_fit_gpt_oss_120b_without_a_format_fits_one_h100_in_mxfp4(client, loaded_catalog):
    response = client.get(FIT, {"model": "gpt-oss-120b", "hardware": "nvidia-h100-sxm"})

    page = html(response)
    assert response.status_code == 200
    result = response.context["result"]
    assert result["input"]["weight_format"] == "mxfp4" and result["result"]["fits"] is True
    assert result["result"]["weights_gib"] == pytest.approx(60.8, abs=0.3)  # the card's 60.8 GiB checkpoint
    assert '<span id="weight-format">MXFP4</span> (as published)' in page
    assert '<option value="mxfp4" selected>' in page, "the redisplayed form shows the format it assumed"


def test_fit_form_starts_from_the_published_format_not_gguf(client, loaded_catalog):
    page = html(client.get(FIT))

    assert '<option value="" selected>As published' in page
    assert '<option value="q4_k_m" selected>' not in page


def test_fit_moe_on_a_24_gb_card_offers_experts_in_system_memory_and_a_dense_model_does_not(client, loaded_catalog):
    moe = html(client.get(FIT, {"model": "gpt-oss-120b", "hardware": "nvidia-rtx-4090", "system_bandwidth_gb_s": 89.6}))

    assert 'data-fits="false"' in moe and 'data-option="expert-offload"' in moe
    assert '<code id="expert-offload-flags">--n-gpu-layers all --n-cpu-moe 25</code>' in moe
    assert "keep the Mixture of Experts (MoE) weights of the first N layers in the CPU" in moe
    assert 'id="expert-offload-ceiling"' in moe and "from system memory at 89.6 GB/s" in moe
    assert 'data-option="offload"' not in moe

    dense = html(client.get(FIT, {"model": "llama-3.3-70b", "weight_format": "q4_k_m", "hardware": "nvidia-rtx-4090"}))
    assert 'data-option="expert-offload"' not in dense and "--n-cpu-moe" not in dense
    assert 'data-option="offload"' in dense


def test_fit_llama_3_3_70b_on_eight_h100_proposes_no_llama_cpp(client, loaded_catalog):
    response = client.get(FIT, {"model": "llama-3.3-70b", "hardware": "nvidia-h100-sxm", "devices": 8,
                                "context_tokens": 131072, "concurrency": 64})

    page = html(response)
    assert 'data-fits="false"' in page
    assert "llama.cpp CPU+GPU offload" not in page and "--n-cpu-moe" not in page
    assert 'data-option="no-offload"' in page and "the engine guide rules llama.cpp out" in page
    options = page[page.index('id="what-would-fit"'):page.index("</section>", page.index('id="what-would-fit"'))]
    assert "<strong>GGUF" not in options, "a GGUF file means llama.cpp"


def test_fit_says_when_the_device_count_is_no_tensor_parallel_size(client, loaded_catalog):
    page = html(client.get(FIT, {"model": "qwen3-32b", "hardware": "nvidia-rtx-4090", "devices": 3}))

    assert 'id="tp-note"' in page and "vLLM refuses 3-way tensor parallelism" in page
    assert "must divide its 64 attention heads" in page

    short = html(client.get(FIT, {"model": "qwen3-32b", "hardware": "nvidia-rtx-4090"}))
    assert "<strong>4 devices</strong>" in short and "<strong>3 devices</strong>" not in short


def test_consumer_cards_from_8_gb_are_presets_with_sources(client, loaded_catalog):
    page = html(client.get(FIT))

    for slug, label in (("nvidia-rtx-4060", "(8 GiB, 272 GB/s)"), ("nvidia-rtx-4060-ti-16gb", "16 GiB, 288 GB/s"),
                        ("nvidia-rtx-4070", "12 GiB, 504 GB/s"), ("nvidia-rtx-4080", "16 GiB, 716.8 GB/s"),
                        ("nvidia-rtx-5060-ti-16gb", "16 GiB, 448 GB/s"), ("nvidia-rtx-5070", "12 GiB, 672 GB/s"),
                        ("nvidia-rtx-5080", "16 GiB, 960 GB/s")):
        assert f'<option value="{slug}">' in page and label in page, slug
    assert "TechPowerUp: Gainward GeForce RTX 5060 Ti 8 GB review" in page


def test_the_24_gb_rule_of_thumb_is_shown_with_the_calculators_own_figures(client, loaded_catalog):
    guide = html(client.get(reverse("recommend:engine_guide")))
    fit_page = html(client.get(FIT))

    for page in (guide, fit_page):
        note = page[page.index('id="rule-of-thumb-24gb"'):]
        note = note[:note.index("</p>")]
        # 34e9 x 4.84 / 8 bytes = 19.2 GiB; 24 GiB x 0.9 - 19.2 = 2.4 GiB left.
        assert "a 34B model's weights take 19.2 GiB" in note and "2.4 GiB to spare" in note
        # Llama 3.3 70B at Q4_K_M: 70.6e9 x 4.84 / 8 = 39.8 GiB of weights; two 24 GiB cards hold it.
        assert "A 70B model does not fit" in note and "39.8 GiB for its weights alone" in note
        assert "2 such cards hold it" in note
    fit_link = re.search(r'id="rule-of-thumb-24gb".*?<a href="([^"]+)"', guide, re.S)[1]
    seventy = client.get(unescape(fit_link))
    assert seventy.status_code == 200 and seventy.context["result"]["result"]["fits"] is False
    assert seventy.context["result"]["result"]["weights_gib"] == pytest.approx(39.8, abs=0.05)


def wizard_links(page: str) -> dict[str, str]:
    return {kind: unescape(href) for href, kind in re.findall(r'<a href="([^"]+)" data-link="([\w-]+)"', page)}


@pytest.mark.parametrize("hardware", choices.values_of(choices.HARDWARE_CHOICES))
def test_every_wizard_answer_links_to_fit_and_break_even_answers(client, loaded_catalog, hardware):
    page = html(client.get(WIZARD, {"hardware": hardware, "hosted_ok": "on"}))

    links = wizard_links(page)
    assert set(links) == {"fit", "break-even", "cost"}, hardware
    answers = {}
    for kind, url in links.items():
        if kind == "cost":
            continue
        response = client.get(url)
        assert response.status_code == 200, (hardware, kind, url)
        assert response.context["result"], (hardware, kind, url)
        assert 'id="result"' in html(response)
        answers[kind] = response.context["result"]
    assert answers["fit"]["input"]["model_name"] == "gpt-oss-120b (MoE)"
    assert answers["fit"]["input"]["weight_format"] == "mxfp4"
    assert answers["break-even"]["model_name"] == "gpt-oss-120b"


def test_wizard_links_from_a_laptop_say_which_gpu_they_show(client, loaded_catalog):
    page = html(client.get(WIZARD, {"hardware": "laptop_edge"}))

    assert "How much memory does gpt-oss-120b need?" in page
    assert "(shown on one NVIDIA H100 SXM; enter your own hardware there)" in page


def test_break_even_lists_each_model_once_by_name(client, loaded_catalog):
    response = client.get(BREAK_EVEN)

    options = re.findall(r'<option value="([^"]*)"[^>]*>([^<]+)</option>',
                         html(response)[html(response).index('id="id_model"'):])
    values = [value for value, _ in options][:len(response.context["models"])]
    assert len(values) == len(set(values))
    labels = dict(options)
    assert labels["qwen3-8-27b"] == "Qwen 3.8 27B (2 providers)"
    assert labels["gpt-oss-120b"].startswith("gpt-oss-120b (")
    assert not any("qwen-3.8-27b" in value or "qwen3.8-27b" in value for value in values)


def test_break_even_writes_money_as_money_and_uses_your_own_gpu_price(client, loaded_catalog):
    response = client.get(BREAK_EVEN, {"input_tokens_per_day": 100_000_000, "output_tokens_per_day": 20_000_000,
                                       "model": "gpt-oss-120b", "utilisation": 50, "gpu_count": 2,
                                       "own_gpu_usd_per_hour": "1.5"})

    page = html(response)
    assert response.status_code == 200
    assert "$0.15 / $0.60" in page and "$0.6 " not in page and "$8.0<" not in page
    own = [row for row in response.context["result"]["gpus"] if row["user_supplied"]]
    assert len(own) == 1 and own[0]["monthly_usd"] == pytest.approx(1.5 * 730 * 2)
    row = page[page.index("data-own-price"):]
    row = row[:row.index("</tr>")]
    assert "your figure" in row and "$1.50" in row and "$2,190.00" in row


@pytest.mark.parametrize("value", ["0", "-3", "abc", "100000"])
def test_break_even_rejects_a_bad_own_gpu_price_naming_the_field(client, loaded_catalog, value):
    response = client.get(BREAK_EVEN, {"input_tokens_per_day": 1, "output_tokens_per_day": 1, "model": "gpt-oss-120b",
                                       "utilisation": 50, "gpu_count": 1, "own_gpu_usd_per_hour": value})

    assert response.status_code == 400
    assert "Your own GPU price per hour (USD, optional)" in html(response)[html(response).index('id="form-errors"'):]


def test_fit_and_break_even_query_counts_do_not_grow_with_rows(client, db):
    grow_catalog(1)
    HardwareSpecFactory(slug="nvidia-h100-sxm", name="NVIDIA H100 SXM")
    fit_params = {"model": "gpt-oss-120b", "hardware": "nvidia-h100-sxm"}
    be_params = {"input_tokens_per_day": 1000, "output_tokens_per_day": 1000, "model": "gpt-oss-120b",
                 "utilisation": 50, "gpu_count": 1, "own_gpu_usd_per_hour": 2}
    few = (count_queries(client, FIT, fit_params),
           count_queries(client, BREAK_EVEN, be_params))

    grow_catalog(12, start=1)
    for index in range(10):
        HardwareSpecFactory(slug=f"gpu-{index}")
    many = (count_queries(client, FIT, fit_params),
            count_queries(client, BREAK_EVEN, be_params))

    assert few == many


def test_break_even_page_takes_the_apis_defaults(client, loaded_catalog):
    response = client.get(BREAK_EVEN, {"input_tokens_per_day": 1000, "output_tokens_per_day": 1000})

    assert response.status_code == 200
    assert response.context["result"]["model_name"] == "gpt-oss-120b"
    assert response.context["result"]["assumptions"]["utilisation"] == 0.5
    assert {row["gpus"] for row in response.context["result"]["gpus"]} == {1}


def _published_section(page: str) -> str:
    section = page[page.index('class="reco-published"'):]
    return section[:section.index("</section>")]


def test_a_hopper_answer_cites_each_engines_published_figure_with_publisher_date_and_version(client, loaded_catalog):
    page = html(client.get(WIZARD, {"hardware": "nvidia_hopper_node", "deployment": "production"}))
    section = _published_section(page)
    entry = section[section.index('data-comparison="gpt-oss-120b/nvidia-h100-sxm"'):]
    entry = entry[:entry.index("</div>")]
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        assert f'data-engine="{engine}"' in entry
    assert "6,095 total tok/s (2,901 output tok/s per GPU)" in unescape(entry)
    assert "ShareGPT, 1,000 prompts at once, ranked by total tok/s" in unescape(entry)
    assert "GPUStack" in entry and "published 2025-10-31" in entry
    assert "vLLM 0.31.0, released 05 Oct 2026, is newer than the v0.10.2 measured" in unescape(entry)


def test_where_the_published_leader_is_not_the_guides_pick_the_answer_shows_both(client, loaded_catalog):
    page = html(client.get(WIZARD, {"hardware": "nvidia_hopper_node", "deployment": "production",
                                    "architecture": "moe"}))
    assert 'class="reco-answer" data-tool="sglang"' in page
    entry = _published_section(page)
    entry = entry[entry.index('data-comparison="gpt-oss-120b/nvidia-h100-sxm"'):]
    assert "The guide&#x27;s rules rank another engine first; in this comparison vLLM v0.10.2" in entry


def test_the_chosen_model_selects_its_comparisons_and_the_ranking_does_not_change(client, loaded_catalog):
    query = {"hardware": "nvidia_hopper_node", "deployment": "production"}
    default = client.get(WIZARD, query).context["result"]
    chosen = client.get(WIZARD, {**query, "model": "deepseek-r1"}).context["result"]
    assert [item["tool"] for item in chosen["results"]] == [item["tool"] for item in default["results"]]
    assert {entry["model_slug"] for entry in chosen["published_evidence"]} == {"deepseek-r1"}
    assert {entry["hardware_slug"] for entry in chosen["published_evidence"]} == {"nvidia-h200"}


def test_hardware_without_a_comparison_for_the_model_says_so_and_names_the_models_that_have_one(client,
                                                                                               loaded_catalog):
    page = unescape(html(client.get(WIZARD, {"hardware": "amd_instinct"})))
    assert ("No published comparison of several engines for gpt-oss-120b on AMD Instinct MI300 / MI325 / MI350 / "
            "MI355 yet.") in page
    assert "There is one for DeepSeek-R1" in page
    laptop = html(client.get(WIZARD, {"hardware": "laptop_edge"}))
    assert "reco-published" not in laptop


def test_a_model_without_published_comparisons_is_refused_naming_the_field(client, loaded_catalog):
    response = client.get(WIZARD, {"hardware": "nvidia_hopper_node", "model": "no-such-model"})
    assert response.status_code == 400
    summary = html(response)[html(response).index('id="form-errors"'):]
    assert "Which model will you serve?" in summary


def test_wizard_takes_one_catalog_gpu_and_any_catalog_model(client, loaded_catalog):
    response = client.get(WIZARD, {"hardware": "nvidia-h100-sxm", "gpu_count": 1, "model": "gpt-oss-120b",
                                   "deployment": "production", "concurrency": 50})
    page = unescape(html(response))

    assert response.status_code == 200
    assert "What published benchmarks measured for gpt-oss-120b on 1× NVIDIA H100 SXM" in page
    links = wizard_links(html(response))
    assert links["fit"].startswith("/fit/?model=gpt-oss-120b&weight_format=mxfp4&hardware=nvidia-h100-sxm"
                                   "&devices=1&concurrency=50")
    assert links["cost"] == "/cost/?model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_count=1"
    # The form offers the catalog's devices beside the kinds of hardware, and every catalog model.
    assert '<optgroup label="A device from the catalog (say how many below)">' in page
    assert '<option value="apple-m4-max">Apple M4 Max</option>' in page
    assert '<option value="qwen3-5-35b-a3b">Qwen3.5-35B-A3B</option>' in page


def test_wizard_ranking_numbers_are_the_ranks(client, loaded_catalog):
    page = html(client.get(WIZARD, {"hardware": "nvidia_hopper_node", "deployment": "production"}))

    for rank, value in re.findall(r'data-rank="(\d+)" value="(\d+)"', page):
        assert rank == value
    assert 'class="reco-rank">#' not in page


def test_wizard_adds_an_orchestrator_rather_than_switching_to_the_pick(client, loaded_catalog):
    page = html(client.get(WIZARD, {"hardware": "nvidia_hopper_node", "deployment": "production"}))

    assert "Add NVIDIA Dynamo on top of <a" in page
    assert not re.search(r'Switch to <a href="/tools/vllm/">vLLM</a> with', page)


def test_wizard_names_an_unknown_device_on_the_field(client, loaded_catalog):
    response = client.get(WIZARD, {"hardware": "h100"})

    assert response.status_code == 400
    assert "Select a valid choice" in html(response)


def test_fit_page_gpt_oss_on_one_h100_at_8k_by_50_states_its_window_and_the_fp8_step(client, loaded_catalog):
    response = client.get(FIT, {"model": "gpt-oss-120b", "hardware": "nvidia-h100-sxm", "context_tokens": 8192,
                                "concurrency": 50})
    page = unescape(html(response))
    result = response.context["result"]["result"]

    assert result["kv_cache_gib"] == pytest.approx(14.28, abs=0.01) and result["max_concurrency"] == 39
    assert page.index('id="fit-caveats"') < page.index('id="what-would-fit"')
    assert "128-token sliding window" in page
    steps = re.findall(r'<li data-option="([\w-]+)"', page)
    assert steps[:4] == ["kv-cache", "context", "format", "devices"]
    assert "--kv-cache-dtype fp8" in page


def test_fit_page_on_a_mac_names_the_gpu_working_set(client, loaded_catalog):
    page = html(client.get(FIT, {"model": "llama-3.3-70b", "hardware": "apple-m3-ultra"}))

    assert "recommendedMaxWorkingSetSize" in page and "iogpu.wired_limit_mb" in page
    assert "gpu_memory_utilization" not in page.split('id="result"')[1].split("</table>")[0]
