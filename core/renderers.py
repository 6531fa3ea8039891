"""CSV for every list endpoint: the rows of the JSON `results`, flattened, in the same order."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer

LIST_SEPARATOR = "; "


def flatten_row(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested objects become dotted columns; lists of scalars are joined, lists of objects become JSON."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(flatten_row(item, f"{prefix}.{key}" if prefix else str(key)))
        if not value and prefix:
            flat[prefix] = ""
        return flat
    if isinstance(value, list):
        if all(not isinstance(item, (dict, list)) for item in value):
            return {prefix: LIST_SEPARATOR.join("" if item is None else str(item) for item in value)}
        return {prefix: json.dumps(value, separators=(",", ":"), default=str)}
    if value is None:
        return {prefix: ""}
    if isinstance(value, bool):
        return {prefix: "true" if value else "false"}
    return {prefix: value}


def serializer_columns(serializer: serializers.BaseSerializer, prefix: str = "") -> list[str]:
    """The header an empty export still carries, so a client's parser sees the columns it expects."""
    columns: list[str] = []
    for name, field in serializer.fields.items():
        column = f"{prefix}.{name}" if prefix else name
        nested = field if isinstance(field, serializers.Serializer) else getattr(field, "csv_serializer", None)
        if nested is not None:
            columns.extend(serializer_columns(nested, column))
        else:
            columns.append(column)
    return columns


def csv_columns(declared: list[str], flat_rows: list[dict[str, Any]]) -> list[str]:
    """The declared columns, in order, whatever the rows hold; a free-form object column (metrics) widens
    into the keys the rows carry, and keys no declaration names are appended in first-seen order."""
    seen: dict[str, None] = {}
    for row in flat_rows:
        seen.update(dict.fromkeys(row))
    columns: list[str] = []
    for column in declared:
        widened = [key for key in seen if key.startswith(column + ".")]
        columns.extend(widened or [column])
    known = set(columns)
    for key in seen:
        if key not in known and not any(column.startswith(key + ".") for column in columns):
            columns.append(key)
    return columns


class _ResultsRenderer(BaseRenderer):
    """Renders `results` of a list response as a file named after the view (`csv_filename`); errors stay JSON so a
    client can always read them. A subclass turns the rows into text (`render_rows`)."""

    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict | None = None) -> bytes:
        renderer_context = renderer_context or {}
        response = renderer_context.get("response")
        if response is not None and response.status_code >= 400:
            response["Content-Type"] = "application/json"
            return JSONRenderer().render(data, "application/json", renderer_context)
        if data is None:
            return b""
        view = renderer_context.get("view")
        rows = data.get("results", []) if isinstance(data, dict) else data
        body = self.render_rows(rows, view)
        if response is not None:
            filename = getattr(view, "csv_filename", "export")
            response["Content-Disposition"] = f'inline; filename="{filename}.{self.format}"'
        return body.encode(self.charset)

    def render_rows(self, rows: list, view: Any) -> str:
        raise NotImplementedError


class CSVRenderer(_ResultsRenderer):
    """The rows flattened, under the columns of the view's `csv_serializer_class` (and any the rows add)."""

    media_type = "text/csv"
    format = "csv"

    def render_rows(self, rows: list, view: Any) -> str:
        flat_rows = [flatten_row(row) for row in rows]
        serializer_class = getattr(view, "csv_serializer_class", None)
        declared = serializer_columns(serializer_class()) if serializer_class else []
        columns = csv_columns(declared, flat_rows)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, restval="", extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat_rows)
        return buffer.getvalue()


class JSONLinesRenderer(_ResultsRenderer):
    """JSON Lines (one object per line), for per-record exports that tools stream."""

    media_type = "application/jsonl"
    format = "jsonl"

    def render_rows(self, rows: list, view: Any) -> str:
        return "".join(json.dumps(row, separators=(",", ":"), default=str) + "\n" for row in rows)
