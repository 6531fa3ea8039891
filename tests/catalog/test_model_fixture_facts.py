"""The model, offering and reported-figure fixtures as loaded: every figure sourced, every price tied to its model."""
import datetime

import pytest

from catalog.models import ModelOffering, PriceItem, ReportedFigure

pytestmark = pytest.mark.django_db

PROVIDERS = ("groq", "cerebras", "together-ai", "fireworks-ai")


def test_every_reported_figure_names_publisher_https_link_and_dates(real_catalog):
    figures = list(ReportedFigure.objects.all())

    assert len(figures) >= 10
    for figure in figures:
        assert figure.publisher.strip(), figure.key
        assert figure.url.startswith("https://"), figure.key
        assert figure.observed_on <= figure.verified_on <= datetime.date.today(), figure.key


def test_all_four_providers_offer_gpt_oss_120b_with_a_price_for_that_model(real_catalog):
    offerings = ModelOffering.objects.filter(model__slug="gpt-oss-120b", tool__slug__in=PROVIDERS)
    prices = {
        price.tool.slug: (price.input_usd_per_mtok, price.output_usd_per_mtok)
        for price in PriceItem.objects.filter(
            model__slug="gpt-oss-120b", unit=PriceItem.Unit.PER_MTOK, tier=PriceItem.Tier.ON_DEMAND
        ).select_related("tool")
    }

    assert sorted(offering.tool.slug for offering in offerings) == sorted(PROVIDERS)
    assert {slug: (str(i), str(o)) for slug, (i, o) in prices.items()} == {
        "groq": ("0.1500", "0.6000"),
        "cerebras": ("0.3500", "0.7500"),
        "together-ai": ("0.1500", "0.6000"),
        "fireworks-ai": ("0.1500", "0.6000"),
    }


def test_every_per_token_price_names_the_model_it_prices(real_catalog):
    unlinked = PriceItem.objects.filter(unit=PriceItem.Unit.PER_MTOK, model__isnull=True)

    assert list(unlinked.values_list("tool__slug", "item")) == []


def test_seed_001_engine_figures_keep_their_hardware_and_publisher(real_catalog):
    vllm = ReportedFigure.objects.get(key="osman-vllm-2x-rtx-3090")
    sglang = ReportedFigure.objects.get(key="osman-sglang-rtx-pro-6000")

    assert (vllm.tool.slug, vllm.hardware.slug, vllm.device_count, vllm.value) == ("vllm", "nvidia-rtx-3090", 2, 64)
    assert (sglang.tool.slug, sglang.hardware.slug, sglang.device_count, sglang.value) == (
        "sglang", "nvidia-rtx-pro-6000-blackwell", 1, 110,
    )
    assert vllm.publisher == sglang.publisher == "Ahmad Osman"
    assert vllm.source.key == "seed-001-engine-lesson"
