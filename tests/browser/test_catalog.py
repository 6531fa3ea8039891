"""Catalog → hardware filter → tick three tools → comparison, in a real headless Chromium."""
import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PICKED = ["vllm", "sglang", "tensorrt-llm"]


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def test_filter_pick_three_and_compare(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/")
    all_rows = page.locator("table.catalog-table tbody tr").count()
    assert all_rows >= 13
    screenshot(page, "1-catalog")

    page.select_option("#id_hardware", "nvidia-cuda")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**/?*hardware=nvidia-cuda*")
    filtered = page.locator("table.catalog-table tbody tr")
    assert 0 < filtered.count() < all_rows
    assert page.locator("#pick-groq").count() == 0  # runs on its own LPU chips
    assert page.locator("#pick-vllm").count() == 1
    assert page.locator("#id_hardware").input_value() == "nvidia-cuda"
    screenshot(page, "2-filtered-nvidia")

    for slug in PICKED:
        page.check(f"#pick-{slug}")
    screenshot(page, "3-three-ticked")
    page.get_by_role("button", name="Compare selected").first.click()
    page.wait_for_url("**/compare/?*")
    assert page.url.count("tools=") == 3

    header_links = page.locator("table.compare-table thead a")
    assert [href.split("/")[-2] for href in header_links.evaluate_all("links => links.map(a => a.href)")] == PICKED
    assert page.locator(".notice-error").count() == 0

    rating_row = page.locator('tr[data-row="rating"]')
    assert "row-differs" in rating_row.get_attribute("class")
    assert "differs" in rating_row.locator("th").inner_text().lower()
    highlighted = rating_row.locator("td").first.evaluate("cell => getComputedStyle(cell).backgroundColor")
    plain = page.locator('tr[data-row="kind"] td').first.evaluate("cell => getComputedStyle(cell).backgroundColor")
    assert highlighted != plain
    assert "differs" not in page.locator('tr[data-row="kind"] th').inner_text().lower()  # all three are engines
    assert page.locator("tr.row-differs").count() >= 3
    screenshot(page, "4-comparison")


def test_catalog_and_comparison_fit_a_phone(live_server, loaded_catalog, phone_page, screenshot):
    phone_page.goto(f"{live_server.url}/")
    page_width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= 390, f"the catalog scrolls sideways on a phone ({page_width}px)"
    assert phone_page.locator("table.catalog-table thead").evaluate("el => el.getBoundingClientRect().height") <= 1
    screenshot(phone_page, "catalog-phone")

    phone_page.goto(f"{live_server.url}/compare/?tools=groq,cerebras,together-ai,fireworks-ai")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone_page.locator("table.compare-table thead a").count() == 4
    screenshot(phone_page, "compare-phone")

    phone_page.goto(f"{live_server.url}/tools/llama-cpp/")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(phone_page, "tool-phone")


def test_compare_from_the_catalog_without_javascript(live_server, loaded_catalog, browser, screenshot):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/?kind=provider&sort=price")
        for slug in ("groq", "cerebras"):
            page.check(f"#pick-{slug}")
        page.get_by_role("button", name="Compare selected").last.click()
        page.wait_for_url("**/compare/?*")
        links = page.locator("table.compare-table thead a").evaluate_all("links => links.map(a => a.href)")
        assert [href.split("/")[-2] for href in links] == ["groq", "cerebras"]
        screenshot(page, "compare-no-js")
    finally:
        context.close()


def test_keyboard_focus_is_visible(live_server, loaded_catalog, page, screenshot):
    page.goto(f"{live_server.url}/")
    page.keyboard.press("Tab")
    skip = page.locator(".skip-link")
    assert skip.evaluate("el => el === document.activeElement")
    assert skip.evaluate("el => el.getBoundingClientRect().top") >= 0  # moved on screen when focused
    page.keyboard.press("Enter")
    for _ in range(3):
        page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", ""), f"focused element has no outline ({outline})"
    screenshot(page, "keyboard-focus", full_page=False)
