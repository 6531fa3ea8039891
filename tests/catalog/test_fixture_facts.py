"""The real fixtures say what the seeds say: ratings, rank order, every stated price, caveats, sources."""
import datetime
from decimal import Decimal

import pytest

from catalog.models import (
    Caveat,
    HardwareSpec,
    HardwareSupport,
    PriceItem,
    QuantFormat,
    Source,
    Tool,
    ToolApiSurface,
    ToolFeature,
    ToolQuantFormat,
)

SEED_VERIFIED_ON = datetime.date(2026, 10, 19)

# Seed 002's table, in its order.
SEED_RATINGS = [
    ("llama-cpp", "4.8"),
    ("vllm", "4.7"),
    ("ollama", "4.6"),
    ("together-ai", "4.5"),
    ("sglang", "4.4"),
    ("mlx", "4.4"),
    ("fireworks-ai", "4.4"),
    ("audio-cpp", "4.3"),
    ("colibri", "4.2"),
    ("tensorrt-llm", "4.0"),
    ("groq", "4.0"),
    ("cerebras", "4.0"),
    ("deepinfer", "3.6"),
]

UNRATED = [
    "hugging-face-tgi", "exllamav2", "exllamav3", "tabbyapi", "mlc-llm", "onnxruntime-genai", "openvino-genai",
    "lmdeploy", "nvidia-dynamo", "lm-studio", "jan", "ctranslate2", "aphrodite-engine", "mlx-lm",
]

FREE = "free"


def per_mtok(item, input_usd, output_usd, tier="on_demand"):
    return (item, "per_mtok", tier, Decimal(input_usd), Decimal(output_usd), None, None, False)


def amount(item, unit, tier, usd, lower_bound=False):
    return (item, unit, tier, None, None, Decimal(usd), None, lower_bound)


def no_amount(item, unit, tier):
    return (item, unit, tier, None, None, None, None, False)


def discount(item, percent):
    return (item, "discount", "batch", None, None, None, Decimal(percent), False)


# Every price seed 002 states: (item, unit, tier, input, output, amount, discount %, "from" price).
SEED_PRICES = {
    "llama-cpp": [no_amount("llama.cpp (self-hosted)", "free", FREE)],
    "vllm": [no_amount("vLLM (self-hosted)", "free", FREE)],
    "ollama": [
        no_amount("Ollama (local)", "free", FREE),
        no_amount("Ollama Cloud Free", "free", FREE),
        amount("Ollama Cloud Pro", "per_month", "subscription", "20"),
        amount("Ollama Cloud Pro credits", "credit", "subscription", "60"),
        amount("Ollama Cloud Max", "per_month", "subscription", "100"),
        amount("Ollama Cloud Max credits", "credit", "subscription", "300"),
        amount("Ollama Cloud Team", "per_month", "subscription", "500"),
        amount("Ollama Cloud Team credits", "credit", "subscription", "1000"),
        no_amount("Ollama Cloud Enterprise", "quote", "enterprise"),
    ],
    "together-ai": [
        amount("Prepaid credit (first purchase)", "credit", "prepaid", "15", lower_bound=True),
        per_mtok("gpt-oss-120B", "0.15", "0.60"),
        per_mtok("Kimi K3", "3", "15"),
        discount("Batch inference", "50"),
        amount("Dedicated endpoint H100", "per_hour", "dedicated", "5.49"),
        amount("Dedicated endpoint B200", "per_hour", "dedicated", "8.99"),
        amount("GPU cluster H100", "per_hour", "on_demand", "3.99"),
        amount("GPU cluster H100", "per_hour", "interruptible", "1.99"),
        amount("Fine-tuning", "per_mtok_training", "fine_tuning", "0.34", lower_bound=True),
    ],
    "sglang": [no_amount("SGLang (self-hosted)", "free", FREE)],
    "mlx": [no_amount("MLX (self-hosted)", "free", FREE)],
    "fireworks-ai": [
        per_mtok("GPT OSS 120B", "0.15", "0.60"),
        per_mtok("Kimi K3", "3", "15"),
        discount("Batch inference", "50"),
        amount("Dedicated H100", "per_hour", "dedicated", "8"),
        amount("Dedicated H200", "per_hour", "dedicated", "8"),
        amount("Dedicated B200", "per_hour", "dedicated", "13"),
        amount("Fine-tuning", "per_mtok_training", "fine_tuning", "0.50", lower_bound=True),
    ],
    "audio-cpp": [no_amount("audio.cpp (self-hosted)", "free", FREE)],
    "colibri": [no_amount("colibri (self-hosted)", "free", FREE)],
    "tensorrt-llm": [no_amount("TensorRT-LLM (self-hosted)", "free", FREE)],
    "groq": [
        no_amount("gpt-oss-120b (free plan)", "limit", FREE),
        per_mtok("gpt-oss-120b", "0.15", "0.60"),
        per_mtok("gpt-oss-20b", "0.075", "0.30"),
        per_mtok("qwen3.8-27b", "0.80", "4.00"),
        amount("Whisper large-v3-turbo", "per_audio_hour", "on_demand", "0.04"),
        no_amount("Llama and some newer models", "quote", "enterprise"),
    ],
    "cerebras": [
        amount("Trial credit", "credit", "trial", "5"),
        per_mtok("gpt-oss-120b", "0.35", "0.75"),
        per_mtok("Qwen 3.8 27B", "0.99", "1.49"),
        no_amount("Dedicated Inference", "quote", "dedicated"),
        amount("Cerebras Code ($50 plan)", "per_month", "subscription", "50"),
        amount("Cerebras Code ($200 plan)", "per_month", "subscription", "200"),
    ],
    "deepinfer": [no_amount("DeepInfer (self-hosted)", "free", FREE)],
}


pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("real_catalog")]


def price_rows(slug: str) -> list[tuple]:
    return [
        (p.item, p.unit, p.tier, p.input_usd_per_mtok, p.output_usd_per_mtok, p.amount_usd, p.discount_percent,
         p.is_lower_bound)
        for p in PriceItem.objects.filter(tool__slug=slug)
    ]


def test_the_thirteen_rated_tools_have_the_seed_ratings_in_the_seed_order():
    rated = Tool.objects.filter(rating__isnull=False).order_by("rank")

    assert [(tool.slug, str(tool.rating)) for tool in rated] == SEED_RATINGS
    assert [tool.rank for tool in rated] == list(range(1, 14))
    assert [tool.slug for tool in Tool.objects.ranked()[:13]] == [slug for slug, _ in SEED_RATINGS]
    assert {tool.rating_source.key for tool in rated} == {"seed-002-engine-comparison"}
    assert {tool.last_verified for tool in rated} == {SEED_VERIFIED_ON}


def test_rated_tools_have_verdict_ideal_for_and_pricing_in_english():
    for tool in Tool.objects.filter(rating__isnull=False):
        for text in (tool.summary, tool.verdict, tool.ideal_for, tool.pricing_summary):
            assert text, tool.slug
            padded = f" {text.lower()} "
            assert not any(word in padded for word in (" não ", " para ", " você ", " gratuito ")), tool.slug


@pytest.mark.parametrize("slug", list(SEED_PRICES))
def test_every_seed_price_is_a_structured_price_item(slug):
    assert sorted(price_rows(slug), key=repr) == sorted(SEED_PRICES[slug], key=repr)


def test_price_notes_keep_the_limits_credits_and_conditions_the_seed_states():
    notes = dict(PriceItem.objects.values_list("item", "notes").filter(tool__slug="groq"))
    assert notes["gpt-oss-120b (free plan)"] == "30 requests per minute and 1,000 requests per day."
    together = PriceItem.objects.get(tool__slug="together-ai", item="Prepaid credit (first purchase)")
    assert "no free trial" in together.notes
    assert "Up to 50%" in PriceItem.objects.get(tool__slug="together-ai", item="Batch inference").notes
    assert "30 days" in PriceItem.objects.get(tool__slug="cerebras", item="Trial credit").notes
    assert {p.notes for p in PriceItem.objects.filter(tool__slug="cerebras", item__startswith="Cerebras Code")} == {
        "Listed as sold out."
    }
    assert "unlimited users" in PriceItem.objects.get(tool__slug="ollama", item="Ollama Cloud Team").notes


