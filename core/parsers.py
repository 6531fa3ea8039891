"""Request bodies the API reads: JSON within a size and a nesting limit, refused with the limit named."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from probe_client import jsonlimits


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def body_too_large_message(limit: int) -> str:
    return f"The request body is larger than {limit:,} bytes; send at most {limit:,}."


def loads_bounded(text: str) -> Any:
    """json.loads within probe_client.jsonlimits' depth and size limits; a ParseError names what is wrong."""
    try:
        return jsonlimits.loads_bounded(text)
    except jsonlimits.JSONLimitError as exc:
        raise ParseError(f"{exc}.") from None
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
