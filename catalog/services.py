"""Writes to the catalog. Each validates the whole object, saves it in one transaction and is audited.

A date a fact was last checked (`last_verified`, `verified_on`) changes only when the caller passes
it: an edit to a verdict is not a re-verification of the facts.
"""
from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from catalog.models import Licence, PriceItem, Source, Tool
from core.cache import generation_bump
from core.services import audited_create, audited_update

RATING_NEEDS_SOURCE = "A rating needs the source that gives it (rating_source)."
PRICE_NEEDS_TOKEN_PRICE = "A per-token price needs input_usd_per_mtok or output_usd_per_mtok."
PRICE_NEEDS_AMOUNT = "This unit needs amount_usd."
PRICE_NEEDS_DISCOUNT = "A discount needs discount_percent."

TOOL_FIELDS = (
    "slug", "name", "kind", "family", "summary", "rating", "rating_source", "rank", "verdict", "ideal_for",
    "pricing_summary", "licence", "repository_url", "website_url", "last_verified",
)
TOOL_UPDATABLE_FIELDS = tuple(name for name in TOOL_FIELDS if name != "slug")

PRICE_ITEM_FIELDS = (
    "tool", "item", "unit", "tier", "input_usd_per_mtok", "output_usd_per_mtok", "amount_usd", "discount_percent",
    "is_lower_bound", "notes", "position", "verified_on", "source",
)
PRICE_ITEM_UPDATABLE_FIELDS = tuple(name for name in PRICE_ITEM_FIELDS if name != "tool")
AMOUNT_UNITS = {
    PriceItem.Unit.PER_HOUR, PriceItem.Unit.PER_MONTH, PriceItem.Unit.PER_AUDIO_HOUR,
    PriceItem.Unit.PER_MTOK_TRAINING, PriceItem.Unit.CREDIT,
}

SOURCE_FIELDS = ("key", "title", "url", "publisher", "verified_on", "notes")
SOURCE_UPDATABLE_FIELDS = tuple(name for name in SOURCE_FIELDS if name != "key")


def _validate_tool(tool: Tool) -> None:
    if tool.rating is not None and tool.rating_source_id is None:
        raise ValidationError({"rating_source": [RATING_NEEDS_SOURCE]})
    tool.full_clean()


@transaction.atomic
def tool_create(
    *,
    actor: Any,
    slug: str,
    name: str,
    kind: str,
    family: str = "",
    summary: str = "",
    rating: Decimal | None = None,
    rating_source: Source | None = None,
    rank: int | None = None,
    verdict: str = "",
    ideal_for: str = "",
    pricing_summary: str = "",
    licence: Licence | None = None,
    repository_url: str = "",
    website_url: str = "",
    last_verified: datetime.date | None = None,
    sources: Iterable[Source] = (),
) -> Tool:
    generation_bump()
    tool = Tool(
        slug=slug, name=name, kind=kind, family=family, summary=summary, rating=rating, rating_source=rating_source,
        rank=rank, verdict=verdict, ideal_for=ideal_for, pricing_summary=pricing_summary, licence=licence,
        repository_url=repository_url, website_url=website_url, last_verified=last_verified,
    )
    return audited_create(
        actor=actor, instance=tool, fields=TOOL_FIELDS, validate=_validate_tool, many_to_many={"sources": sources}
    )


@transaction.atomic
def tool_update(*, actor: Any, tool: Tool, data: Mapping[str, Any]) -> Tool:
    """Apply the fields present in `data` (a partial update); the slug is the tool's identity and stays."""
    generation_bump()
    return audited_update(
        actor=actor, instance=tool, fields=TOOL_UPDATABLE_FIELDS, data=data, validate=_validate_tool,
        many_to_many_fields=("sources",),
    )


def _validate_price_item(price_item: PriceItem) -> None:
    if price_item.unit == PriceItem.Unit.PER_MTOK and (
        price_item.input_usd_per_mtok is None and price_item.output_usd_per_mtok is None
    ):
        raise ValidationError({"output_usd_per_mtok": [PRICE_NEEDS_TOKEN_PRICE]})
    if price_item.unit in AMOUNT_UNITS and price_item.amount_usd is None:
        raise ValidationError({"amount_usd": [PRICE_NEEDS_AMOUNT]})
    if price_item.unit == PriceItem.Unit.DISCOUNT and price_item.discount_percent is None:
        raise ValidationError({"discount_percent": [PRICE_NEEDS_DISCOUNT]})
    price_item.full_clean()


@transaction.atomic
def price_item_create(
    *,
    actor: Any,
    tool: Tool,
    item: str,
    unit: str,
    source: Source,
    tier: str = PriceItem.Tier.ON_DEMAND,
    input_usd_per_mtok: Decimal | None = None,
    output_usd_per_mtok: Decimal | None = None,
    amount_usd: Decimal | None = None,
    discount_percent: Decimal | None = None,
    is_lower_bound: bool = False,
    notes: str = "",
    position: int = 0,
    verified_on: datetime.date | None = None,
) -> PriceItem:
    generation_bump()
    price_item = PriceItem(
        tool=tool, item=item, unit=unit, tier=tier, input_usd_per_mtok=input_usd_per_mtok,
        output_usd_per_mtok=output_usd_per_mtok, amount_usd=amount_usd, discount_percent=discount_percent,
        is_lower_bound=is_lower_bound, notes=notes, position=position, verified_on=verified_on, source=source,
    )
    return audited_create(actor=actor, instance=price_item, fields=PRICE_ITEM_FIELDS, validate=_validate_price_item)


@transaction.atomic
def price_item_update(*, actor: Any, price_item: PriceItem, data: Mapping[str, Any]) -> PriceItem:
    """Apply the fields present in `data`; a price never moves to another tool (create a new one)."""
    generation_bump()
    return audited_update(
        actor=actor, instance=price_item, fields=PRICE_ITEM_UPDATABLE_FIELDS, data=data, validate=_validate_price_item
    )


@transaction.atomic
def source_create(
    *,
    actor: Any,
    key: str,
    title: str,
    url: str = "",
    publisher: str = "",
    verified_on: datetime.date | None = None,
    notes: str = "",
) -> Source:
    generation_bump()
    source = Source(key=key, title=title, url=url, publisher=publisher, verified_on=verified_on, notes=notes)
    return audited_create(actor=actor, instance=source, fields=SOURCE_FIELDS)


@transaction.atomic
def source_update(*, actor: Any, source: Source, data: Mapping[str, Any]) -> Source:
    """Apply the fields present in `data`; the key other records cite it by stays."""
    generation_bump()
    return audited_update(actor=actor, instance=source, fields=SOURCE_UPDATABLE_FIELDS, data=data)
