"""OpenAPI for the whole API: one Error component, and the error answers every operation can give.

The AutoSchema below adds those error responses (with examples) to every operation, DRF views of
other apps included, so the published schema matches what the exception handler and throttles do
and a schema-driven fuzzer (schemathesis) can check every answer against it.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable reason, e.g. invalid, not_found, throttled.")
    message = serializers.CharField(help_text="What went wrong, in a sentence a person can act on.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Per-field messages for 400 answers, keyed by the query parameter or body field at fault.",
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


ERROR_EXAMPLES: dict[int, tuple[str, dict[str, Any]]] = {
    400: (
        "The request is invalid; `fields` names each query parameter or body field at fault.",
        {"code": "invalid", "message": "Invalid input. kind: \"robot\" is not a valid choice.",
         "fields": {"kind": ["\"robot\" is not a valid choice."]}},
    ),
    401: (
        "No valid token: send `Authorization: Token <key>`.",
        {"code": "not_authenticated", "message": "Authentication credentials were not provided.", "fields": {}},
    ),
    403: (
        "Authenticated, but only staff accounts may do this.",
        {"code": "permission_denied", "message": "Only staff accounts may change data.", "fields": {}},
    ),
    404: (
        "No such object (or no such URL).",
        {"code": "not_found", "message": "No tool with the slug \"nope\".", "fields": {}},
    ),
    406: (
        "None of the formats in the Accept header can be produced.",
        {"code": "not_acceptable", "message": "Could not satisfy the request Accept header.", "fields": {}},
    ),
    415: (
        "The body is not JSON (or a form).",
        {"code": "unsupported_media_type", "message": "Unsupported media type \"text/plain\" in request.",
         "fields": {}},
    ),
    429: (
        "Rate limit reached; wait the number of seconds in Retry-After.",
        {"code": "throttled", "message": "Request was throttled. Expected available in 42 seconds.", "fields": {}},
    ),
    500: (
        "A bug on our side; it has been logged.",
        {"code": "server_error", "message": "The server failed to answer this request; the failure has been logged.",
         "fields": {}},
    ),
}

RETRY_AFTER_HEADER = {
    "Retry-After": {
        "description": "Seconds to wait before the next request.",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    }
}

VALIDATOR_HEADERS = {
    "ETag": {
        "description": "Hash of this representation; send it back in If-None-Match.",
        "schema": {"type": "string"},
    },
    "Last-Modified": {
        "description": "When this exact representation was first served; send it back in If-Modified-Since.",
        "schema": {"type": "string"},
    },
}


class AtlasAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer: serializers.Serializer, direction: str) -> str:
        # Views nest their Filter/Input/Output serializers; name components after the view
        # ("ToolListOutput") so two views' "OutputSerializer" never collide.
        qualname = type(serializer).__qualname__
        if "." in qualname:
            owner, name = qualname.rsplit(".", 1)
            return owner.split(".")[-1].removesuffix("Api") + name
        return super().get_serializer_name(serializer, direction)

    def _error_codes(self) -> list[int]:
        codes = [401, 406, 429, 500]
        has_query = any(parameter.get("in") == "query" for parameter in self._get_parameters())
        is_write = self.method not in ("GET", "HEAD", "OPTIONS")
        if has_query or is_write:
            codes.append(400)
        if is_write:
            codes += [403, 415]
        if "{" in self.path:
            codes.append(404)
        return sorted(codes)

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        error_ref = self.resolve_serializer(ErrorSerializer, "response").ref
        if self.method == "GET":
            for code, response in responses.items():
                if code == "200":
                    response.setdefault("headers", {}).update(VALIDATOR_HEADERS)
            responses.setdefault(
                "304", {"description": "Not modified: the copy named by If-None-Match / If-Modified-Since is current."}
            )
        for code in self._error_codes():
            if str(code) in responses:
                continue
            description, example = ERROR_EXAMPLES[code]
            response: dict[str, Any] = {
                "description": description,
                "content": {
                    "application/json": {
                        "schema": error_ref,
                        "examples": {f"Error{code}": {"value": {"error": example}}},
                    }
                },
            }
            if code == 429:
                response["headers"] = dict(RETRY_AFTER_HEADER)
            responses[str(code)] = response
        return responses
