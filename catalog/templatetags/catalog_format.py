"""Formatting of catalog facts for the pages: money, ratings, price rows, filter controls."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template
from django.utils.html import format_html, format_html_join

from catalog.models import PriceItem
from catalog.selectors import REFERENCE_MODEL_SLUG, headline_price_value
from scoring.money import format_usd

register = template.Library()

EMPTY = "—"


def format_rating(rating: Decimal | None) -> str:
    return f"{rating:.1f}/5" if rating is not None else "Not rated"


def format_price_item(price: PriceItem | dict[str, Any]) -> str:
    """One price in words, from a PriceItem or the plain dict the comparison uses."""
    get = price.get if isinstance(price, dict) else lambda name: getattr(price, name)
    unit = get("unit")
    lower = "from " if get("is_lower_bound") else ""
    if unit in (PriceItem.Unit.PER_MTOK, PriceItem.Unit.PER_MTOK_TRAINING):
        input_usd, output_usd = get("input_usd_per_mtok"), get("output_usd_per_mtok")
        noun = "training tokens" if unit == PriceItem.Unit.PER_MTOK_TRAINING else "tokens"
        if input_usd is not None and output_usd is not None:
            return f"{lower}{format_usd(input_usd)} in / {format_usd(output_usd)} out per 1M {noun}"
        single = output_usd if output_usd is not None else input_usd if input_usd is not None else get("amount_usd")
        if single is not None:
            return f"{lower}{format_usd(single)} per 1M {noun}"
    amount = get("amount_usd")
    if unit == PriceItem.Unit.DISCOUNT and get("discount_percent") is not None:
        return f"{lower}{Decimal(str(get('discount_percent'))).normalize():f}% off"
    suffix = {
        PriceItem.Unit.PER_HOUR: " per hour",
        PriceItem.Unit.PER_MONTH: " per month",
        PriceItem.Unit.PER_AUDIO_HOUR: " per hour of audio",
        PriceItem.Unit.CREDIT: " credit",
    }.get(unit, "")
    if amount is not None:
        return f"{lower}{format_usd(amount)}{suffix}"
    if unit == PriceItem.Unit.FREE:
        return "Free"
    if unit == PriceItem.Unit.QUOTE:
        return "On request"
    return get("notes") or EMPTY


def format_headline_price(headline: dict[str, Any] | None) -> str:
    if headline is None:
        return "No per-token price stated"
    if headline["free"]:
        return "Free, open source"
    input_usd, output_usd = headline["input_usd_per_mtok"], headline["output_usd_per_mtok"]
    prices = f"{format_usd(input_usd)} / {format_usd(output_usd)}" if input_usd is not None else format_usd(output_usd)
    priced = headline.get("model_name") or headline["item"]
    if headline.get("is_reference_model"):
        return f"{prices} per 1M tokens ({priced})"
    return f"{prices} per 1M tokens ({priced}; no {REFERENCE_MODEL_SLUG} price, so not ranked by price)"


@register.filter
def usd(amount: Decimal | None) -> str:
    return EMPTY if amount is None or amount == "" else format_usd(amount)


@register.filter
def rating(value: Decimal | None) -> str:
    return format_rating(value)


@register.filter
def headline_price(tool) -> str:
    return format_headline_price(headline_price_value(tool))


@register.simple_tag
def filter_control(bound_field) -> str:
    """A filter form control without Django's per-widget template rendering, which dominated the page's cost."""
    field = bound_field.field
    attrs = {"name": bound_field.html_name, "id": bound_field.id_for_label}
    value = bound_field.data if bound_field.data is not None else ""
    if not hasattr(field, "choices"):
        return format_html(
            '<input type="search" name="{}" id="{}" value="{}" maxlength="{}" placeholder="{}">',
            attrs["name"], attrs["id"], value, field.max_length or "", "json schema, Mac, AMD, gguf…",
        )
    options = format_html_join(
        "",
        '<option value="{}"{}>{}</option>',
        ((choice, " selected" if str(choice) == str(value) else "", label) for choice, label in field.choices),
    )
    return format_html('<select name="{}" id="{}">{}</select>', attrs["name"], attrs["id"], options)
