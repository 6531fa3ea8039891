"""Building blocks every API view of the project shares."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import URLResolver, get_resolver, reverse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.cache import cached_get
from core.exceptions import error_body
from core.fields import SlugLookupField
from core.renderers import CSVRenderer

T = TypeVar("T")


def select_or_404(select: Callable[..., T], not_found: str, **lookup: Any) -> T:
    """`select(**lookup)`, or a 404 whose message is `not_found` formatted with the lookup."""
    try:
        return select(**lookup)
    except ObjectDoesNotExist:
        raise NotFound(not_found.format(**lookup)) from None


def validated_body(serializer_class: type[serializers.Serializer], request: Request, **kwargs: Any) -> dict[str, Any]:
    """Validate the request body; an invalid value is a 400 naming the field."""
    serializer = serializer_class(data=request.data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# A list endpoint: JSON, the browsable API, and CSV (`?format=csv`) with the same rows in the same order.
class ListApi(APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]
    csv_filename = "export"

    # The CSV header: the view's own OutputSerializer unless the view names another.
    @property
    def csv_serializer_class(self) -> type[serializers.Serializer] | None:
        return getattr(self, "OutputSerializer", None)


class SlugFilterField(SlugLookupField):
    """An optional query parameter naming an object by its slug: a 400 unless the object exists, else the slug
    itself, which is what the selectors filter by. `listed_at` names the URL of the list endpoint that holds the
    valid values; the 400 points there (a message may place it with `{listed_at}`)."""

    def __init__(
        self, *, queryset: QuerySet, listed_at: str, slug_field: str = "slug", required: bool = False, **kwargs: Any
    ) -> None:
        self.listed_at = listed_at
        not_found = f'No {queryset.model._meta.verbose_name} with the slug "{{value}}": the valid ones are listed at ' \
                    f"{{listed_at}}."
        kwargs["error_messages"] = {"does_not_exist": not_found, **kwargs.get("error_messages", {})}
        super().__init__(queryset=queryset, slug_field=slug_field, required=required, **kwargs)

    def fail(self, key: str, **kwargs: Any) -> None:
        super().fail(key, listed_at=reverse(self.listed_at), **kwargs)

    def to_internal_value(self, data: Any) -> str:
        return getattr(super().to_internal_value(data), self.slug_field)


def list_envelope(name: str, serializer_class: type[serializers.Serializer]) -> serializers.Serializer:
    """The schema of a whole-list answer: {"count": n, "results": [...]}."""
    return inline_serializer(
        name=name,
        fields={
            "count": serializers.IntegerField(help_text="Number of rows in `results` (the whole list)."),
            "results": serializer_class(many=True),
        },
    )


def query_params(
    serializer_class: type[serializers.Serializer], request: Request, *, lists: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Validate the query string; an invalid value is a 400 naming the parameter. The parameters named in `lists`
    accept repeats and comma-separated values."""
    params: dict[str, Any] = {key: request.query_params.get(key) for key in request.query_params if key != "format"}
    for name in lists:
        values = [part.strip() for value in request.query_params.getlist(name) for part in value.split(",")]
        params[name] = [value for value in values if value]
    serializer = serializer_class(data=params)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def list_response(*, rows: list[Any]) -> Response:
    return Response({"count": len(rows), "results": rows})


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown URLs under the API (including non-numeric ids) answer 404 in the API's error shape."""
    return JsonResponse(
        error_body(code="not_found", message=f"No API endpoint at {request.path}."), status=404
    )


class ApiIndexApi(APIView):
    """Every endpoint of this API, with the methods it answers and where its schema and docs are."""

    # Routes that are not endpoints a client calls.
    HIDDEN = ("not-found", "index")

    @extend_schema(operation_id="api_index", summary="Every endpoint of this API", responses=inline_serializer(
        name="ApiIndex", fields={
            "title": serializers.CharField(), "version": serializers.CharField(),
            "schema": serializers.CharField(), "docs": serializers.CharField(),
            "endpoints": serializers.ListField(child=inline_serializer(name="ApiEndpoint", fields={
                "path": serializers.CharField(),
                "methods": serializers.ListField(child=serializers.CharField()),
                "name": serializers.CharField(),
            })),
        }))
    @cached_get
    def get(self, request: Request) -> Response:
        prefix, resolver = get_resolver().namespace_dict[request.resolver_match.namespace]
        return Response({
            "title": settings.SPECTACULAR_SETTINGS["TITLE"],
            "version": settings.SPECTACULAR_SETTINGS["VERSION"],
            "schema": reverse("api:schema"),
            "docs": reverse("api:docs"),
            "endpoints": list(self._endpoints(resolver.url_patterns, f"/{prefix}")),
        })

    def _endpoints(self, patterns, prefix: str):
        for pattern in patterns:
            route = prefix + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", str(pattern.pattern))
            if isinstance(pattern, URLResolver):
                yield from self._endpoints(pattern.url_patterns, route)
                continue
            view = getattr(pattern.callback, "cls", None)
            if pattern.name and pattern.name not in self.HIDDEN and view is not None:
                methods = [method.upper() for method in ("get", "post", "patch", "put", "delete")
                           if hasattr(view, method)]
                yield {"path": route, "methods": methods, "name": pattern.name}
