"""Extension points through which the apps built on the catalog add to its tool pages and API.

The catalog is the bottom layer and imports none of them; an app above registers, in its
``AppConfig.ready``, what it knows about a tool, and the catalog API asks the registry. The page side
needs no registry: the project-level tool page template loads the higher app's inclusion tags.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework import serializers

from catalog.models import Tool


@dataclass(frozen=True)
class ToolDetailField:
    """One more field of the tool detail API (``/api/v1/tools/<slug>/``), after the catalog's own.

    ``field(source)`` builds the serializer field that reads the value from ``source``; ``value(tool)``
    computes the value once per response.
    """

    name: str
    field: Callable[[str], serializers.Field]
    value: Callable[[Tool], Any]


_TOOL_DETAIL_FIELDS: dict[str, ToolDetailField] = {}


def tool_detail_field_register(
    *, name: str, field: Callable[[str], serializers.Field], value: Callable[[Tool], Any]
) -> None:
    """Add (or, when an app is set up again, replace) the tool detail API field called ``name``."""
    _TOOL_DETAIL_FIELDS[name] = ToolDetailField(name=name, field=field, value=value)


def tool_detail_fields() -> list[ToolDetailField]:
    """The registered fields, in registration order (which is INSTALLED_APPS order)."""
    return list(_TOOL_DETAIL_FIELDS.values())
