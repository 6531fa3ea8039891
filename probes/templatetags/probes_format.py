"""Number formatting for the model and provider tables."""
from decimal import Decimal

from django import template

from core import decimals

register = template.Library()


@register.filter
def decimal_text(value: Decimal | None) -> str:
    """A stored decimal as its publisher wrote it: 500.0000 -> '500', 1.5400 -> '1.54'."""
    return decimals.decimal_text(value) or ""


@register.filter
def number_attr(value: Decimal | float | str | None) -> str:
    """A number for a data attribute that scripts parse: no grouping, a dot, full precision; '' for none
    (a missing template variable arrives as '')."""
    if value is None or value == "":
        return ""
    return f"{float(value):.15g}"


@register.filter
def get_item(mapping: dict, key: str):
    """mapping[key] for a key held in a variable (None when absent)."""
    return mapping.get(key) if isinstance(mapping, dict) else None
