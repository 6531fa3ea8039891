"""Keyset (cursor) pagination: page N costs what page 1 costs, because it seeks by key instead of skipping rows.

DRF's CursorPagination does the seeking (rows newest first by id; a cursor names the id to continue
after, or before for the previous page, and the database answers with an index range scan). This
subclass keeps the API's contract: the `page_size` parameter (1 to 500), a `Link` header beside the
`{next, previous, results}` envelope, and a 400 naming the `cursor` field, not a 404, for a cursor the
API did not hand out.
"""
from __future__ import annotations

import binascii
from base64 import b64decode
from typing import Any
from urllib import parse

from django.db.models import QuerySet
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

CURSOR_PARAM = "cursor"
PAGE_SIZE_PARAM = "page_size"
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
INVALID_CURSOR = "Invalid cursor: use the `next` or `previous` link of a page."
_LARGEST_ID = 2**63 - 1


class KeysetParamsSerializer(serializers.Serializer):
    """The pagination parameters, for a list's filter serializer to extend (validated, and documented)."""

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

    def validate_cursor(self, value: str) -> str:
        decode_cursor_token(value)
        return value


def decode_cursor_token(token: str) -> Cursor:
    """The cursor a token names; a ValidationError unless it is one KeysetPagination could have written.

    DRF's own decoding accepts any base64 text (an unknown key just means "first page") and leaves the
    position unchecked, so a forged token would reach the database as a non-numeric id.
    """
    try:
        querystring = b64decode(token.encode("ascii"), validate=True).decode("ascii")
        tokens = parse.parse_qs(querystring, keep_blank_values=True, strict_parsing=True)
    except (binascii.Error, UnicodeError, ValueError):
        raise serializers.ValidationError(INVALID_CURSOR) from None
    values = {name: items[0] for name, items in tokens.items() if len(items) == 1}
    if len(values) != len(tokens) or not {"p"} <= set(values) <= {"p", "r", "o"}:
        raise serializers.ValidationError(INVALID_CURSOR)
    position, reverse, offset = values["p"], values.get("r", "0"), values.get("o", "0")
    if not (position.isascii() and position.isdigit() and int(position) <= _LARGEST_ID):
        raise serializers.ValidationError(INVALID_CURSOR)
    if reverse not in ("0", "1") or not (offset.isascii() and offset.isdigit()):
        raise serializers.ValidationError(INVALID_CURSOR)
    return Cursor(offset=min(int(offset), KeysetPagination.offset_cutoff), reverse=reverse == "1", position=position)


class KeysetPagination(CursorPagination):
    ordering = "-id"
    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = PAGE_SIZE_PARAM
    max_page_size = MAX_PAGE_SIZE
    cursor_query_param = CURSOR_PARAM
    invalid_cursor_message = INVALID_CURSOR

    def decode_cursor(self, request: Request) -> Cursor | None:
        token = request.query_params.get(self.cursor_query_param)
        if token is None:
            return None
        try:
            return decode_cursor_token(token)
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({self.cursor_query_param: exc.detail}) from None

    def get_paginated_response(self, data: Any) -> Response:
        response = super().get_paginated_response(data)
        links = {"next": response.data["next"], "previous": response.data["previous"]}
        if any(links.values()):
            response["Link"] = ", ".join(f'<{url}>; rel="{rel}"' for rel, url in links.items() if url)
        return response


def keyset_page(queryset: QuerySet, *, request: Request) -> tuple[list[Any], KeysetPagination]:
    """One page of `queryset`, newest first by id (rows may be model instances or `values()` dicts), and
    the paginator that answers it (`paginator.get_paginated_response(rows)`)."""
    paginator = KeysetPagination()
    return list(paginator.paginate_queryset(queryset, request)), paginator


def page_envelope(name: str, serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    """The schema of one page: {"next": url|null, "previous": url|null, "results": [...]}."""
    return inline_serializer(
        name=name,
        fields={
            "next": serializers.URLField(allow_null=True),
            "previous": serializers.URLField(allow_null=True),
            "results": serializer_class(many=True),
        },
    )