def test_every_price_item_and_caveat_has_a_source_and_every_price_a_date():
    assert not PriceItem.objects.filter(source__isnull=True).exists()
    # A price carries the date of the page it cites: the engine comparison's, or a provider's own page's.
    for price in PriceItem.objects.select_related("source"):
        assert price.verified_on == price.source.verified_on, price.item
    assert set(PriceItem.objects.filter(source__key="seed-002-engine-comparison").values_list(
        "verified_on", flat=True)) == {SEED_VERIFIED_ON}
    assert not Caveat.objects.filter(source__isnull=True).exists()
    for model in (HardwareSupport, ToolQuantFormat, ToolApiSurface, ToolFeature):
        assert not model.objects.filter(source__isnull=True).exists(), model.__name__


def test_the_rest_of_the_field_is_unrated_and_unpriced():
    unrated = Tool.objects.filter(slug__in=UNRATED)

    assert sorted(tool.slug for tool in unrated) == sorted(UNRATED)
    assert all(tool.rating is None and tool.rank is None and tool.rating_source is None for tool in unrated)
    assert not PriceItem.objects.filter(tool__rating__isnull=True).exists()
    assert Tool.objects.get(slug="mlx-lm").family == "MLX"


def test_licences_follow_the_seed_and_hosted_providers_are_proprietary_services():
    licences = dict(Tool.objects.filter(rating__isnull=False).values_list("slug", "licence__spdx_id"))

    assert licences == {
        "llama-cpp": "MIT", "vllm": "Apache-2.0", "ollama": "MIT", "together-ai": "proprietary-service",
        "sglang": "Apache-2.0", "mlx": "MIT", "fireworks-ai": "proprietary-service", "audio-cpp": "Apache-2.0",
        "colibri": "Apache-2.0", "tensorrt-llm": "Apache-2.0", "groq": "proprietary-service",
        "cerebras": "proprietary-service", "deepinfer": "Apache-2.0",
    }
    providers = Tool.objects.filter(kind=Tool.Kind.PROVIDER)
    assert {tool.slug for tool in providers} == {"together-ai", "fireworks-ai", "groq", "cerebras"}
    assert not any(tool.is_open_source for tool in providers)


def test_unconfirmed_repository_urls_are_left_blank_and_confirmed_ones_come_from_the_readme():
    assert Tool.objects.get(slug="deepinfer").repository_url == ""
    for slug, url in (
        ("audio-cpp", "https://github.com/0xShug0/audio.cpp"),
        ("colibri", "https://github.com/JustVugg/colibri"),
    ):
        tool = Tool.objects.get(slug=slug)
        readme = tool.sources.get(key=f"{slug}-readme")
        assert tool.repository_url == url
        assert readme.url.startswith(f"{url}/blob/") and readme.url.endswith("/README.md")


@pytest.mark.parametrize(
    ("slug", "spdx_id", "metadata"),
    [
        ("mlx-lm", "MIT", "mlx-lm-setup-py"),
        ("exllamav2", "MIT", "exllamav2-setup-py"),
        ("exllamav3", "MIT", "exllamav3-setup-py"),
        ("mlc-llm", "Apache-2.0", "mlc-llm-setup-py"),
        ("onnxruntime-genai", "MIT", "onnxruntime-genai-setup-py"),
        ("openvino-genai", "Apache-2.0", "openvino-genai-pyproject"),
        ("ctranslate2", "MIT", "ctranslate2-setup-py"),
    ],
)
def test_field_tool_licences_cite_the_package_metadata_that_states_them(slug, spdx_id, metadata):
    tool = Tool.objects.get(slug=slug)
    source = tool.sources.get(key=metadata)

    assert tool.licence.spdx_id == spdx_id
    assert tool.last_verified == source.verified_on
    # Pinned to the commit read: a full 40-hex commit in a GitHub blob URL.
    assert source.url.startswith("https://github.com/") and "/blob/" in source.url
    assert len(source.url.split("/blob/")[1].split("/")[0]) == 40


