"""One error shape for the whole API: {"error": {"code", "message", "fields"}}.

Every failure a client can cause, and every failure it cannot (a bug: 500), leaves the API in
this shape, so a script needs exactly one code path to report what went wrong.
"""
from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error

from core.parsers import RequestTooLarge, body_too_large_message

logger = logging.getLogger(__name__)

NON_FIELD_KEY = "non_field_errors"

ERROR_MESSAGES = {
    status.HTTP_400_BAD_REQUEST: "The request is invalid; see the fields for what to change.",
    status.HTTP_401_UNAUTHORIZED: "Authentication credentials were not provided or are not valid.",
    status.HTTP_403_FORBIDDEN: "You do not have permission to perform this action.",
    status.HTTP_404_NOT_FOUND: "Not found.",
    status.HTTP_500_INTERNAL_SERVER_ERROR: "The server failed to answer this request; the failure has been logged.",
}


class ApplicationError(Exception):
    """A rule of the domain that a request broke; the API answers 400 with this message."""

    def __init__(self, message: str, *, code: str = "invalid", fields: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.fields = fields or {}


def _flatten_fields(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF nests errors for nested input; clients get one flat map of dotted field names to messages."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            flat.update(_flatten_fields(value, name))
    elif isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            flat[prefix or NON_FIELD_KEY] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                flat.update(_flatten_fields(item, f"{prefix}.{index}" if prefix else str(index)))
    else:
        flat[prefix or NON_FIELD_KEY] = [str(detail)]
    return {name: messages for name, messages in flat.items() if messages}


def _first_code(detail: Any) -> str | None:
    if isinstance(detail, dict):
        for value in detail.values():
            code = _first_code(value)
            if code:
                return code
    elif isinstance(detail, list):
        for item in detail:
            code = _first_code(item)
            if code:
                return code
    return getattr(detail, "code", None)


def error_body(*, code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _validation_message(fields: dict[str, list[str]]) -> str:
    parts = [f"{name}: {' '.join(messages)}" for name, messages in fields.items()]
    return "Invalid input. " + " ".join(parts) if parts else ERROR_MESSAGES[400]


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    """DRF EXCEPTION_HANDLER: every exception becomes a response in the one error shape."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(*(exc.args or (ERROR_MESSAGES[404],)))
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(as_serializer_error(exc))
    elif isinstance(exc, RequestDataTooBig):
        exc = RequestTooLarge(body_too_large_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
    elif isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        exc = exceptions.ParseError(f"More than {limit:,} query parameters or form fields; send at most {limit:,}.")
    elif isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError(str(exc) or ERROR_MESSAGES[400])
    elif isinstance(exc, ApplicationError):
        return Response(
            error_body(code=exc.code, message=exc.message, fields=exc.fields), status=status.HTTP_400_BAD_REQUEST
        )

    if not isinstance(exc, exceptions.APIException):
        view = context.get("view")
        logger.exception("Unhandled error in %s", type(view).__name__ if view else "API view")
        return Response(
            error_body(code="server_error", message=ERROR_MESSAGES[500]),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )

    headers: dict[str, str] = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    wait = getattr(exc, "wait", None)
    if wait is not None:
        # Round up: a client told "0" would retry at once and be throttled again.
        headers["Retry-After"] = str(max(1, int(wait + 0.999)))

    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten_fields(exc.detail)
        body = error_body(code="invalid", message=_validation_message(fields), fields=fields)
    elif isinstance(exc, exceptions.ParseError):
        body = error_body(code=exc.default_code, message=str(exc.detail), fields={"body": [str(exc.detail)]})
    else:
        detail = exc.detail
        message = str(detail) if not isinstance(detail, (list, dict)) else ERROR_MESSAGES.get(exc.status_code, "")
        body = error_body(code=_first_code(detail) or exc.default_code, message=message)

    return Response(body, status=exc.status_code, headers=headers)
