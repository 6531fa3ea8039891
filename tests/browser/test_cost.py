"""The cost page in a real headless Chromium, at desktop and phone width: the form asks, the answer and its chart
are drawn by the server (no script needed), and nothing but the chart and the tables scrolls sideways."""
import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def _ask(target_page, url: str) -> None:
    target_page.goto(f"{url}/cost/")
    target_page.select_option("#id_model", "gpt-oss-120b")
    target_page.select_option("#id_hardware", "nvidia-h100-sxm")
    target_page.fill("#id_gpu_count", "1")
    target_page.fill("#id_gpu_hour_usd", "2.50")
    target_page.fill("#id_max_ttft_ms", "1000")
    target_page.get_by_role("button", name="Cost it").click()
    target_page.wait_for_url("**/cost/?*max_ttft_ms=1000*")


@pytest.mark.parametrize("which", ["page", "phone_page"])
def test_ask_and_read_the_cost_at_a_latency_target(live_server, loaded_catalog, request, screenshot, which):
    target_page = request.getfixturevalue(which)
    _ask(target_page, live_server.url)

    answer = target_page.locator("[data-cheapest]").first
    assert "$1.53 per million output tokens" in answer.inner_text()
    chart = target_page.locator("svg.cost-svg").first
    assert chart.is_visible() and chart.locator("circle").count() >= 1
    assert "Fireworks AI, Groq, Together AI" in chart.text_content()
    viewport = target_page.viewport_size
    assert target_page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    screenshot(target_page, f"cost-{viewport['width']}")
