"""Keyset (cursor) pagination: page N costs what page 1 costs, because it seeks by key instead of skipping rows.

Rows come newest first by primary key. A cursor is an opaque token naming the key to continue after
(or, for the previous page, before); the database answers it with an index range scan.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.utils.urls import remove_query_param, replace_query_param

CURSOR_PARAM = "cursor"
PAGE_SIZE_PARAM = "page_size"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
INVALID_CURSOR = "Invalid cursor: use the `next` or `previous` link of a page."

Direction = Literal["n", "p"]


@dataclass(frozen=True)
class Cursor:
    direction: Direction
    key: int

    def encode(self) -> str:
        return base64.urlsafe_b64encode(f"{self.direction}:{self.key}".encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("ascii")
            direction, key = raw.split(":", 1)
            number = int(key)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise serializers.ValidationError(INVALID_CURSOR) from None
        if direction not in ("n", "p") or number < 0 or number > 2**63 - 1:
            raise serializers.ValidationError(INVALID_CURSOR)
        return cls(direction=direction, key=number)  # type: ignore[arg-type]


class KeysetParamsSerializer(serializers.Serializer):
    cursor = serializers.CharField(
        required=False, max_length=64, help_text="Opaque token from the `next` or `previous` link of a page."
    )
    page_size = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_PAGE_SIZE,
        default=DEFAULT_PAGE_SIZE,
        help_text=f"Rows per page, 1 to {MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE}).",
    )

    def validate_cursor(self, value: str) -> Cursor:
        return Cursor.decode(value)


@dataclass(frozen=True)
class KeysetPage:
    items: list[Any]
    next_cursor: Cursor | None
    previous_cursor: Cursor | None


def keyset_paginate(
    queryset: QuerySet, *, cursor: Cursor | None, page_size: int, key: Callable[[Any], int] = attrgetter("pk")
) -> KeysetPage:
    """One page of `queryset` newest first by pk, plus the cursors around it (one extra row tells if more exist).

    `key` reads the primary key of a row (rows may be model instances or `values()` dicts).
    """
    if cursor is not None and cursor.direction == "p":
        rows = list(queryset.filter(pk__gt=cursor.key).order_by("pk")[: page_size + 1])
        has_more = len(rows) > page_size
        items = list(reversed(rows[:page_size]))
        return KeysetPage(
            items=items,
            next_cursor=Cursor("n", key(items[-1])) if items else Cursor("n", cursor.key + 1),
            previous_cursor=Cursor("p", key(items[0])) if has_more else None,
        )
    if cursor is not None:
        queryset = queryset.filter(pk__lt=cursor.key)
    rows = list(queryset.order_by("-pk")[: page_size + 1])
    has_more = len(rows) > page_size
    items = rows[:page_size]
    previous_cursor = None
    if cursor is not None:
        previous_cursor = Cursor("p", key(items[0])) if items else Cursor("p", cursor.key - 1)
    return KeysetPage(
        items=items,
        next_cursor=Cursor("n", key(items[-1])) if has_more else None,
        previous_cursor=previous_cursor,
    )


def page_links(request: Request, page: KeysetPage) -> dict[str, str | None]:
    url = remove_query_param(request.build_absolute_uri(), CURSOR_PARAM)
    return {
        "next": replace_query_param(url, CURSOR_PARAM, page.next_cursor.encode()) if page.next_cursor else None,
        "previous": (
            replace_query_param(url, CURSOR_PARAM, page.previous_cursor.encode()) if page.previous_cursor else None
        ),
    }


def link_header(links: dict[str, str | None]) -> str:
    return ", ".join(f'<{url}>; rel="{rel}"' for rel, url in links.items() if url)
