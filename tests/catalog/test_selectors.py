from decimal import Decimal

import pytest

from catalog.models import HardwareSupport, PriceItem, Tool
from catalog.selectors import CompareError, compare_parse_slugs, headline_price_value, tool_compare, tool_get, tool_list
from tests.factories import (
    CaveatFactory,
    FeatureFactory,
    HardwareSupportFactory,
    HardwareTargetFactory,
    LanguageModelFactory,
    LicenceFactory,
    PriceItemFactory,
    QuantFormatFactory,
    ToolFactory,
)

pytestmark = pytest.mark.django_db


def slugs(queryset) -> list[str]:
    return [tool.slug for tool in queryset]


@pytest.fixture
def proprietary():
    return LicenceFactory(spdx_id="proprietary-service", name="Proprietary service", is_open_source=False)


@pytest.fixture
def small_catalog(proprietary):
    cuda = HardwareTargetFactory(slug="nvidia-cuda", name="NVIDIA CUDA")
    apple = HardwareTargetFactory(slug="apple-silicon", name="Apple silicon")
    lpu = HardwareTargetFactory(slug="groq-lpu", name="Groq LPU")
    batching = FeatureFactory(slug="continuous-batching", name="Continuous batching")
    mit = LicenceFactory(spdx_id="MIT", name="MIT License", is_open_source=True)

    llama = ToolFactory(slug="llama-cpp", name="llama.cpp", rating=Decimal("4.8"), rank=1, licence=mit,
                        summary="C/C++ inference for GGUF models.")
    vllm = ToolFactory(slug="vllm", name="vLLM", rating=Decimal("4.7"), rank=2, verdict="The multi-user server.")
    mlx = ToolFactory(slug="mlx", name="MLX", rating=Decimal("4.4"), rank=6, licence=mit)
    groq = ToolFactory(slug="groq", name="Groq", kind=Tool.Kind.PROVIDER, rating=Decimal("4.0"), rank=11,
                       licence=proprietary)
    cerebras = ToolFactory(slug="cerebras", name="Cerebras", kind=Tool.Kind.PROVIDER, rating=Decimal("4.0"),
                           rank=12, licence=proprietary)
    tgi = ToolFactory(slug="tgi", name="Hugging Face TGI", rating=None, family="Hugging Face")
    quote_only = ToolFactory(slug="quote-only", name="Quote Only", kind=Tool.Kind.PROVIDER, licence=proprietary)

    for tool in (llama, vllm, tgi):
        HardwareSupportFactory(tool=tool, hardware=cuda)
    HardwareSupportFactory(tool=llama, hardware=apple)
    HardwareSupportFactory(tool=mlx, hardware=apple)
    HardwareSupportFactory(tool=groq, hardware=lpu, level=HardwareSupport.Level.PROVIDER)
    vllm.feature_support.create(feature=batching)
    tgi.feature_support.create(feature=batching)

    reference = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    smaller = LanguageModelFactory(slug="gpt-oss-20b", name="gpt-oss-20b")
    PriceItemFactory(tool=groq, item="gpt-oss-120b", model=reference, input_usd_per_mtok=Decimal("0.15"),
                     output_usd_per_mtok=Decimal("0.60"))
    PriceItemFactory(tool=groq, item="gpt-oss-20b", model=smaller, input_usd_per_mtok=Decimal("0.075"),
                     output_usd_per_mtok=Decimal("0.30"))
    PriceItemFactory(tool=groq, item="batch", tier=PriceItem.Tier.BATCH, input_usd_per_mtok=Decimal("0.01"),
                     output_usd_per_mtok=Decimal("0.02"))
    PriceItemFactory(tool=cerebras, item="gpt-oss-120b", model=reference, input_usd_per_mtok=Decimal("0.35"),
                     output_usd_per_mtok=Decimal("0.75"))
    PriceItemFactory(tool=quote_only, item="Dedicated", unit=PriceItem.Unit.QUOTE, input_usd_per_mtok=None,
                     output_usd_per_mtok=None)
    return {"cuda": cuda, "apple": apple}


