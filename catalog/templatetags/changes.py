"""The before and after of a change, as the change page and the feeds show them."""
from __future__ import annotations

from typing import Any

from django import template

from catalog.models import Change

register = template.Library()

FIELD_LABELS = {
    "input_usd_per_mtok": "Input, USD per 1M tokens",
    "output_usd_per_mtok": "Output, USD per 1M tokens",
    "amount_usd": "Amount, USD",
    "discount_percent": "Discount, %",
    "latest_version": "Latest release",
    "older_series": "Published series now older",
    "reference": "Reference (median of earlier runs)",
    "spread": "Run-to-run spread",
    "threshold": "Move that counts",
    "runs": "Earlier runs compared",
    "value": "Value",
    "run": "Probe run",
}


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return "; ".join(_text(item) for item in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_text(item)}" for key, item in value.items())
    return str(value)


def _label(name: str) -> str:
    return FIELD_LABELS.get(name, name.replace("_", " ").capitalize())


def change_rows(change: Change) -> list[tuple[str, str, str]]:
    """(field, before, after) of each value a change records; lists are shown apart (change_lists)."""
    before, after = change.before or {}, change.after or {}
    names = [*before, *(name for name in after if name not in before)]
    return [(_label(name), _text(before.get(name)) if change.before is not None else "(new)", _text(after.get(name)))
            for name in names if not isinstance(after.get(name), list)]


def change_lists(change: Change) -> list[tuple[str, list[str]]]:
    return [(_label(name), [_text(item) for item in value])
            for name, value in (change.after or {}).items() if isinstance(value, list) and value]


@register.inclusion_tag("catalog/_change_values.html")
def change_values(change: Change) -> dict[str, Any]:
    return {"rows": change_rows(change), "lists": change_lists(change), "change": change}
