"""The tool endpoints of the API: the catalog's facts about each engine and provider, with the probes' measurement
summaries of its targets in the detail (so they live above both apps). The serializers of the facts are the
catalog's (catalog.apis)."""
from __future__ import annotations

from functools import partial
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.reverse import reverse
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import selectors, services
from catalog.apis import (
    TAG_CATALOG,
    TAG_WRITES,
    DetailApiSurfaceSerializer,
    DetailFeatureSerializer,
    DetailHardwareSerializer,
    DetailQuantFormatSerializer,
    DocumentedAbsenceSerializer,
    HeadlinePriceField,
    LicenceSerializer,
    PriceOutputSerializer,
    SourceRefSerializer,
    ToolCaveatSerializer,
)
from catalog.models import Feature, HardwareTarget, Licence, Source, Tool
from core.apis import (
    ListApi,
    SlugFilterField,
    list_envelope,
    list_response,
    query_params,
    select_or_404,
    validated_body,
)
from core.cache import cached_get
from core.fields import SlugLookupField
from probes.apis import MeasurementSummaryOutputSerializer
from probes.selectors.api import measurement_summary_list


class ToolDetailOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    kind = serializers.CharField()
    family = serializers.CharField()
    summary = serializers.CharField()
    rating = serializers.DecimalField(max_digits=2, decimal_places=1, allow_null=True)
    rating_source = SourceRefSerializer(allow_null=True)
    rank = serializers.IntegerField(allow_null=True)
    verdict = serializers.CharField()
    ideal_for = serializers.CharField()
    pricing_summary = serializers.CharField()
    licence = LicenceSerializer(allow_null=True)
    open_source = serializers.BooleanField(source="is_open_source")
    repository_url = serializers.CharField()
    website_url = serializers.CharField()
    last_verified = serializers.DateField(allow_null=True)
    headline_price = HeadlinePriceField()
    prices = PriceOutputSerializer(source="price_items", many=True)
    hardware = DetailHardwareSerializer(source="hardware_support", many=True)
    quant_formats = DetailQuantFormatSerializer(source="quant_format_support", many=True)
    api_surfaces = DetailApiSurfaceSerializer(source="api_surface_support", many=True)
    features = DetailFeatureSerializer(source="feature_support", many=True)
    not_supported = DocumentedAbsenceSerializer(
        source="absences", many=True,
        help_text="What a source says the tool does not do (hardware, formats, features, API surfaces); a fact in "
        "neither this list nor the lists above is not stated by any source.",
    )
    caveats = ToolCaveatSerializer(many=True)
    sources = SourceRefSerializer(many=True)
    measurement_summaries = MeasurementSummaryOutputSerializer(
        many=True, help_text="Measured by the project's probes, per target of this tool; empty until a probe has run.",
    )


def _tool_detail_data(request: Request, slug: str) -> dict[str, Any]:
    tool = select_or_404(selectors.tool_get, 'No tool with the slug "{slug}".', slug=slug)
    tool.measurement_summaries = list(measurement_summary_list(filters={"tool": tool.slug}))
    # Price rows nest under their tool here, so each row's `tool` is the same object.
    for price in tool.price_items.all():
        price.tool = tool
    return ToolDetailOutputSerializer(tool, context={"request": request}).data


# --- Tools ---------------------------------------------------------------------------------------