def test_headline_price_is_the_reference_model_even_where_a_smaller_model_is_cheaper(small_catalog):
    groq = tool_list().get(slug="groq")
    assert headline_price_value(groq) == {
        "free": False, "item": "gpt-oss-120b", "model": "gpt-oss-120b", "model_name": "gpt-oss-120b",
        "is_reference_model": True, "input_usd_per_mtok": "0.15", "output_usd_per_mtok": "0.6",
        "blended_usd_per_mtok": "0.2625",
    }
    assert headline_price_value(tool_list().get(slug="vllm"))["free"] is True
    assert headline_price_value(tool_list().get(slug="quote-only")) is None


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        # The default sort: rating, then rank, then the unrated by name.
        (None, ["llama-cpp", "vllm", "mlx", "groq", "cerebras", "tgi", "quote-only"]),
        ({"sort": "name"}, ["cerebras", "groq", "tgi", "llama-cpp", "mlx", "quote-only", "vllm"]),  # ignores case
        # Free first, then the cheapest reference-model price, unknown prices last.
        ({"sort": "price"}, ["llama-cpp", "vllm", "mlx", "tgi", "groq", "cerebras", "quote-only"]),
        ({"kind": Tool.Kind.PROVIDER}, ["groq", "cerebras", "quote-only"]),
        ({"hardware": "apple-silicon"}, ["llama-cpp", "mlx"]),
        ({"hardware": "nvidia-cuda"}, ["llama-cpp", "vllm", "tgi"]),
        ({"licence": "MIT"}, ["llama-cpp", "mlx"]),
        ({"feature": "continuous-batching"}, ["vllm", "tgi"]),
        ({"open_source": False}, ["groq", "cerebras", "quote-only"]),
        ({"open_source": True}, ["llama-cpp", "vllm", "mlx", "tgi"]),
        ({"min_rating": Decimal("4.5")}, ["llama-cpp", "vllm"]),
        ({"q": "gguf"}, ["llama-cpp"]),
        ({"q": "multi-user"}, ["vllm"]),
        ({"q": "hugging"}, ["tgi"]),
        ({"hardware": "nvidia-cuda", "feature": "continuous-batching", "sort": "name"}, ["tgi", "vllm"]),
    ],
)
def test_sorts_and_filters(small_catalog, filters, expected):
    assert slugs(tool_list(filters=filters)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apple", ["mlx", "llama-cpp"]),  # hardware name; MLX also by its name (an Apple-silicon word)
        ("groq-lpu", ["groq"]),  # hardware slug
        ("batching", ["vllm", "tgi"]),  # feature name
        ("provider", ["groq", "cerebras", "quote-only"]),  # kind
        ("Hosted provider", ["groq", "cerebras", "quote-only"]),  # kind, as the page words it
    ],
)
def test_search_matches_hardware_features_and_kind(small_catalog, text, expected):
    assert slugs(tool_list(filters={"q": text})) == expected


def test_search_for_a_format_finds_every_tool_that_lists_it(small_catalog):
    gguf = QuantFormatFactory(slug="gguf", name="GGUF")
    for slug in ("vllm", "mlx"):
        Tool.objects.get(slug=slug).quant_format_support.create(quant_format=gguf)

    # Listing the format counts for more than naming it in a summary (llama.cpp's, in this small catalog).
    assert slugs(tool_list(filters={"q": "gguf"})) == ["vllm", "mlx", "llama-cpp"]


def test_tool_get_raises_for_unknown_slug():
    with pytest.raises(Tool.DoesNotExist):
        tool_get(slug="nope")