def test_ollama_keeps_its_rating_with_the_engine_guide_warning_beside_it():
    ollama = Tool.objects.get(slug="ollama")
    warning = ollama.caveats.get(key="engine-guide-says-do-not-use")

    assert ollama.rating == Decimal("4.6")
    assert warning.severity == Caveat.Severity.EDITORIAL
    assert warning.source.key == "seed-000-engine-guide"
    defaults = ollama.caveats.get(key="laptop-defaults")
    assert "4,096-token context" in defaults.title and "one request at a time" in defaults.title


@pytest.mark.parametrize(
    ("slug", "key", "severity", "source"),
    [
        ("llama-cpp", "rpc-backend-insecure", "security", "seed-000-engine-guide"),
        ("mlx", "mlx-lm-server-not-for-production", "warning", "seed-000-engine-guide"),
        ("mlx-lm", "server-not-for-production", "warning", "mlx-lm-server-doc"),
        ("tensorrt-llm", "cves-and-slow-releases", "security", "seed-002-engine-comparison"),
        ("sglang", "closed-network-only", "security", "seed-002-engine-comparison"),
        ("vllm", "needs-an-owner", "warning", "seed-002-engine-comparison"),
        ("ollama", "laptop-defaults", "warning", "seed-002-engine-comparison"),
        ("groq", "ownership-changed-models-shrank", "warning", "seed-002-engine-comparison"),
        ("cerebras", "code-plans-sold-out", "info", "seed-002-engine-comparison"),
        ("deepinfer", "reference-engine-not-an-api", "warning", "seed-002-engine-comparison"),
        ("hugging-face-tgi", "maintenance-mode", "warning", "tgi-readme"),
    ],
)
def test_seed_warnings_are_caveats_with_their_source(slug, key, severity, source):
    caveat = Caveat.objects.get(tool__slug=slug, key=key)

    assert (caveat.severity, caveat.source.key) == (severity, source)
    assert caveat.title and caveat.body


def gaps(slug: str) -> ToolApiSurface:
    return ToolApiSurface.objects.get(tool__slug=slug, api_surface__slug="openai-chat")


def test_documented_api_gaps_are_attached_with_public_sources():
    groq, cerebras, together = gaps("groq"), gaps("cerebras"), gaps("together-ai")

    assert "logprobs" in groq.gaps and "logit_bias" in groq.gaps and "rejected" in groq.gaps
    assert "developer-level instruction" in cerebras.gaps
    # The gap text is the row source's own; what other sources state sits in the checks, each with its source.
    assert "n is limited" not in cerebras.gaps and "response schema" not in cerebras.gaps
    assert {(check.check, check.source_key) for check in cerebras.documented_checks()} == {
        ("n", "seed-002-engine-comparison"), ("tools_with_json_schema", "seed-002-engine-comparison"),
        ("logprobs", "cerebras-docs-gpt-oss"), ("strict_tools", "cerebras-docs-gpt-oss"),
    }
    assert "<provider>/<model_name>" in together.gaps
    assert "tool" not in together.gaps
    assert "usage" not in gaps("fireworks-ai").gaps.lower()
    assert "extra fields are forbidden" in gaps("tensorrt-llm").gaps
    assert "flat object" in gaps("sglang").gaps
    for surface in (groq, cerebras, together, gaps("fireworks-ai")):
        assert surface.source.url.startswith("https://")


