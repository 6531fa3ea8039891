"""Catalog → hardware filter → tick three tools → comparison, in a real headless Chromium."""
import re

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

    assert not page.locator("#id_hardware").is_visible()  # folded so the first rows lead the page
    page.get_by_text("Filter and sort").click()
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

    header_links = page.locator("table.compare-matrix thead a")
    assert [href.split("/")[-2] for href in header_links.evaluate_all("links => links.map(a => a.href)")] == PICKED
    assert page.locator(".notice-error").count() == 0

    rating_row = page.locator('tr[data-row="rating"]')
    assert "row-differs" in rating_row.get_attribute("class")
    assert "(differs)" in rating_row.locator("th").text_content()
    marked = rating_row.locator("th").evaluate("cell => getComputedStyle(cell).boxShadow")
    plain = page.locator('tr[data-row="kind"] th').evaluate("cell => getComputedStyle(cell).boxShadow")
    assert marked != plain
    assert "(differs)" not in page.locator('tr[data-row="kind"] th').text_content()  # all three are engines
    assert page.locator('tr[data-row="hardware:nvidia-cuda"] td[data-state="yes"]').count() == 3
    screenshot(page, "4-comparison")


def test_catalog_table_fits_a_1366_px_window_without_sideways_scrolling(live_server, loaded_catalog, page,
                                                                       screenshot):
    page.goto(f"{live_server.url}/")
    region = page.locator(".table-scroll")
    scroll_width, client_width = region.evaluate("el => [el.scrollWidth, el.clientWidth]")

    assert scroll_width <= client_width, f"the catalog table is {scroll_width - client_width}px wider than its box"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    hardware_header = page.locator("table.catalog-table thead th", has_text="Hardware")
    assert hardware_header.evaluate("el => el.getBoundingClientRect().right") <= 1366
    screenshot(page, "catalog-desktop", full_page=False)


def test_catalog_and_comparison_fit_a_phone(live_server, loaded_catalog, phone_page, screenshot):
    phone_page.goto(f"{live_server.url}/")
    page_width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert page_width <= 390, f"the catalog scrolls sideways on a phone ({page_width}px)"
    assert phone_page.locator("table.catalog-table thead").evaluate("el => el.getBoundingClientRect().height") <= 1
    screenshot(phone_page, "catalog-phone")

    phone_page.goto(f"{live_server.url}/compare/?tools=groq,cerebras,together-ai,fireworks-ai")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    assert phone_page.locator("table.compare-matrix thead a").count() == 4
    screenshot(phone_page, "compare-phone")

    phone_page.goto(f"{live_server.url}/tools/llama-cpp/")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(phone_page, "tool-phone")


def test_only_differences_without_javascript_cards_on_a_phone(live_server, loaded_catalog, browser, screenshot):
    context = browser.new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/compare/?tools=vllm,sglang,llama-cpp,mlx")
        all_rows = page.locator("tbody tr[data-row]").count()
        same_rows = page.locator("tbody tr.row-same").count()
        assert same_rows > 0
        page.get_by_role("link", name=re.compile(r"^Only differences")).click()
        page.wait_for_url("**only=differences*")
        assert page.locator("tbody tr[data-row]").count() == all_rows - same_rows
        assert page.locator("tbody tr.row-same").count() == 0
        assert page.locator('.segmented a[aria-current="true"]').inner_text().startswith("Only differences")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        # One card per aspect: every cell under its tool's name, none wider than the screen.
        first_cell = page.locator("tbody tr[data-row] td").first
        label = first_cell.evaluate("el => getComputedStyle(el, '::before').content")
        assert label == '"vLLM"'
        assert first_cell.bounding_box()["width"] <= 390
        screenshot(page, "only-differences-phone", full_page=False)

        page.get_by_role("link", name=re.compile(r"^All rows")).click()
        page.wait_for_url(lambda url: "only=" not in url)
        assert page.locator("tbody tr[data-row]").count() == all_rows
    finally:
        context.close()


def test_the_matrix_keeps_its_header_and_first_column_in_view_on_a_tablet(live_server, loaded_catalog, browser,
                                                                         screenshot):
    context = browser.new_context(viewport={"width": 700, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/compare/?tools=vllm,sglang,llama-cpp,mlx")
        region = page.locator(".compare-scroll")
        first_label = page.locator("tbody tr[data-row] th").first
        header = page.locator("thead th").nth(1)
        left_before = first_label.bounding_box()["x"]
        top_before = header.bounding_box()["y"]
        region.evaluate("el => { el.scrollLeft = 400; el.scrollTop = 600; }")
        assert first_label.bounding_box()["x"] == pytest.approx(left_before, abs=1)  # first column stays put
        assert header.bounding_box()["y"] == pytest.approx(top_before, abs=1)  # so does the header
        screenshot(page, "compare-tablet", full_page=False)
    finally:
        context.close()


def test_compare_from_the_catalog_without_javascript(live_server, loaded_catalog, browser, screenshot):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/?kind=provider&sort=price")
        for slug in ("groq", "cerebras"):
            page.check(f"#pick-{slug}")
        page.get_by_role("button", name="Compare selected").last.click()
        page.wait_for_url("**/compare/?*")
        links = page.locator("table.compare-matrix thead a").evaluate_all("links => links.map(a => a.href)")
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
