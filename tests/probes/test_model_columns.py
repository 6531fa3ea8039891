"""One metric per column on /providers/ and /models/<slug>/, one figure per metric of a tool and model on every page.

Time to first token and time to first answer token are separate columns; each cell holds the one figure every page
shows (scoring.figures), the column naming its publisher when all cells share one (mixed publishers otherwise,
each cell naming its own); a provider's own headline figure never sits in a column or a chart beside a
benchmark's."""
from __future__ import annotations

import datetime
import re
from html import unescape

import pytest
from django.conf import settings
from django.urls import reverse

from catalog.loading import load
from catalog.models import ReportedFigure, Tool
from probes.selectors.language_models import MEASURED, _choose_columns, model_comparison_get
from tests.probes.test_model_pages import _page

pytestmark = pytest.mark.django_db

REFERENCE = "gpt-oss-120b"


@pytest.fixture
def catalog():
    load(fixtures_dir=settings.BASE_DIR / "fixtures")


def _publishers(comparison, key: str) -> set[str]:
    return {row.columns[key].reported.publisher for row in comparison.providers if row.columns.get(key)}


def test_each_first_token_column_holds_one_metric_from_one_publisher(catalog):
    comparison = model_comparison_get(slug=REFERENCE)

    for key in ("ttft_ms", "ttfat_ms", "output_speed_tps"):
        figures = [row.columns[key] for row in comparison.providers if row.columns.get(key)]
        assert figures, key
        assert {figure.key for figure in figures} == {key}
        assert len(_publishers(comparison, key)) == 1, key
        assert comparison.columns[key].publisher in _publishers(comparison, key)
        assert not comparison.columns[key].mixed


def test_a_providers_own_headline_figure_is_in_no_column_and_no_chart(catalog):
    comparison = model_comparison_get(slug=REFERENCE)
    own = ReportedFigure.objects.get(key="groq-docs-gpt-oss-120b-token-speed")
    assert own.is_self_reported

    groq = next(row for row in comparison.providers if row.tool.slug == "groq")
    assert groq.output_speed is None
    assert all(row.output_speed.reported.publisher != row.tool.name for row in comparison.speed_price_points)
    assert all(figure.reported is None or not figure.reported.is_self_reported
               for row in comparison.rows for figure in row.columns.values() if figure)


def test_mixed_publishers_only_when_none_covers_every_row_and_each_cell_names_its_own(client, catalog):
    # A second publisher's time to first answer token for a provider the first one does not cover.
    ReportedFigure.objects.create(
        key="test-other-fireworks-ttfat", tool=Tool.objects.get(slug="fireworks-ai"),
        model=model_comparison_get(slug=REFERENCE).model, metric="time_to_first_answer_token", value="2.5",
        publisher="Another benchmark", url="https://example.org/bench", observed_on=datetime.date(2026, 11, 1),
        verified_on=datetime.date(2026, 12, 3),
    )
    comparison = model_comparison_get(slug=REFERENCE)

    assert comparison.columns["ttfat_ms"].mixed and comparison.columns["ttfat_ms"].publisher is None
    assert _publishers(comparison, "ttfat_ms") == {"Artificial Analysis", "Another benchmark"}
    page = unescape(_page(client, reverse("probes:model-detail", args=[REFERENCE])))
    assert "publishers differ by row, each named" in page


def test_a_measured_column_counts_as_one_publisher(catalog):
    comparison = model_comparison_get(slug=REFERENCE)
    for row in comparison.providers:
        row.measured = {"ttft_ms": 120.0}

    chosen = _choose_columns(comparison.providers)
    assert chosen["ttft_ms"].publisher == MEASURED
    assert {row.columns["ttft_ms"].evidence for row in comparison.providers} == {MEASURED}


@pytest.mark.parametrize("url", [reverse("probes:providers"), f"/models/{REFERENCE}/"])
def test_pages_show_separate_columns_naming_their_publisher(client, catalog, url):
    page = unescape(_page(client, url))

    table = re.search(rf'<table class="model-table[^"]*" data-model-table="{REFERENCE}".*?</table>', page,
                      re.S).group(0)
    headings = re.findall(r'<th scope="col"[^>]*data-column="([^"]+)"[^>]*>(.*?)</th>', table, re.S)
    assert [key for key, _ in headings] == ["output_speed_tps", "ttft_ms", "ttfat_ms"]
    text = {key: re.sub(r"<[^>]+>", " ", heading) for key, heading in headings}
    assert "Time to first token" in text["ttft_ms"] and "all reported by Vercel" in text["ttft_ms"]
    assert "Time to first answer token" in text["ttfat_ms"]
    assert "all reported by Artificial Analysis" in text["ttfat_ms"]
    groq = re.search(r'<tr data-tool="groq">(.*?)</tr>', table, re.S).group(1)
    assert "Groq</a> on" not in groq, "Groq's own headline speed is not in the table"


def test_one_figure_per_metric_of_a_provider_and_model_on_every_page_naming_its_publisher(client, catalog):
    # Three publishers reported Fireworks AI's output speed for gpt-oss-120b; every page shows the same one.
    fireworks = {figure.publisher: figure.value for figure in ReportedFigure.objects.filter(
        tool__slug="fireworks-ai", model__slug=REFERENCE, metric="output_speed")}
    assert len(fireworks) == 3
    expected = f"{float(fireworks['Artificial Analysis']):g}"

    row = next(row for row in model_comparison_get(slug=REFERENCE).rows if row.tool.slug == "fireworks-ai")
    assert (row.output_speed.reported.publisher, f"{row.output_speed.value:g}") == ("Artificial Analysis", expected)

    model_page = unescape(_page(client, f"/models/{REFERENCE}/"))
    cell = re.search(r'<tr data-tool="fireworks-ai">.*?data-label="Output speed"[^>]*>(.*?)</td>', model_page,
                     re.S).group(1)
    assert f'<data value="{expected}">' in cell and "Artificial Analysis" in cell

    tool_page = unescape(_page(client, "/tools/fireworks-ai/"))
    figures = re.search(r"<table[^>]*data-tool-figures>.*?</table>", tool_page, re.S).group(0)
    speed = re.search(r'data-label="Output speed"[^>]*>(.*?)</td>', figures, re.S).group(1)
    assert f'<data value="{expected}">' in speed and "Artificial Analysis" in speed

    answer = client.get("/api/v1/recommendations/", {"hardware": "none", "hosted_ok": "true"}).json()
    reasons = [reason["text"] for item in answer["results"] if item["tool"] == "fireworks-ai"
               for reason in item["reasons"] if "output speed" in reason["text"]]
    assert reasons and all(f"output speed {expected} tokens/s" in text and "Artificial Analysis" in text
                           for text in reasons), reasons
    wizard = unescape(_page(client, "/recommend/?hardware=none&hosted_ok=on"))
    assert f"output speed {expected} tokens/s" in wizard
    for other in (value for publisher, value in fireworks.items() if publisher != "Artificial Analysis"):
        assert f"output speed {float(other):g} tokens/s" not in wizard
