"""With the real fixtures loaded, every rated tool's page shows its rating and each seed price, and the
catalog lists the 13 rated tools in the seed's order."""
import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from catalog.models import PriceItem, Tool
from catalog.templatetags.catalog_format import format_rating
from scoring.money import format_usd

SEED_ORDER = [
    "llama-cpp", "vllm", "ollama", "together-ai", "sglang", "mlx", "fireworks-ai", "audio-cpp", "colibri",
    "tensorrt-llm", "groq", "cerebras", "deepinfer",
]


pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("real_catalog")]


def table_rows(html: str) -> list[str]:
    return re.findall(r"<tr\b.*?</tr>", html, flags=re.DOTALL)


def expected_cells(price: PriceItem) -> list[str]:
    """What the price row must show, built with the pages' own USD formatter."""
    cells = [escape(price.get_tier_display())]
    for value in (price.input_usd_per_mtok, price.output_usd_per_mtok, price.amount_usd):
        if value is not None:
            cells.append(format_usd(value))
    if price.discount_percent is not None:
        cells.append(f"{price.discount_percent.normalize():f}% off")
    if price.is_lower_bound:
        cells.append("from ")
    if price.notes:
        cells.append(escape(price.notes))
    return cells


@pytest.mark.parametrize("slug", SEED_ORDER)
def test_tool_page_shows_the_seed_rating_and_every_seed_price(client, slug):
    tool = Tool.objects.get(slug=slug)
    prices = list(tool.price_items.all())

    response = client.get(reverse("catalog:tool_detail", args=[slug]))

    assert response.status_code == 200
    html = response.content.decode()
    assert format_rating(tool.rating) in html
    assert prices, "every rated tool has at least one seed price"
    rows = table_rows(html)
    for price in prices:
        item_cell = f">{escape(price.item)}</th>"
        candidates = [row for row in rows if item_cell in row]
        assert any(all(cell in row for cell in expected_cells(price)) for row in candidates), (
            f"{slug}: no price row shows {price.item!r} with {expected_cells(price)}"
        )


def test_catalog_lists_the_thirteen_rated_tools_in_seed_order_before_the_rest(client):
    response = client.get(reverse("catalog:index"))

    assert response.status_code == 200
    html = response.content.decode()
    positions = {}
    for tool in Tool.objects.all():
        link = f'href="{reverse("catalog:tool_detail", args=[tool.slug])}"'
        assert link in html, tool.slug
        positions[tool.slug] = html.index(link)
    rated_in_page_order = sorted(SEED_ORDER, key=positions.__getitem__)
    assert rated_in_page_order == SEED_ORDER
    last_rated = max(positions[slug] for slug in SEED_ORDER)
    assert all(position > last_rated for slug, position in positions.items() if slug not in SEED_ORDER)