@pytest.mark.parametrize(
    ("raw", "code", "fragment"),
    [
        ("", "empty", "Choose 2 to 4 tools"),
        (" , ,", "empty", "Choose 2 to 4 tools"),
        ("vllm", "too_few", "Only one tool was chosen (vllm)"),
        ("vllm,groq,mlx,cerebras,tgi", "too_many", "5 tools were chosen; at most 4"),
        ("vllm,groq,vllm", "duplicate", "repeated: vllm"),
        ("vllm,ghost,phantom", "unknown", "No tool with the slug: ghost, phantom."),
    ],
)
def test_compare_parse_rejects_bad_requests(small_catalog, raw, code, fragment):
    with pytest.raises(CompareError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as error:
        compare_parse_slugs(raw)
    assert error.value.code == code


def test_compare_parse_accepts_commas_and_repeated_values(small_catalog):
    assert compare_parse_slugs(["vllm", "Groq, mlx"]) == ["vllm", "groq", "mlx"]
    assert compare_parse_slugs("llama-cpp,vllm") == ["llama-cpp", "vllm"]


def _grow_catalog(count: int) -> None:
    hardware = HardwareTargetFactory(slug="nvidia-cuda")
    feature = FeatureFactory(slug="prefix-caching")
    for index in range(count):
        tool = ToolFactory(slug=f"grown-{index}", rating=Decimal("4.0") if index % 2 else None)
        HardwareSupportFactory(tool=tool, hardware=hardware)
        HardwareSupportFactory(tool=tool)
        tool.feature_support.create(feature=feature)
        PriceItemFactory(tool=tool)
        PriceItemFactory(tool=tool, unit=PriceItem.Unit.PER_HOUR, amount_usd=Decimal("2.5"))
        CaveatFactory(tool=tool)
        tool.sources.add(tool.caveats.first().source)


@pytest.mark.parametrize("count", [5, 50])
def test_list_and_detail_and_compare_query_counts_are_constant(count, django_assert_num_queries):
    _grow_catalog(count)
    with django_assert_num_queries(2):  # tools with headline prices + hardware prefetch
        rows = list(tool_list(filters={"sort": "price", "hardware": "nvidia-cuda"}))
        for tool in rows:
            [support.hardware.name for support in tool.hardware_support.all()]
            tool.licence and tool.licence.spdx_id
    assert len(rows) == count
    with django_assert_num_queries(11):  # tool + 10 prefetches (with its models, reported figures and absences)
        tool = tool_get(slug="grown-3")
        tool_compare_ready = [list(tool.price_items.all()), list(tool.caveats.all()), list(tool.sources.all())]
    assert all(tool_compare_ready)
    with django_assert_num_queries(10):  # slug check + tool + 8 prefetches
        slugs_ = compare_parse_slugs("grown-0,grown-1,grown-2,grown-3")
        compared = tool_compare(slugs=slugs_)
    assert len(compared) == 4


def test_price_sort_ranks_another_models_price_after_the_reference_model_however_cheap(small_catalog):
    hosted_open = ToolFactory(slug="hosted-open", name="Hosted Open")  # Apache-2.0, open source
    PriceItemFactory(tool=hosted_open, item="big-model", input_usd_per_mtok=Decimal("0.05"),
                     output_usd_per_mtok=Decimal("0.10"))
    ordered = slugs(tool_list(filters={"sort": "price"}))
    assert ordered.index("tgi") < ordered.index("groq") < ordered.index("cerebras") < ordered.index("hosted-open")
    headline = headline_price_value(tool_list().get(slug="hosted-open"))
    assert (headline["output_usd_per_mtok"], headline["model"], headline["is_reference_model"]) == ("0.1", None, False)


def test_price_sort_never_compares_two_different_models(proprietary):
    """Among rows whose order the price decides, every price is for the reference model; rows priced on
    another model follow in rating-then-name order, whatever their price."""
    reference = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    others = [LanguageModelFactory(slug=f"other-{n}", name=f"Other {n}") for n in range(3)]
    prices = [Decimal(cents) / 100 for cents in (73, 12, 55, 8, 91, 30, 47, 5, 64, 21, 39, 16)]
    for n, output in enumerate(prices):
        tool = ToolFactory(slug=f"provider-{n:02d}", name=f"Provider {n:02d}", kind=Tool.Kind.PROVIDER,
                           licence=proprietary, rating=Decimal("4.0") if n % 2 else None)
        model = reference if n % 3 == 0 else others[n % len(others)]
        PriceItemFactory(tool=tool, item=model.name, model=model, input_usd_per_mtok=output / 4,
                         output_usd_per_mtok=output)
        if n % 4 == 1:  # a cheaper price of another model beside the reference price
            PriceItemFactory(tool=tool, item="small", model=others[0], input_usd_per_mtok=Decimal("0.01"),
                             output_usd_per_mtok=Decimal("0.01"))

    rows = [headline_price_value(tool) for tool in tool_list(filters={"sort": "price"})]

    ranked_by_price = [row for row in rows if row["is_reference_model"]]
    assert ranked_by_price == rows[: len(ranked_by_price)]
    assert {row["model"] for row in ranked_by_price} == {"gpt-oss-120b"}
    blended = [Decimal(row["blended_usd_per_mtok"]) for row in ranked_by_price]
    assert blended == sorted(blended)
    rest = tool_list(filters={"sort": "price"})[len(ranked_by_price):]
    assert [(tool.rating is None, tool.name) for tool in rest] == sorted((tool.rating is None, tool.name) for tool in rest)
