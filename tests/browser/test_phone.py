"""A phone (390 px): a navigation menu that opens without JavaScript, and evidence and comparison tables as cards
whose figures are never cut; a 1366 px window: nothing clipped."""
import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
CARD_PAGES = [
    ("/engines/evidence/", "table.evidence-matrix"),
    ("/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/", "table.evidence-table"),
    ("/compare/?tools=groq,cerebras,together-ai,fireworks-ai", "table.compare-matrix"),
    ("/models/gpt-oss-120b/", "table.model-table"),
    ("/tools/fireworks-ai/", "table.reported-table"),
]
WIDE_PAGES = ["/", "/models/gpt-oss-120b/", "/providers/", "/tools/fireworks-ai/", "/engines/evidence/",
              "/compare/?tools=groq,cerebras,together-ai,fireworks-ai", "/?q=gpt-oss-120b"]


@pytest.fixture
def loaded_catalog():
    call_command("load_catalog", verbosity=0)


def test_the_phone_menu_opens_without_javascript_and_reaches_every_page(live_server, loaded_catalog, browser,
                                                                       screenshot):
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/models/gpt-oss-120b/")
        assert not page.locator("nav.nav-wide").is_visible()
        menu = page.locator("details.nav-menu")
        links = menu.locator("a")
        assert links.count() == 13 and not links.first.is_visible()
        header_height = page.locator(".site-header").bounding_box()["height"]
        assert header_height < 70, f"the header takes {header_height}px of a phone's screen"
        menu.locator("summary").click()
        assert all(links.nth(index).is_visible() for index in range(links.count()))
        assert menu.locator('a[aria-current="page"]').inner_text() == "Models"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        screenshot(page, "menu-open", full_page=False)
        menu.get_by_role("link", name="Providers").click()
        page.wait_for_url("**/providers/")
        assert page.locator("h1").inner_text() == "Hosted providers compared"
    finally:
        context.close()


@pytest.mark.parametrize(("path", "table"), CARD_PAGES)
def test_evidence_and_comparison_tables_are_cards_on_a_phone(live_server, loaded_catalog, phone_page, screenshot,
                                                             path, table):
    phone_page.goto(f"{live_server.url}{path}")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    cells = phone_page.locator(f"{table} tbody td[data-label]")
    assert cells.count() > 0
    heights = phone_page.locator(f"{table} thead").evaluate_all("heads => heads.map(h => h.getBoundingClientRect().height)")
    assert heights and max(heights) <= 1, heights
    # Every labelled cell shows its label and fits the screen: no figure is cut mid-number.
    overflowing = cells.evaluate_all("""cells => cells.filter(cell => {
        const box = cell.getBoundingClientRect();
        return getComputedStyle(cell, '::before').content === 'none' || box.right > window.innerWidth + 1
            || cell.scrollWidth > cell.clientWidth + 1;
    }).map(cell => cell.dataset.label + ': ' + cell.innerText.slice(0, 40))""")
    assert overflowing == [], overflowing
    screenshot(phone_page, "cards")


@pytest.mark.parametrize("path", WIDE_PAGES)
def test_nothing_is_clipped_in_a_1366_px_window(live_server, loaded_catalog, page, screenshot, path):
    page.goto(f"{live_server.url}{path}")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    clipped = page.evaluate("""() => [...document.querySelectorAll('.table-scroll, .compare-scroll')]
        .filter(region => region.scrollWidth > region.clientWidth + 1)
        .map(region => (region.getAttribute('aria-label') || region.getAttribute('aria-labelledby'))
             + ' by ' + (region.scrollWidth - region.clientWidth) + 'px')""")
    assert clipped == [], clipped
    screenshot(page, "desktop", full_page=False)
