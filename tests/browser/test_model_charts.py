"""The model charts in a real headless Chromium: Chart.js draws one point per table row, and without JavaScript
the table is the chart."""
import pytest
from django.core.management import call_command

from probes.selectors.language_models import model_comparison_get

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REFERENCE = "gpt-oss-120b"
SCATTER = f'figure[data-chart-id="speed-price-{REFERENCE}"]'
BARS = f'figure[data-chart-id="first-token-{REFERENCE}"]'


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def _errors(page) -> list[str]:
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    return problems


def _expected_points() -> list[tuple[str, float, float]]:
    """(provider, blended USD, tok/s) of every provider with both a price and a speed, from the database."""
    comparison = model_comparison_get(slug=REFERENCE)
    return sorted(
        (row.tool.name, float(row.blended_usd), row.output_speed.value) for row in comparison.speed_price_points
    )


def _drawn_points(page, figure: str) -> list[tuple[str, float, float]]:
    points = page.eval_on_selector(
        f"{figure} canvas",
        """canvas => Chart.getChart(canvas).data.datasets.flatMap(
            dataset => dataset.data.map(point => [dataset.label, point.x, point.y]))""",
    )
    return sorted(tuple(point) for point in points)


@pytest.mark.parametrize("path", [f"/models/{REFERENCE}/", "/providers/"])
def test_scatter_draws_one_point_per_provider_with_a_price_and_a_speed(live_server, loaded_catalog, page, screenshot,
                                                                        path):
    problems = _errors(page)
    expected = _expected_points()
    # Groq's own headline speed is not plotted beside a benchmark's, so Cerebras and Fireworks are the points.
    assert len(expected) >= 2

    response = page.goto(f"{live_server.url}{path}", wait_until="load")
    assert "script-src 'self';" in response.headers["content-security-policy"]  # charts drawn under the policy
    page.wait_for_selector(f"{SCATTER}.is-drawn canvas")

    drawn = _drawn_points(page, SCATTER)
    assert [name for name, _, _ in drawn] == [name for name, _, _ in expected]
    for (_, x, y), (_, want_x, want_y) in zip(drawn, expected, strict=True):
        assert x == pytest.approx(want_x) and y == pytest.approx(want_y)
    assert page.locator(f"{SCATTER} tbody tr").count() == len(expected)
    assert page.locator(f"{SCATTER} table").is_visible()
    box = page.locator(f"{SCATTER} canvas").bounding_box()
    assert box["width"] > 200 and box["height"] > 200

    bars = page.eval_on_selector(f"{BARS} canvas", "canvas => Chart.getChart(canvas).data.labels.length")
    assert bars == page.locator(f"{BARS} tbody tr").count() > 0
    screenshot(page, "charts")
    assert problems == []


def test_without_javascript_the_table_is_the_chart(live_server, loaded_catalog, browser, screenshot):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/models/{REFERENCE}/", wait_until="load")
        assert page.locator(f"{SCATTER} canvas").count() == 0
        assert page.locator(f"{SCATTER} [data-chart-canvas]").is_hidden()
        rows = page.locator(f"{SCATTER} tbody tr")
        assert rows.count() == len(_expected_points())
        assert rows.first.is_visible()
        assert "reported by" in rows.first.inner_text()
        assert page.locator(f"{BARS} tbody tr").first.is_visible()
        screenshot(page, "no-js")
    finally:
        context.close()


def test_model_page_columns_sort_in_the_browser(live_server, loaded_catalog, page):
    problems = _errors(page)
    page.goto(f"{live_server.url}/models/{REFERENCE}/", wait_until="load")
    table = page.locator("section#providers table[data-sortable]")
    speed_header = table.locator("thead th").nth(4)
    speed_header.locator("button").click()
    speed_header.locator("button").click()
    assert speed_header.get_attribute("aria-sort") == "descending"
    fastest = max(
        (row for row in model_comparison_get(slug=REFERENCE).providers if row.output_speed),
        key=lambda row: row.output_speed.value,
    )
    assert table.locator("tbody tr").first.get_attribute("data-tool") == fastest.tool.slug
    # Tools without a figure sort last either way.
    assert "none measured or reported" in table.locator("tbody tr").last.inner_text()
    assert problems == []


@pytest.mark.parametrize("path", ["/models/", f"/models/{REFERENCE}/", "/providers/"])
def test_model_pages_fit_a_phone(live_server, loaded_catalog, phone_page, screenshot, path):
    problems = _errors(phone_page)
    phone_page.goto(f"{live_server.url}{path}", wait_until="load")
    width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{path} scrolls sideways on a phone ({width}px)"
    first_card = phone_page.locator("table[data-model-table] tbody tr, table[data-model-index] tbody tr").first
    assert first_card.locator("td[data-label]").first.is_visible()
    screenshot(phone_page, "phone")
    assert problems == []
