"""Unit tests of the API's building blocks: CSV flattening, cursors, and the error shape."""
import pytest
from rest_framework import exceptions, serializers

from core.exceptions import ApplicationError, api_exception_handler
from core.pagination import decode_cursor_token
from core.renderers import csv_columns, flatten_row


def test_flatten_row_dots_nested_objects_and_joins_scalar_lists():
    row = {"slug": "vllm", "licence": {"spdx_id": "Apache-2.0", "open": True}, "hardware": ["cuda", "rocm"],
           "price": None, "specs": [{"slug": "h100"}]}
    assert flatten_row(row) == {
        "slug": "vllm", "licence.spdx_id": "Apache-2.0", "licence.open": "true", "hardware": "cuda; rocm",
        "price": "", "specs": '[{"slug":"h100"}]',
    }


def test_csv_columns_keep_declared_order_and_widen_free_form_objects():
    rows = [flatten_row({"a": 1, "metrics": {"ttft": {"p50": 1}}, "price": None})]
    assert csv_columns(["a", "price.item", "metrics"], rows) == ["a", "price.item", "metrics.ttft.p50"]


@pytest.mark.parametrize(
    ("token", "position", "reverse"),
    [("cD0x", "1", False), ("cj0xJnA9OTIyMzM3MjAzNjg1NDc3NTgwNw==", "9223372036854775807", True)],
)
def test_cursor_tokens_written_by_the_paginator_decode(token, position, reverse):
    cursor = decode_cursor_token(token)
    assert (cursor.position, cursor.reverse, cursor.offset) == (position, reverse, 0)


@pytest.mark.parametrize(
    "token",
    [
        "", "!!!",
        "eDox",  # x:1, no position
        "cD0tMQ==",  # p=-1
        "cD1hYmM=",  # p=abc
        "cD05OTk5OTk5OTk5OTk5OTk5OTk5OTk5OQ==",  # p beyond a 64-bit id
        "cD0xJnI9Mg==",  # r=2
        "cD0xJnA9Mg==",  # p given twice
        "bjoxMDAx",  # n:1001, the format before CursorPagination
    ],
)
def test_bad_cursors_are_validation_errors(token):
    with pytest.raises(serializers.ValidationError):
        decode_cursor_token(token)


def test_validation_errors_flatten_to_dotted_field_names():
    response = api_exception_handler(
        exceptions.ValidationError({"tool": ["Unknown."], "sources": {"1": ["Bad key."]}}), {}
    )
    assert response.status_code == 400
    assert response.data["error"]["fields"] == {"tool": ["Unknown."], "sources.1": ["Bad key."]}
    assert response.data["error"]["code"] == "invalid"


def test_application_errors_are_400s_with_their_code():
    response = api_exception_handler(ApplicationError("No.", code="too_few", fields={"tools": ["No."]}), {})
    assert (response.status_code, response.data["error"]["code"]) == (400, "too_few")


def test_throttled_rounds_retry_after_up():
    response = api_exception_handler(exceptions.Throttled(wait=0.2), {})
    assert response["Retry-After"] == "1"