def test_structured_output_and_multi_lora_facts_of_sections_06_and_07():
    sglang = ToolFeature.objects.get(tool__slug="sglang", feature__slug="structured-output")
    assert "core feature" in sglang.notes
    together = ToolFeature.objects.get(tool__slug="together-ai", feature__slug="structured-output")
    assert "response_format" in together.notes
    fireworks = ToolFeature.objects.get(tool__slug="fireworks-ai", feature__slug="multi-lora")
    assert "base model's price" in fireworks.notes


def hardware(slug: str) -> dict[str, str]:
    return dict(HardwareSupport.objects.filter(tool__slug=slug).values_list("hardware__slug", "level"))


def test_hardware_support_follows_section_03_and_the_engine_guide():
    assert hardware("tensorrt-llm") == {"nvidia-cuda": "native"}
    assert hardware("groq") == {"groq-lpu": "provider"}
    assert hardware("cerebras") == {"cerebras-wse": "provider"}
    assert hardware("together-ai") == hardware("fireworks-ai") == {"nvidia-cuda": "provider"}
    assert hardware("mlx")["apple-silicon"] == "native"
    assert {"x86-cpu", "apple-silicon", "nvidia-cuda", "amd-rocm", "vulkan"} <= set(hardware("llama-cpp"))
    vllm = hardware("vllm")
    assert (vllm["nvidia-cuda"], vllm["amd-rocm"], vllm["google-tpu"]) == ("native", "native", "plugin")
    assert hardware("audio-cpp") == {
        "nvidia-cuda": "native", "amd-rocm": "partial", "apple-silicon": "partial", "vulkan": "partial",
    }
    assert hardware("colibri") == {
        "x86-cpu": "native", "arm-cpu": "partial", "nvidia-cuda": "native", "amd-rocm": "partial",
        "apple-silicon": "partial", "vulkan": "native",
    }
    readme_cited = HardwareSupport.objects.filter(tool__slug__in=["audio-cpp", "colibri"])
    assert {row.source.key for row in readme_cited} == {"audio-cpp-readme", "colibri-readme"}


def test_tensorrt_llm_tool_calling_cites_the_trtllm_serve_tool_parser_option():
    feature = ToolFeature.objects.get(tool__slug="tensorrt-llm", feature__slug="tool-calling")

    assert "--tool_parser" in feature.notes
    assert feature.source.key == "trtllm-serve-command"
    assert "/tensorrt_llm/commands/serve.py" in feature.source.url


def test_quantization_formats_carry_their_hardware_requirements():
    formats = {fmt.slug: fmt for fmt in QuantFormat.objects.all()}

    assert "Ada or Hopper" in formats["fp8"].hardware_requirement
    assert "Blackwell" in formats["nvfp4"].hardware_requirement
    assert "Blackwell" in formats["mxfp4"].hardware_requirement
    assert formats["nvfp4"].bits_per_weight == Decimal("4.5")
    assert formats["mxfp4"].bits_per_weight == Decimal("4.25")
    assert {"exl2", "exl3", "awq", "gptq", "gguf", "mlx", "int8", "int4", "bitsandbytes"} <= set(formats)
    gguf_tools = set(ToolQuantFormat.objects.filter(quant_format__slug="gguf").values_list("tool__slug", flat=True))
    assert {"llama-cpp", "ollama"} <= gguf_tools


@pytest.mark.parametrize(
    ("slug", "memory_gb", "bandwidth_gb_s", "target"),
    [
        ("nvidia-h100-sxm", "80", "3350", "nvidia-cuda"),
        ("nvidia-h200", "141", "4800", "nvidia-cuda"),
        ("amd-mi300x", "192", "5300", "amd-rocm"),
        ("apple-m3-ultra", "512", "819", "apple-silicon"),
        ("nvidia-rtx-4090", "24", "1008", "nvidia-cuda"),
    ],
)
def test_hardware_specs_match_the_vendor_figures(slug, memory_gb, bandwidth_gb_s, target):
    spec = HardwareSpec.objects.get(slug=slug)

    assert (spec.memory_gb, spec.bandwidth_gb_s) == (Decimal(memory_gb), Decimal(bandwidth_gb_s))
    assert spec.hardware_target.slug == target


