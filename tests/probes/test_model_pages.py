"""Model comparisons on a freshly loaded catalog with no probe run: /providers/, /models/, /models/<slug>/ and
/api/v1/models/ (+CSV) show the same rows, the same prices for the same model and sourced reported figures."""
import csv
import html
import io
import re
from decimal import Decimal

import pytest
from django.conf import settings
from django.urls import reverse

from catalog.loading import load
from catalog.models import ModelOffering, PriceItem, ReportedFigure, Source, Tool
from probes.models import ProbeRun
from probes.selectors.language_models import MEASURED, REPORTED, model_comparison_get
from tests import factories
from tests.probes.dashboard_data import make_measured_target

pytestmark = pytest.mark.django_db

FIXTURES_DIR = settings.BASE_DIR / "fixtures"
REFERENCE = "gpt-oss-120b"
PROVIDERS = {"groq", "cerebras", "together-ai", "fireworks-ai"}


@pytest.fixture
def catalog():
    load(fixtures_dir=FIXTURES_DIR)
    assert not ProbeRun.objects.exists()


def _page(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _section(page: str, model: str) -> str:
    return re.search(rf'<section class="model-comparison" id="model-{model}".*?</section>', page, re.S).group(0)


def _table_rows(fragment: str, table: str = "data-model-table") -> list[tuple[str, str]]:
    tables = re.findall(rf"<table[^>]*{table}[^>]*>.*?</table>", fragment, re.S)
    return [
        (slug, row)
        for table_html in tables
        for slug, row in re.findall(r'<tr data-tool="([^"]+)">(.*?)</tr>', table_html, re.S)
    ]


def _reference_price(tool_slug: str) -> PriceItem:
    return PriceItem.objects.get(
        tool__slug=tool_slug, model__slug=REFERENCE, unit=PriceItem.Unit.PER_MTOK, tier=PriceItem.Tier.ON_DEMAND
    )


def _usd(value: Decimal) -> str:
    text = f"{value.normalize():f}"
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def test_providers_page_opens_with_a_gpt_oss_120b_table_of_all_four_providers_and_sourced_figures(client, catalog):
    page = _page(client, reverse("probes:providers"))

    first_section = re.search(r'<section class="model-comparison" id="model-([^"]+)"', page).group(1)
    assert first_section == REFERENCE
    rows = dict(_table_rows(_section(page, REFERENCE)))
    assert set(rows) == PROVIDERS

    catalog_urls = set(Source.objects.exclude(url="").values_list("url", flat=True))
    with_figures = set()
    for slug, row in rows.items():
        price = _reference_price(slug)
        assert f"{_usd(price.input_usd_per_mtok)} / {_usd(price.output_usd_per_mtok)}" in row, slug
        figures = ReportedFigure.objects.filter(tool__slug=slug, model__slug=REFERENCE)
        links = set(re.findall(r'<a href="([^"]+)" rel="noopener" data-source-link>', row))
        if figures.exists():
            with_figures.add(slug)
            assert 'data-evidence="reported"' in row and "reported by" in row, slug
            assert links, slug
            for url in links:
                # Every link goes to the page a stored figure names, a page the catalog cites with its dates.
                assert url.startswith("https://") and url in set(figures.values_list("url", flat=True)), url
                assert url in catalog_urls, url
        else:
            assert "none measured or reported" in row, slug
    # Nothing is estimated: a provider without a published figure says so instead of showing a number.
    # Together AI is the one provider no stored public page gives a figure for (docs/catalog-data.md,
    # "Reported figures"); once one is sourced, this becomes every provider.
    assert with_figures == PROVIDERS - {"together-ai"}
    assert "none measured or reported" in rows["together-ai"]
    assert "Measured by this site" in page and "has a\n    probe run on this site yet" in page


def test_every_price_in_a_model_table_is_for_that_model(client, catalog):
    page = _page(client, reverse("probes:providers"))

    small = dict(_table_rows(_section(page, "gpt-oss-20b")))
    assert set(small) == {"groq"}
    assert "$0.075 / $0.30" in small["groq"]
    assert "$0.075" not in dict(_table_rows(_section(page, REFERENCE)))["groq"]


def test_model_page_lists_all_four_providers_cheapest_first_then_the_engines(client, catalog):
    page = _page(client, reverse("probes:model-detail", args=[REFERENCE]))

    rows = [slug for slug, _ in _table_rows(page)]
    providers = [slug for slug in rows if slug in PROVIDERS]
    assert set(providers) == PROVIDERS
    blended = [3 * _reference_price(slug).input_usd_per_mtok + _reference_price(slug).output_usd_per_mtok
               for slug in providers]
    assert blended == sorted(blended)
    engines = set(
        ModelOffering.objects.filter(model__slug=REFERENCE).exclude(tool__kind=Tool.Kind.PROVIDER)
        .values_list("tool__slug", flat=True)
    )
    assert rows == providers + sorted(engines, key=lambda slug: Tool.objects.get(slug=slug).name.lower())
    assert f'href="{reverse("catalog:tool_detail", args=["groq"])}"' in page


def test_model_page_api_and_csv_agree_row_for_row(client, catalog):
    page = _page(client, reverse("probes:model-detail", args=[REFERENCE]))
    api = client.get(reverse("api:model-detail", args=[REFERENCE])).json()
    exported = list(csv.DictReader(io.StringIO(client.get(
        reverse("api:model-detail", args=[REFERENCE]), {"format": "csv"}
    ).content.decode())))

    page_rows = _table_rows(page)
    assert [slug for slug, _ in page_rows] == [row["tool"] for row in api["results"]] == [row["tool"] for row in exported]
    assert api["count"] == len(page_rows) and api["model"]["slug"] == REFERENCE
    for (slug, page_row), api_row, csv_row in zip(page_rows, api["results"], exported, strict=True):
        assert (api_row["input_usd_per_mtok"] or "") == csv_row["input_usd_per_mtok"]
        assert (api_row["blended_usd_per_mtok"] or "") == csv_row["blended_usd_per_mtok"]
        if api_row["input_usd_per_mtok"] is not None:
            assert f'{_usd(Decimal(api_row["input_usd_per_mtok"]))} / {_usd(Decimal(api_row["output_usd_per_mtok"]))}' in page_row
        speed = api_row["output_speed_tps"]
        if speed is None:
            assert csv_row["output_speed_tps.value"] == ""
        else:
            assert float(csv_row["output_speed_tps.value"]) == speed["value"]
            assert f'<data value="{speed["value"]:.15g}">' in page_row
            assert speed["evidence"] == REPORTED and html.escape(speed["url"]) in page_row


def test_model_index_page_and_api_agree(client, catalog):
    page = _page(client, reverse("probes:model-list"))
    api = client.get(reverse("api:model-list")).json()
    exported = list(csv.DictReader(io.StringIO(
        client.get(reverse("api:model-list"), {"format": "csv"}).content.decode()
    )))

    page_models = re.findall(r'<tr data-model="([^"]+)">', page)
    assert page_models[0] == REFERENCE
    assert page_models == [row["slug"] for row in api["results"]] == [row["slug"] for row in exported]
    reference = api["results"][0]
    assert reference["provider_count"] == 4
    assert reference["cheapest_blended_usd_per_mtok"] == "0.2625"
    assert reference["fastest_provider"] == "cerebras"
    assert reference["fastest_output_speed_tps"]["evidence"] == REPORTED


def test_unknown_model_is_a_404_on_the_page_and_in_the_api_error_shape(client, catalog):
    assert client.get(reverse("probes:model-detail", args=["no-such-model"])).status_code == 404
    response = client.get(reverse("api:model-detail", args=["no-such-model"]))
    assert response.status_code == 404
    assert 'No model with the slug "no-such-model"' in response.json()["error"]["message"]


def test_tool_page_links_the_models_it_serves_and_shows_its_reported_figures(client, catalog):
    page = _page(client, reverse("catalog:tool_detail", args=["cerebras"]))

    models = re.search(r'<ul class="model-links" data-model-links>.*?</ul>', page, re.S).group(0)
    for slug in ModelOffering.objects.filter(tool__slug="cerebras").values_list("model__slug", flat=True):
        assert f'href="{reverse("probes:model-detail", args=[slug])}"' in models
    reported = re.search(r"<table[^>]*data-reported-figures.*?</table>", page, re.S).group(0)
    for figure in ReportedFigure.objects.filter(tool__slug="cerebras"):
        assert f'data-figure="{figure.key}"' in reported
        assert html.escape(figure.url) in reported


def test_a_measured_median_is_the_one_figure_of_its_metric(catalog, now):
    groq = Tool.objects.get(slug="groq")
    make_measured_target(now=now, slug="groq-live", name="Groq live", tool=groq, ttft=210.0,
                         speed=455.5, e2e=1500.0, model_id="openai/gpt-oss-120b")

    row = next(row for row in model_comparison_get(slug=REFERENCE).rows if row.tool.slug == "groq")

    assert (row.output_speed.evidence, row.output_speed.value) == (MEASURED, 455.5)
    assert row.output_speed.workload == "in-1k"
    # This site's measurement speaks for the metric before any publisher's (Vercel reported one too).
    assert (row.ttft.key, row.ttft.evidence, row.ttft.value) == ("ttft_ms", MEASURED, 210.0)


def _grow(count: int) -> None:
    model = factories.LanguageModelFactory(slug="grown-model", name="Grown model")
    for index in range(count):
        tool = factories.ToolFactory(slug=f"grown-{index}", name=f"Grown {index}", kind=Tool.Kind.PROVIDER)
        factories.ModelOfferingFactory(tool=tool, model=model)
        factories.PriceItemFactory(tool=tool, model=model, item="Grown model", unit=PriceItem.Unit.PER_MTOK,
                                   input_usd_per_mtok=Decimal("0.1"), output_usd_per_mtok=Decimal("0.4"))
        factories.ReportedFigureFactory(tool=tool, model=model)
        target = factories.ProbeTargetFactory(slug=f"grown-target-{index}", tool=tool, model_id="grown-model")
        factories.MeasurementSummaryFactory(target=target, workload="in-100")


@pytest.mark.parametrize("count", [1, 8])
@pytest.mark.parametrize(
    ("name", "args", "queries"),
    [
        # The comparison read model: models, offerings, prices, reported figures, documented checks, probe
        # targets, summaries, compat outcomes.
        ("probes:model-list", (), 8),
        ("probes:model-detail", ("grown-model",), 9),  # the published engine curves beside the table
        ("api:model-list", (), 8),
        ("api:model-detail", ("grown-model",), 8),
        # The same eight, then the measured dashboard's own five.
        ("probes:providers", (), 13),
    ],
)
def test_model_pages_and_endpoints_query_count_is_constant(client, django_assert_num_queries, count, name, args,
                                                           queries, settings):
    settings.READ_CACHE_SECONDS = 0
    _grow(count)
    with django_assert_num_queries(queries):
        response = client.get(reverse(name, args=args))
    assert response.status_code == 200


def test_cached_providers_page_varies_with_the_key_variables_this_process_sees(client, settings, monkeypatch):
    settings.READ_CACHE_SECONDS = 300
    monkeypatch.delenv("ATLAS_VARY_API_KEY", raising=False)
    tool = factories.ToolFactory(slug="groq", name="Groq", kind=Tool.Kind.PROVIDER)
    factories.ProbeTargetFactory(slug="groq-vary", name="Groq vary", tool=tool, api_key_env="ATLAS_VARY_API_KEY")

    unset = client.get(reverse("probes:providers"))
    again = client.get(reverse("probes:providers"))
    monkeypatch.setenv("ATLAS_VARY_API_KEY", "sk-value-never-shown")
    configured = client.get(reverse("probes:providers"))

    assert (unset["X-Page-Cache"], again["X-Page-Cache"], configured["X-Page-Cache"]) == ("miss", "hit", "miss")
    assert 'data-not-configured="groq-vary"' in again.content.decode()
    assert 'data-not-configured="groq-vary"' not in configured.content.decode()
    assert "sk-value-never-shown" not in configured.content.decode()
