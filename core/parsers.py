"""Request bodies the API reads: JSON within a size and a nesting limit, refused with the limit named."""
from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

# No document the API accepts comes near this; Python's parser would fail with RecursionError far deeper.
MAX_JSON_DEPTH = 64
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def body_too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit:,} bytes; send at most {limit:,}."


def nesting_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether arrays and objects in the JSON `text` nest deeper than `limit` (brackets inside strings ignored)."""
    depth = 0
    for bracket in _BRACKETS.finditer(_STRINGS.sub('""', text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def loads_bounded(text: str) -> Any:
    """json.loads with the nesting limit; a ParseError names what is wrong."""
    if nesting_depth_exceeds(text):
        raise ParseError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels is refused.")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ParseError(f"JSON parse error: {exc}") from None


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(body_too_large_message(limit))
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError:
            raise ParseError(f"The body is not valid {encoding} text.") from None
        return loads_bounded(text)
