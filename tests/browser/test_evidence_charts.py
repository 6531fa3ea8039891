"""The published-evidence pages in a real headless Chromium: one line per series of a comparison, joining only that
series' own sweep, the points those of its table; without JavaScript the table is all there is, and it holds every
point. A burst comparison (every prompt at once) is labelled so, ranked by the publisher's figure, and draws no
line between unrelated runs; the matrix lists comparisons, on a phone as on a desktop."""
import json

import pytest
from django.core.management import call_command

from tests.browser.conftest import DESKTOP_VIEWPORT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# dstack's DeepSeek-R1 sweeps of 4 to 128 concurrent requests, three engines.
PATH = "/engines/evidence/deepseek-r1/nvidia-h200/"
BURST_PATH = "/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/"


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def test_each_comparison_draws_one_series_per_engine_and_version(live_server, loaded_catalog, page, screenshot):
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))

    page.goto(f"{live_server.url}{PATH}", wait_until="load")
    page.wait_for_selector("figure.evidence-chart.is-drawn canvas")
    screenshot(page, "drawn")

    figures = page.locator("figure[data-evidence-chart]")
    assert figures.count() >= 1
    for index in range(figures.count()):
        figure = figures.nth(index)
        data_id = figure.get_attribute("data-evidence-chart")
        section = page.locator(f'section[data-comparison="{data_id}"]')
        published = json.loads(page.locator(f"script#{data_id}").text_content())
        drawn = figure.locator("canvas").evaluate(
            "canvas => Chart.getChart(canvas).data.datasets.map(d => [d.label, d.data.length])")
        expected = [[series["label"] + (" (measured here)" if series["measured_here"] else ""),
                     len(series["points"])] for series in published["series"] if series["points"]]
        assert sorted(map(tuple, drawn)) == sorted(map(tuple, expected))
        assert len({label for label, _ in drawn}) == len(drawn)  # one line per series
        assert section.locator("tbody[data-series]").count() == len(published["series"])
    engines = set(page.locator("figure.evidence-chart.is-drawn").first.locator("canvas").evaluate(
        "canvas => Chart.getChart(canvas).data.datasets.map(d => d.label.split(' ')[0])"))
    assert {"vLLM", "SGLang", "TensorRT-LLM"} <= engines
    assert problems == []


def test_without_javascript_the_tables_hold_every_point(live_server, loaded_catalog, browser, screenshot):
    context = browser.new_context(viewport=DESKTOP_VIEWPORT, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}{PATH}", wait_until="load")
        screenshot(page, "no-js")

        assert page.locator("figure[data-evidence-chart]").first.is_hidden()
        for script in page.locator("script[type='application/json']").all():
            data = json.loads(script.text_content())
            section = page.locator(f'section[data-comparison="{script.get_attribute("id")}"]')
            assert section.locator("tbody[data-series]").count() == len(data["series"])
            assert section.locator("tbody[data-series] tr").count() >= sum(
                len(series["points"]) for series in data["series"])
            for series in data["series"]:
                assert series["label"] in section.locator("table").inner_text()
        assert page.locator("table.evidence-table").first.is_visible()
    finally:
        context.close()


@pytest.mark.parametrize("viewport", ["page", "phone_page"])
def test_a_burst_comparison_is_labelled_ranked_by_total_throughput_and_draws_no_line(
        live_server, loaded_catalog, request, screenshot, viewport):
    page = request.getfixturevalue(viewport)
    page.goto(f"{live_server.url}{BURST_PATH}", wait_until="load")
    screenshot(page, "burst")
    section = page.locator("section.evidence-comparison[data-mode='burst']").filter(
        has_text="1× NVIDIA H100 SXM").filter(has_text="ShareGPT · 1,000 prompts at once").first
    assert section.locator("figure[data-evidence-chart]").count() == 0
    text = " ".join(section.text_content().split())
    assert "ranked by total tok/s" in text and "mostly queueing" in text
    places = section.locator("tbody[data-place]")
    assert places.count() == 5
    assert section.locator("tbody[data-place='1'] th").inner_text().startswith("#1")
    for total in ("6,095.37", "2,139.54", "1,814.32"):
        assert section.get_by_text(total, exact=True).is_visible()
    assert "1,000 concurrent" not in page.content()
    offline = page.locator("section.evidence-comparison[data-mode='offline']")
    assert offline.count() >= 1 and "offline batch" in offline.first.inner_text()
    # The page never scrolls sideways: wide tables scroll inside their own region.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.mark.parametrize("viewport", ["page", "phone_page"])
def test_the_matrix_lists_comparisons_with_single_engine_evidence_apart(
        live_server, loaded_catalog, request, screenshot, viewport):
    page = request.getfixturevalue(viewport)
    page.goto(f"{live_server.url}/engines/evidence/", wait_until="load")
    screenshot(page, "matrix", full_page=False)
    compared = page.locator("table.evidence-matrix").first
    row = compared.locator("tr[data-model='gpt-oss-120b'][data-hardware='nvidia-h100-sxm'][data-count='1']")
    assert row.count() == 1
    assert "3 engines" in row.inner_text() and "6,095 total tok/s" in row.inner_text()
    assert page.locator("#single-engine").is_visible()
    single = page.locator("table.evidence-matrix").nth(1)
    assert single.locator("tr[data-mode='offline']").count() >= 1
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
