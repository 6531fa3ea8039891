"""The published-evidence charts in a real headless Chromium: one line per engine and version of a comparison, the
points those of its table; without JavaScript the table is all there is, and it holds every point."""
import json

import pytest
from django.core.management import call_command

from tests.browser.conftest import DESKTOP_VIEWPORT

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PATH = "/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/"


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
        assert len({label for label, _ in drawn}) == len(drawn)  # one line per engine and version
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