class ToolListApi(ListApi):
    csv_filename = "tools"

    class FilterSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=Tool.Kind.choices, required=False, help_text="Kind of tool.")
        hardware = SlugFilterField(
            queryset=HardwareTarget.objects.all(), listed_at="api:hardware-list",
            help_text="Hardware target slug (see /api/v1/hardware/).",
        )
        licence = SlugFilterField(
            slug_field="spdx_id", queryset=Licence.objects.all(), listed_at="api:tool-list",
            help_text='SPDX id, e.g. "Apache-2.0", or "proprietary-service".',
            error_messages={"does_not_exist": 'No licence "{value}": the licences in use are the `licence` of each '
                                              "tool at {listed_at}."},
        )
        feature = SlugFilterField(
            queryset=Feature.objects.all(), listed_at="api:feature-list",
            help_text="Feature slug (see /api/v1/features/).",
        )
        open_source = serializers.BooleanField(required=False, help_text="true: open-source licences only.")
        min_rating = serializers.DecimalField(
            max_digits=2, decimal_places=1, min_value=0, max_value=5, required=False,
            help_text="Minimum rating (0 to 5); unrated tools are left out when set.",
        )
        q = serializers.CharField(
            required=False, max_length=200,
            help_text="Search by words, with the field's synonyms (json schema finds structured output, mac finds "
            "Apple silicon), in names, hardware, formats, features, API surfaces, the request parameters documented "
            "as working, and descriptions; best match first unless `ordering` is given.",
        )
        ordering = serializers.ChoiceField(
            choices=selectors.TOOL_SORTS, required=False, source="sort",
            help_text="rating (the default without q: best first, unrated last), name, or price (free software first, "
            "then the gpt-oss-120b price cheapest first by blended price, then prices of other models, unranked).",
        )

    class OutputSerializer(serializers.Serializer):
        slug = serializers.CharField()
        name = serializers.CharField()
        kind = serializers.CharField()
        family = serializers.CharField()
        summary = serializers.CharField()
        rating = serializers.DecimalField(max_digits=2, decimal_places=1, allow_null=True)
        rating_source = serializers.CharField(source="rating_source.key", allow_null=True, default=None)
        rank = serializers.IntegerField(allow_null=True)
        verdict = serializers.CharField()
        ideal_for = serializers.CharField()
        licence = serializers.CharField(source="licence.spdx_id", allow_null=True, default=None)
        open_source = serializers.BooleanField(source="is_open_source")
        headline_price = HeadlinePriceField()
        hardware = serializers.SerializerMethodField()
        last_verified = serializers.DateField(allow_null=True)
        matched = serializers.ListField(
            child=serializers.CharField(), source="match_reasons",
            help_text='With `q`: where the words were found ("serves gpt-oss-120b", "runs on AMD GPU (ROCm / HIP)", '
            '"name"); empty without `q`.',
        )
        url = serializers.SerializerMethodField()

        def get_hardware(self, tool: Tool) -> list[str]:
            return [support.hardware.slug for support in tool.hardware_support.all()]

        def get_url(self, tool: Tool) -> str:
            request = self.context.get("request")
            return reverse("api:tool-detail", kwargs={"slug": tool.slug}, request=request)

    class InputSerializer(serializers.Serializer):
        slug = serializers.SlugField(max_length=80)
        name = serializers.CharField(max_length=120)
        kind = serializers.ChoiceField(choices=Tool.Kind.choices)
        family = serializers.CharField(max_length=120, required=False, allow_blank=True)
        summary = serializers.CharField(required=False, allow_blank=True)
        rating = serializers.DecimalField(
            max_digits=2, decimal_places=1, min_value=0, max_value=5, required=False, allow_null=True
        )
        rating_source = SlugLookupField(
            slug_field="key", queryset=Source.objects.all(), required=False, allow_null=True
        )
        rank = serializers.IntegerField(min_value=1, max_value=10_000, required=False, allow_null=True)
        verdict = serializers.CharField(required=False, allow_blank=True)
        ideal_for = serializers.CharField(required=False, allow_blank=True)
        pricing_summary = serializers.CharField(required=False, allow_blank=True)
        licence = SlugLookupField(
            slug_field="spdx_id", queryset=Licence.objects.all(), required=False, allow_null=True
        )
        repository_url = serializers.URLField(max_length=500, required=False, allow_blank=True)
        website_url = serializers.URLField(max_length=500, required=False, allow_blank=True)
        last_verified = serializers.DateField(required=False, allow_null=True)
        sources = SlugLookupField(
            slug_field="key", queryset=Source.objects.all(), many=True, required=False
        )

    @extend_schema(
        operation_id="tools_list",
        tags=[TAG_CATALOG],
        summary="List tools",
        description="Every engine and provider matching the filters, with its headline price. `?format=csv` for CSV.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("ToolList", OutputSerializer)},
        examples=[
            OpenApiExample(
                "One row",
                response_only=True,
                value={"count": 1, "results": [{
                    "slug": "vllm", "name": "vLLM", "kind": "engine", "family": "vLLM", "summary": "...",
                    "rating": "4.7", "rating_source": "seed-002-comparison", "rank": 2, "verdict": "...",
                    "ideal_for": "...", "licence": "Apache-2.0", "open_source": True,
                    "headline_price": {"free": True, "item": None, "model": None, "model_name": None,
                                       "is_reference_model": False, "blended_usd_per_mtok": None,
                                       "input_usd_per_mtok": None,
                                       "output_usd_per_mtok": None},
                    "hardware": ["nvidia-cuda", "amd-rocm"], "last_verified": "2026-10-19",
                    "url": "http://127.0.0.1:8000/api/v1/tools/vllm/",
                }]},
            )
        ],
    )
    @cached_get
    def get(self, request: Request) -> Response:
        filters = query_params(self.FilterSerializer, request)
        tools = selectors.with_match_reasons(selectors.tool_list(filters=filters), filters.get("q") or "")
        rows = self.OutputSerializer(tools, many=True, context={"request": request}).data
        return list_response(rows=rows)

    @extend_schema(
        operation_id="tools_create",
        tags=[TAG_WRITES],
        summary="Create a tool (staff)",
        description="Needs a staff token. Answers the new tool as GET /api/v1/tools/{slug}/ shows it.",
        request=InputSerializer,
        responses={201: ToolDetailOutputSerializer},
        examples=[
            OpenApiExample(
                "New engine",
                request_only=True,
                value={"slug": "new-engine", "name": "New Engine", "kind": "engine", "licence": "Apache-2.0"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        tool = services.tool_create(actor=request.user, **validated_body(self.InputSerializer, request))
        return Response(_tool_detail_data(request, tool.slug), status=status.HTTP_201_CREATED)


# Each detail view's input is named after the view, as the schema names a serializer nested in a view.
class ToolDetailInputSerializer(ToolListApi.InputSerializer):
    slug = None


class ToolDetailApi(APIView):
    @extend_schema(
        operation_id="tools_retrieve", tags=[TAG_CATALOG], summary="One tool",
        description="Prices, hardware, formats, API surfaces, features, caveats, sources and the tool's "
        "measurement summaries (p50/p95/p99 and 72-hour medians per probe target).",
        responses={200: ToolDetailOutputSerializer},
    )
    @cached_get
    def get(self, request: Request, slug: str) -> Response:
        return Response(_tool_detail_data(request, slug))

    @extend_schema(
        operation_id="tools_partial_update", tags=[TAG_WRITES], summary="Change a tool (staff)",
        description="Only the fields sent change. `last_verified` moves only when you send it.",
        request=ToolDetailInputSerializer(partial=True), responses={200: ToolDetailOutputSerializer},
    )
    def patch(self, request: Request, slug: str) -> Response:
        tool = select_or_404(partial(selectors.tool_get, details=False), 'No tool with the slug "{slug}".', slug=slug)
        data = validated_body(ToolDetailInputSerializer, request, partial=True)
        services.tool_update(actor=request.user, tool=tool, data=data)
        return Response(_tool_detail_data(request, slug))
