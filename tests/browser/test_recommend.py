"""The decision wizard, the fit calculator and a use case page, driven in a real headless Chromium."""
import re

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def test_submit_the_wizard_and_read_the_answer(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/recommend/")
    screenshot(page, "1-questions")

    page.select_option("#id_hardware", "rtx_multi")
    page.select_option("#id_deployment", "production")
    page.fill("#id_concurrency", "16")
    page.select_option("#id_interconnect", "pcie")
    page.check("#id_hosted_ok")
    page.get_by_label("Tool (function) calling").check()
    page.get_by_role("button", name="Recommend").click()
    page.wait_for_url("**/recommend/?*hardware=rtx_multi*")

    top = page.locator("li.reco-top")
    assert top.get_attribute("data-tool") == "vllm"
    assert "Top pick" in top.text_content()
    assert "Decided by the hardware recipe 'Two to four consumer RTX cards'" in top.inner_text()
    assert "Inference Engines for LLMs and Local AI Hardware" in top.locator(".reco-source").first.inner_text()
    runner_up = page.locator("li.reco-result").nth(1)
    assert "Why not first:" in runner_up.inner_text()
    assert page.locator('[data-warning="weak-interconnect"]').is_visible()
    assert page.locator('li.reco-result[data-tool="ollama"]').count() == 0
    assert "do not use Ollama" in page.locator("#listed-heading + div").inner_text()
    assert page.locator("#id_hardware").input_value() == "rtx_multi"  # the answers stay filled in
    screenshot(page, "2-answer")


def test_on_a_phone_the_answer_is_in_view_right_after_submitting(live_server, loaded_catalog, phone_page,
                                                                 screenshot):
    phone_page.goto(f"{live_server.url}/recommend/")
    phone_page.select_option("#id_hardware", "nvidia_hopper_node")
    phone_page.select_option("#id_deployment", "production")
    phone_page.select_option("#id_optimize_for", "throughput")
    phone_page.get_by_role("button", name="Recommend").click()
    phone_page.wait_for_url("**/recommend/?*hardware=nvidia_hopper_node*")

    answer = phone_page.locator(".reco-answer")
    assert answer.get_attribute("data-tool") == "vllm"
    viewport = phone_page.viewport_size
    # No scrolling needed: the pick's heading and its reason sit inside the first screen.
    reason = phone_page.locator(".reco-why").bounding_box()
    assert 0 <= reason["y"] < viewport["height"]
    heading = phone_page.locator("#result-heading").bounding_box()
    assert 0 <= heading["y"] and heading["y"] + heading["height"] <= viewport["height"]
    assert "vLLM" in phone_page.locator("#result-heading").inner_text()
    assert phone_page.locator(".reco-switch li").count() >= 1
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    screenshot(phone_page, "phone-answer", full_page=False)


def test_wizard_shows_messages_for_bad_input(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/recommend/?hardware=mac&context_tokens=-3")

    alert = page.get_by_role("alert")
    assert "Context length (tokens)" in alert.inner_text()
    assert page.locator("#result").count() == 0
    screenshot(page, "bad-input")


def test_fill_the_fit_calculator(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/fit/")
    page.select_option("#id_model", "gpt-oss-120b")
    page.select_option("#id_weight_format", "mxfp4")
    page.select_option("#id_hardware", "nvidia-h100-sxm")
    page.fill("#id_context_tokens", "32768")
    page.fill("#id_concurrency", "4")
    page.get_by_role("button", name="Calculate").click()
    page.wait_for_url("**/fit/?*")

    assert page.locator("#fit-heading").inner_text() == "It fits"
    assert page.locator("#moe-note").is_visible()
    assert "memory counts all" in page.locator("#moe-note").inner_text()
    ceiling = float(page.locator("#decode-ceiling").inner_text().split()[0].replace(",", ""))
    assert ceiling > 0
    screenshot(page, "h100-gpt-oss-120b")

    page.select_option("#id_hardware", "nvidia-rtx-4090")
    page.get_by_role("button", name="Calculate").click()
    page.wait_for_url("**hardware=nvidia-rtx-4090*")
    assert page.locator("#fit-heading").inner_text() == "It does not fit"
    screenshot(page, "rtx-4090-gpt-oss-120b")


def test_use_case_page_shows_the_ollama_listing_and_warning(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/use-cases/")
    page.get_by_role("link", name="Private on-device AI").click()
    page.wait_for_url("**/use-cases/private-on-device-ai/")

    recommended = page.locator("ul.reco-choices li")
    assert [recommended.nth(i).get_attribute("data-tool") for i in range(recommended.count())] == ["llama-cpp", "mlx"]
    listing = page.locator('.reco-listed[data-tool="ollama"]')
    assert "not to use" in listing.inner_text()
    screenshot(page, "private-on-device")


def test_fill_the_break_even_form(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/break-even/")
    page.fill("#id_input_tokens_per_day", "2000000000")
    page.fill("#id_output_tokens_per_day", "400000000")
    page.select_option("#id_model", "gpt-oss-120b")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url("**/break-even/?*")

    providers = page.locator("#result table").first.locator("tbody tr")
    assert providers.count() >= 3
    assert providers.first.get_attribute("data-tool") in {"groq", "together-ai", "fireworks-ai"}
    assert "730 hours in a month" in page.locator("#result div.notice").inner_text()
    # Each price names its source and the day it was verified (a provider's own page, or the comparison's date).
    assert re.search(r"verified 2026-\d\d-\d\d", providers.first.inner_text())
    screenshot(page, "break-even")


@pytest.mark.parametrize("device", ["page", "phone_page"])
def test_one_h100_from_the_catalog_to_its_fit_answer(live_server, loaded_catalog, request, screenshot, device):
    browser_page = request.getfixturevalue(device)
    browser_page.goto(f"{live_server.url}/recommend/")
    browser_page.select_option("#id_hardware", "nvidia-h100-sxm")
    browser_page.fill("#id_gpu_count", "1")
    browser_page.select_option("#id_model", "gpt-oss-120b")
    browser_page.fill("#id_concurrency", "50")
    browser_page.get_by_role("button", name="Recommend").click()
    browser_page.wait_for_url("**/recommend/?*hardware=nvidia-h100-sxm*")

    assert "1× NVIDIA H100 SXM" in browser_page.locator("#published-heading").inner_text()
    width = browser_page.viewport_size["width"]
    assert browser_page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(browser_page, f"one-h100-wizard-{width}", full_page=False)

    browser_page.locator('a[data-link="fit"]').click()
    browser_page.wait_for_url("**/fit/?*")
    assert browser_page.locator("#fit-heading").inner_text() == "It does not fit"
    assert browser_page.locator("#what-would-fit li").first.get_attribute("data-option") == "kv-cache"
    assert "128-token sliding window" in browser_page.locator("#fit-caveats").inner_text()
    assert browser_page.evaluate("document.documentElement.scrollWidth") <= width
    screenshot(browser_page, f"one-h100-fit-{width}", full_page=False)
