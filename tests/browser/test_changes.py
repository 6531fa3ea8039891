"""/changes/ in a real headless Chromium: filtered with its GET form and no JavaScript, and no sideways scrolling
on a phone or a 1366 px window, with a long release entry among them."""
import pytest

from catalog.models import Change
from tests.factories import ChangeFactory, ToolFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def changes():
    vllm = ToolFactory(slug="vllm", name="vLLM")
    older = [f"Publisher {n}: vLLM v0.10.{n}, gpt-oss-120b on 8 × NVIDIA H100 SXM (3 series)" for n in range(12)]
    ChangeFactory(kind=Change.Kind.RELEASE, tool=vllm, before={"latest_version": "0.31.0"},
                  title="vLLM 0.32.0 released; 36 published series measured an older version",
                  after={"latest_version": "0.32.0", "older_series": older})
    ChangeFactory(kind=Change.Kind.PRICE, title="Groq: gpt-oss-120b (On demand) output $0.60 → $0.55")
    ChangeFactory(kind=Change.Kind.REGRESSION, title="Target, in-1k at concurrency 1: TTFT p50 212 ms → 431 ms",
                  before={"reference": 212.0, "spread": 9.5, "threshold": 53.0, "runs": 5},
                  after={"value": 431.0, "run": 1})


@pytest.mark.parametrize("width", [390, 1366])
def test_the_change_page_filters_without_javascript_and_fits_the_window(live_server, changes, browser, screenshot,
                                                                        width):
    context = browser.new_context(viewport={"width": width, "height": 900}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/changes/")
        assert page.locator("li.change").count() == 3
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        screenshot(page, f"changes-{width}")

        page.select_option("#id_kind", "regression")
        page.get_by_role("button", name="Apply").click()
        page.wait_for_url("**/changes/?kind=regression*")
        assert page.locator("li.change").count() == 1
        assert "TTFT p50 212 ms → 431 ms" in page.locator("li.change").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
