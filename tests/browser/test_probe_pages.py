"""The probe dashboards in a real headless Chromium: charts drawn from the embedded data, compat cells that open."""
import datetime as dt

import pytest
from django.utils import timezone

from catalog.models import Tool
from scoring.vocabulary import COMPAT_CHECKS
from tests.probes.dashboard_data import OUTCOMES, TEST_KEY_ENV, make_compat, make_measured_target, make_price, make_tool

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REJECTION_MESSAGE = "logprobs are not supported with streaming for this model"


def _collect_errors(page) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


@pytest.fixture
def measured_providers(monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "browser-test-key")
    now = timezone.now()
    groq = make_tool(slug="groq", name="Groq")
    cerebras = make_tool(slug="cerebras", name="Cerebras")
    make_price(tool=groq, item="gpt-oss-120b", input_usd="0.15", output_usd="0.75")
    make_price(tool=cerebras, item="gpt-oss-120b", input_usd="0.25", output_usd="0.69")
    first = make_measured_target(
        now=now, slug="groq-oss", name="Groq · gpt-oss-120b", tool=groq, ttft=190.0, speed=460.0, e2e=1300.0,
        history_runs=8,
    )
    second = make_measured_target(
        now=now, slug="cerebras-oss", name="Cerebras · gpt-oss-120b", tool=cerebras, ttft=95.0, speed=2900.0,
        e2e=450.0, history_runs=8, age=dt.timedelta(hours=2),
    )
    checks = list(COMPAT_CHECKS)
    make_compat(target=first, check_name=checks[0], outcome=OUTCOMES.SUPPORTED, detail="effect verified")
    make_compat(target=second, check_name=checks[0], outcome=OUTCOMES.REJECTED, http_status=400,
                message=REJECTION_MESSAGE)
    make_compat(target=second, check_name=checks[1], outcome=OUTCOMES.IGNORED, detail="parameter had no effect")
    return checks


def _painted_pixels(page, selector: str) -> int:
    return page.eval_on_selector(
        selector,
        """canvas => {
            const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
            let painted = 0;
            for (let i = 3; i < data.length; i += 4) { if (data[i] !== 0) painted++; }
            return painted;
        }""",
    )


def test_providers_page_draws_its_charts(live_server, measured_providers, page, screenshot):
    problems = _collect_errors(page)
    page.goto(f"{live_server.url}/providers/", wait_until="load")
    page.wait_for_selector('[data-probe-charts] figure.is-drawn canvas')

    for chart_id in ("speed-price", "ttft-speed", "history-output_speed_tps", "history-ttft_ms"):
        selector = f'figure[data-chart-id="{chart_id}"] canvas'
        box = page.locator(selector).bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100, chart_id
        datasets = page.eval_on_selector(selector, "canvas => Chart.getChart(canvas).data.datasets.length")
        assert datasets == 2, chart_id
        assert _painted_pixels(page, selector) > 500, chart_id

    history_points = page.eval_on_selector(
        'figure[data-chart-id="history-output_speed_tps"] canvas',
        "canvas => Chart.getChart(canvas).data.datasets[0].data.length",
    )
    assert history_points == 8
    screenshot(page, "providers-charts")
    assert problems == []


def test_compat_details_open_by_keyboard_and_by_click(live_server, measured_providers, page, artifacts_dir):
    checks = measured_providers
    problems = _collect_errors(page)
    page.goto(f"{live_server.url}/providers/#compat", wait_until="load")
    rejected = page.locator(f'td[data-check="{checks[0]}"][data-target="cerebras-oss"]')
    assert "HTTP 400" in rejected.get_attribute("title")
    message = rejected.locator(".provider-message")
    assert not message.is_visible()

    rejected.locator("summary").focus()
    page.keyboard.press("Enter")
    message.wait_for(state="visible")
    assert REJECTION_MESSAGE in message.inner_text()
    assert "HTTP 400" in rejected.inner_text()

    ignored = page.locator(f'td[data-check="{checks[1]}"][data-target="cerebras-oss"]')
    ignored.locator("summary").click()
    assert ignored.locator("details").get_attribute("open") is not None
    assert "parameter had no effect" in ignored.inner_text()

    page.locator("#compat").screenshot(path=str(artifacts_dir / "probes-compat-matrix-opened.png"))
    assert problems == []


def test_without_javascript_the_table_stands_alone(live_server, measured_providers, browser, screenshot):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/providers/?workload=nope", wait_until="load")
        assert page.locator("[data-probe-charts] canvas").count() == 0
        assert page.locator('figure[data-chart-id="ttft-speed"] tbody tr').count() == 2
        assert page.locator('tr[data-target="groq-oss"]').first.is_visible()
        assert "Unknown workload" in page.locator(".probe-notice--warning").inner_text()
        screenshot(page, "providers-no-js")
    finally:
        context.close()


@pytest.fixture
def measured_engine():
    engine = make_tool(slug="llama-cpp", name="llama.cpp", kind=Tool.Kind.ENGINE)
    make_measured_target(now=timezone.now(), slug="local", name="Local llama.cpp", tool=engine, ttft=15.0,
                         speed=80.0, e2e=3000.0, hardware="x86 CPU", quantization="Q8_0", api_key_env="")


def test_engines_page_draws_without_the_price_chart(live_server, measured_engine, page, screenshot):
    problems = _collect_errors(page)
    page.goto(f"{live_server.url}/engines/", wait_until="load")
    page.wait_for_selector('[data-probe-charts] figure.is-drawn canvas')
    assert page.locator('figure[data-chart-id="speed-price"]').count() == 0
    assert _painted_pixels(page, 'figure[data-chart-id="ttft-speed"] canvas') > 500
    screenshot(page, "engines")
    assert problems == []


def test_providers_page_fits_a_phone(live_server, measured_providers, phone_page, screenshot):
    problems = _collect_errors(phone_page)
    phone_page.goto(f"{live_server.url}/providers/", wait_until="load")
    phone_page.wait_for_selector('[data-probe-charts] figure.is-drawn canvas')
    width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the providers page scrolls sideways on a phone ({width}px)"
    assert phone_page.locator('figure[data-chart-id="ttft-speed"] canvas').bounding_box()["width"] <= 390
    screenshot(phone_page, "providers-phone")
    assert problems == []


def test_methodology_page_links_its_sections(live_server, measured_providers, page, screenshot):
    problems = _collect_errors(page)
    page.goto(f"{live_server.url}/methodology/", wait_until="load")
    page.get_by_role("link", name="Freshness of each figure").click()
    page.wait_for_url("**/methodology/#freshness")
    rows = page.locator("table[data-freshness] tbody tr")
    assert rows.count() == 2
    assert "Groq · gpt-oss-120b" in rows.first.inner_text() or "Groq · gpt-oss-120b" in rows.nth(1).inner_text()
    screenshot(page, "methodology")
    assert problems == []


def test_unmeasured_providers_page_with_long_model_ids_fits_a_phone(live_server, phone_page, screenshot):
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)
    phone_page.goto(f"{live_server.url}/providers/", wait_until="load")
    assert "probe run on this site yet" in phone_page.content()
    assert "accounts/fireworks/models/gpt-oss-120b" in phone_page.content()
    width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the unmeasured providers page scrolls sideways on a phone ({width}px)"
    screenshot(phone_page, "providers-empty-phone")