def test_every_hardware_spec_cites_a_vendor_url_and_names_its_target():
    specs = list(HardwareSpec.objects.select_related("source", "hardware_target"))

    assert len(specs) >= 15
    for spec in specs:
        assert spec.source.url.startswith("https://"), spec.slug
        assert spec.hardware_target is not None, spec.slug
    assert all(spec.is_unified_memory for spec in specs if spec.vendor == "Apple")


def test_seed_sources_have_no_url_and_public_sources_do():
    seeds = Source.objects.filter(key__startswith="seed-")

    assert seeds.count() == 5
    assert set(seeds.values_list("url", flat=True)) == {""}
    assert Source.objects.get(key="seed-002-engine-comparison").verified_on == SEED_VERIFIED_ON
    unlinked = set(Source.objects.exclude(key__startswith="seed-").filter(url="").values_list("key", flat=True))
    assert unlinked == {"deepinfer-github"}
    for key in ("artificial-analysis-methodology", "vllm-docs-quantization", "sglang-docs-quantization",
                "tensorrt-llm-docs-quantization", "tensorrt-llm-docs-trtllm-serve", "groq-docs-openai",
                "cerebras-docs-openai", "together-docs-openai", "fireworks-docs-openai"):
        assert Source.objects.get(key=key).url.startswith("https://"), key


@pytest.mark.parametrize(
    ("slug", "feature", "source"),
    [
        ("fireworks-ai", "tool-calling", "fireworks-docs-responses-api"),
        ("fireworks-ai", "structured-output", "fireworks-docs-structured-outputs"),
        ("cerebras", "structured-output", "cerebras-docs-structured-outputs"),
        ("ollama", "tool-calling", "ollama-openai-compatibility"),
        ("ollama", "structured-output", "ollama-blog-structured-outputs"),
        ("tensorrt-llm", "structured-output", "tensorrt-llm-docs-guided-decoding"),
        ("lm-studio", "structured-output", "lmstudio-blog-mlx"),
    ],
)
def test_tool_calling_and_structured_output_facts_cite_the_vendors_docs(slug, feature, source):
    support = ToolFeature.objects.get(tool__slug=slug, feature__slug=feature)

    assert support.source.key == source
    assert support.source.url.startswith("https://")


@pytest.mark.parametrize(
    ("slug", "targets"),
    [
        ("ollama", {"nvidia-cuda", "amd-rocm", "apple-silicon", "vulkan", "x86-cpu"}),
        ("jan", {"nvidia-cuda", "apple-silicon", "x86-cpu"}),
        ("lm-studio", {"apple-silicon"}),
        ("ds4", {"apple-silicon", "nvidia-cuda", "amd-rocm"}),
    ],
)
def test_hardware_of_the_local_apps_comes_from_their_own_docs(slug, targets):
    supports = HardwareSupport.objects.filter(tool__slug=slug).select_related("source", "hardware")

    assert {support.hardware.slug for support in supports} == targets
    assert all(support.source.url for support in supports)


def test_ds4_licence_and_scope_come_from_its_repository():
    ds4 = Tool.objects.get(slug="ds4")

    assert ds4.licence.spdx_id == "MIT"
    assert "not GGUF files in general" in ds4.summary and "GLM" in ds4.summary
    assert {"ds4-readme", "ds4-licence"} <= set(ds4.sources.values_list("key", flat=True))


def test_facts_are_cited_to_the_seed_that_states_them():
    tensorrt = Caveat.objects.get(tool__slug="tensorrt-llm", key="awkward-outside-nvidia-datacenters")
    assert tensorrt.source.key == "seed-000-engine-guide" and "AMD, Apple or Intel" in tensorrt.body
    assert "AMD" not in Caveat.objects.get(tool__slug="tensorrt-llm", key="nvidia-only-compilation").body
