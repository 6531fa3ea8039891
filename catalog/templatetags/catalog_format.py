"""Formatting of catalog facts for the pages: money, ratings, headline prices, filter controls."""
from __future__ import annotations

from decimal import Decimal

from django import template
from django.utils.html import format_html, format_html_join

from catalog.models import Tool
from catalog.selectors import REFERENCE_MODEL_SLUG, headline_price_value
from scoring.money import format_usd

register = template.Library()

EMPTY = "—"


@register.filter("rating")
def format_rating(rating: Decimal | None) -> str:
    return f"{rating:.1f}/5" if rating is not None else "Not rated"


@register.filter
def usd(amount: Decimal | None) -> str:
    return EMPTY if amount is None or amount == "" else format_usd(amount)


@register.filter
def secondary_price_for(price, tool) -> bool:
    """A hosted provider's price that cites another document than the provider's own page (the comparison guide,
    say): the page labels it secondary."""
    return tool.kind == Tool.Kind.PROVIDER and price.source.publisher != tool.name


@register.filter
def headline_price(tool) -> str:
    headline = headline_price_value(tool)
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
