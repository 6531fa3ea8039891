"""REST endpoints of the catalog: prices, sources, hardware, formats, features, use cases, compare, changes, and the
serializers of a tool's facts (the tool endpoints, which add the probes' summaries, are probes.tool_apis).

Style (see docs/api.md): one APIView per resource URL, explicit Filter/Input/Output serializers
nested in the view, reads from catalog.selectors, writes through catalog.services. Lists are
small (the whole catalog is a few hundred rows), so they are returned whole, in a stable order.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import selectors, services
from catalog.models import (
    ABSENCE_ASPECTS,
    Change,
    HardwareTarget,
    LanguageModel,
    PriceItem,
    Source,
    Tool,
    UseCase,
)
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
from core.exceptions import ApplicationError
from core.fields import SlugLookupField
from catalog.comparison import compare_matrix

TAG_CATALOG = "catalog"
TAG_WRITES = "catalog writes (staff)"


# --- Shared output shapes ------------------------------------------------------------------------


class SourceRefSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()


class LicenceSerializer(serializers.Serializer):
    spdx_id = serializers.CharField()
    name = serializers.CharField()
    is_open_source = serializers.BooleanField()


class HeadlinePriceSerializer(serializers.Serializer):
    free = serializers.BooleanField(help_text="Open-source software: no per-token price, only your hardware.")
    item = serializers.CharField(allow_null=True, help_text="The price item as the source names it.")
    model = serializers.CharField(allow_null=True, help_text="Slug of the model the price is for.")
    model_name = serializers.CharField(allow_null=True)
    is_reference_model = serializers.BooleanField(
        help_text="The price is for gpt-oss-120b, the model every headline price is compared on; "
        "other models' prices are never ranked against it."
    )
    input_usd_per_mtok = serializers.CharField(allow_null=True)
    output_usd_per_mtok = serializers.CharField(allow_null=True)
    blended_usd_per_mtok = serializers.CharField(
        allow_null=True, help_text="Three parts input to one part output, per 1M tokens."
    )


@extend_schema_field(HeadlinePriceSerializer(allow_null=True))
class HeadlinePriceField(serializers.Field):
    csv_serializer = HeadlinePriceSerializer()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, allow_null=True, **kwargs)

    def to_representation(self, tool: Tool) -> dict[str, Any] | None:
        return selectors.headline_price_value(tool)


class ToolRefSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class PriceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    tool = serializers.CharField(source="tool.slug")
    tool_name = serializers.CharField(source="tool.name")
    item = serializers.CharField()
    unit = serializers.CharField()
    tier = serializers.CharField()
    input_usd_per_mtok = serializers.DecimalField(max_digits=10, decimal_places=4, allow_null=True)
    output_usd_per_mtok = serializers.DecimalField(max_digits=10, decimal_places=4, allow_null=True)
    amount_usd = serializers.DecimalField(max_digits=12, decimal_places=4, allow_null=True)
    discount_percent = serializers.DecimalField(max_digits=5, decimal_places=2, allow_null=True)
    is_lower_bound = serializers.BooleanField()
    notes = serializers.CharField()
    verified_on = serializers.DateField(allow_null=True)
    source = SourceRefSerializer()


class DetailHardwareSerializer(serializers.Serializer):
    slug = serializers.CharField(source="hardware.slug")
    name = serializers.CharField(source="hardware.name")
    category = serializers.CharField(source="hardware.category")
    level = serializers.CharField()
    notes = serializers.CharField()
    source = SourceRefSerializer(allow_null=True)


class DetailQuantFormatSerializer(serializers.Serializer):
    slug = serializers.CharField(source="quant_format.slug")
    name = serializers.CharField(source="quant_format.name")
    hardware_requirement = serializers.CharField(source="quant_format.hardware_requirement")
    notes = serializers.CharField()
    source = SourceRefSerializer(allow_null=True)


class DocumentedCheckSerializer(serializers.Serializer):
    check = serializers.CharField(help_text="A compat check name (the probes' vocabulary).")
    outcome = serializers.CharField()
    model = serializers.CharField(help_text="The model the statement is limited to; empty for every model.")
    not_with = serializers.ListField(
        child=serializers.CharField(), help_text="Checks it is documented not to combine with in one request."
    )
    note = serializers.CharField()
    source = serializers.CharField(source="source_key", help_text="Key of the source that states it.")


class DetailApiSurfaceSerializer(serializers.Serializer):
    slug = serializers.CharField(source="api_surface.slug")
    name = serializers.CharField(source="api_surface.name")
    gaps = serializers.CharField()
    checks = DocumentedCheckSerializer(source="documented_checks", many=True,
                                       help_text="The documented gaps as data, each with its own source.")
    source = SourceRefSerializer(allow_null=True)


class DetailFeatureSerializer(serializers.Serializer):
    slug = serializers.CharField(source="feature.slug")
    name = serializers.CharField(source="feature.name")
    notes = serializers.CharField()
    source = SourceRefSerializer(allow_null=True)


class DocumentedAbsenceSerializer(serializers.Serializer):
    aspect = serializers.ChoiceField(choices=ABSENCE_ASPECTS)
    slug = serializers.CharField(source="subject.slug")
    name = serializers.CharField(source="subject.name")
    notes = serializers.CharField()
    source = SourceRefSerializer()


class ToolCaveatSerializer(serializers.Serializer):
    key = serializers.CharField()
    severity = serializers.CharField()
    title = serializers.CharField()
    body = serializers.CharField()
    source = SourceRefSerializer()


# --- Prices --------------------------------------------------------------------------------------


class PriceListApi(ListApi):
    csv_filename = "prices"
    csv_serializer_class = PriceOutputSerializer

    class FilterSerializer(serializers.Serializer):
        # The price selector filters by the Tool itself, not its slug.
        tool = SlugLookupField(
            slug_field="slug", queryset=Tool.objects.all(), required=False, help_text="Tool slug.",
            error_messages={"does_not_exist": 'No tool with the slug "{value}".'},
        )
        unit = serializers.ChoiceField(choices=PriceItem.Unit.choices, required=False, help_text="Price unit.")
        tier = serializers.ChoiceField(choices=PriceItem.Tier.choices, required=False, help_text="Price tier.")

    class InputSerializer(serializers.Serializer):
        tool = SlugLookupField(slug_field="slug", queryset=Tool.objects.all())
        item = serializers.CharField(max_length=160)
        unit = serializers.ChoiceField(choices=PriceItem.Unit.choices)
        tier = serializers.ChoiceField(choices=PriceItem.Tier.choices, required=False)
        input_usd_per_mtok = serializers.DecimalField(
            max_digits=10, decimal_places=4, min_value=0, required=False, allow_null=True
        )
        output_usd_per_mtok = serializers.DecimalField(
            max_digits=10, decimal_places=4, min_value=0, required=False, allow_null=True
        )
        amount_usd = serializers.DecimalField(
            max_digits=12, decimal_places=4, min_value=0, required=False, allow_null=True
        )
        discount_percent = serializers.DecimalField(
            max_digits=5, decimal_places=2, min_value=0, max_value=100, required=False, allow_null=True
        )
        is_lower_bound = serializers.BooleanField(required=False)
        notes = serializers.CharField(max_length=400, required=False, allow_blank=True)
        position = serializers.IntegerField(min_value=0, max_value=100_000, required=False)
        verified_on = serializers.DateField(required=False, allow_null=True)
        source = SlugLookupField(slug_field="key", queryset=Source.objects.all())

    @extend_schema(
        operation_id="prices_list",
        tags=[TAG_CATALOG],
        summary="List price items",
        description="Every price a source states, by tool. Each row carries its source and verification date.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("PriceList", PriceOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        price_items = selectors.price_item_list(filters=query_params(self.FilterSerializer, request))
        return list_response(rows=PriceOutputSerializer(price_items, many=True).data)

    @extend_schema(
        operation_id="prices_create",
        tags=[TAG_WRITES],
        summary="Create a price item (staff)",
        description="Needs a staff token. `source` is a key of /api/v1/sources/; answers the new price as stored.",
        request=InputSerializer,
        responses={201: PriceOutputSerializer},
        examples=[
            OpenApiExample(
                "Per-token price",
                request_only=True,
                value={"tool": "groq", "item": "gpt-oss-120b", "unit": "per_mtok", "input_usd_per_mtok": "0.15",
                       "output_usd_per_mtok": "0.60", "source": "groq-pricing", "verified_on": "2026-10-19"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        price_item = services.price_item_create(actor=request.user, **validated_body(self.InputSerializer, request))
        return Response(
            PriceOutputSerializer(selectors.price_item_get(pk=price_item.pk)).data, status=status.HTTP_201_CREATED
        )


class PriceDetailInputSerializer(PriceListApi.InputSerializer):
    tool = None


class PriceDetailApi(APIView):
    not_found = "No price item with the id {pk}."

    @extend_schema(
        operation_id="prices_retrieve", tags=[TAG_CATALOG], summary="One price item",
        description="A price as its source states it, with the source and the day it was last verified.",
        responses={200: PriceOutputSerializer},
    )
    @cached_get
    def get(self, request: Request, pk: int) -> Response:
        return Response(PriceOutputSerializer(select_or_404(selectors.price_item_get, self.not_found, pk=pk)).data)

    @extend_schema(
        operation_id="prices_partial_update", tags=[TAG_WRITES], summary="Change a price item (staff)",
        description="Only the fields sent change; `verified_on` moves only when you send it.",
        request=PriceDetailInputSerializer(partial=True), responses={200: PriceOutputSerializer},
    )
    def patch(self, request: Request, pk: int) -> Response:
        price_item = select_or_404(selectors.price_item_get, self.not_found, pk=pk)
        data = validated_body(PriceDetailInputSerializer, request, partial=True)
        services.price_item_update(actor=request.user, price_item=price_item, data=data)
        return Response(PriceOutputSerializer(selectors.price_item_get(pk=pk)).data)


# --- Sources -------------------------------------------------------------------------------------


class SourceOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    publisher = serializers.CharField()
    verified_on = serializers.DateField(allow_null=True)
    notes = serializers.CharField()


class SourceInputSerializer(serializers.Serializer):
    key = serializers.SlugField(max_length=120)
    title = serializers.CharField(max_length=300)
    url = serializers.URLField(max_length=500, required=False, allow_blank=True)
    publisher = serializers.CharField(max_length=200, required=False, allow_blank=True)
    verified_on = serializers.DateField(required=False, allow_null=True)
    notes = serializers.CharField(required=False, allow_blank=True)


class SourceListApi(ListApi):
    csv_filename = "sources"
    csv_serializer_class = SourceOutputSerializer

    @extend_schema(
        operation_id="sources_list", tags=[TAG_CATALOG], summary="List sources",
        description="Every document a fact in the catalog cites, by key.",
        responses={200: list_envelope("SourceList", SourceOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=SourceOutputSerializer(selectors.source_list(), many=True).data)

    @extend_schema(
        operation_id="sources_create",
        tags=[TAG_WRITES],
        summary="Create a source (staff)",
        description="Needs a staff token. Prices, tools and figures cite a source by its `key`.",
        request=SourceInputSerializer,
        responses={201: SourceOutputSerializer},
        examples=[
            OpenApiExample(
                "Vendor page",
                request_only=True,
                value={"key": "groq-pricing", "title": "Groq pricing", "url": "https://groq.com/pricing",
                       "verified_on": "2026-10-19"},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        source = services.source_create(actor=request.user, **validated_body(SourceInputSerializer, request))
        return Response(SourceOutputSerializer(source).data, status=status.HTTP_201_CREATED)


class SourceDetailInputSerializer(SourceInputSerializer):
    key = None


class SourceDetailApi(APIView):
    not_found = 'No source with the key "{key}".'

    @extend_schema(
        operation_id="sources_retrieve", tags=[TAG_CATALOG], summary="One source",
        description="A document the catalog cites: its title, publisher, URL and the day it was read.",
        responses={200: SourceOutputSerializer},
    )
    @cached_get
    def get(self, request: Request, key: str) -> Response:
        return Response(SourceOutputSerializer(select_or_404(selectors.source_get, self.not_found, key=key)).data)

    @extend_schema(
        operation_id="sources_partial_update", tags=[TAG_WRITES], summary="Change a source (staff)",
        description="Only the fields sent change.",
        request=SourceDetailInputSerializer(partial=True), responses={200: SourceOutputSerializer},
    )
    def patch(self, request: Request, key: str) -> Response:
        source = select_or_404(selectors.source_get, self.not_found, key=key)
        data = validated_body(SourceDetailInputSerializer, request, partial=True)
        return Response(SourceOutputSerializer(services.source_update(actor=request.user, source=source, data=data)).data)


# --- Hardware, formats, features, API surfaces ---------------------------------------------------


class HardwareSpecOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    vendor = serializers.CharField()
    hardware_target = serializers.CharField(source="hardware_target.slug", allow_null=True, default=None)
    memory_gb = serializers.DecimalField(max_digits=7, decimal_places=1)
    bandwidth_gb_s = serializers.DecimalField(max_digits=8, decimal_places=1)
    memory_kind = serializers.CharField()
    is_unified_memory = serializers.BooleanField()
    notes = serializers.CharField()
    source = SourceRefSerializer()


class HardwareListApi(ListApi):
    csv_filename = "hardware"

    class OutputSerializer(serializers.Serializer):
        slug = serializers.CharField()
        name = serializers.CharField()
        vendor = serializers.CharField()
        category = serializers.CharField()
        tools = serializers.SerializerMethodField(help_text="Slugs of the tools that run on this hardware.")
        specs = HardwareSpecOutputSerializer(many=True, help_text="Devices of this family, for the fit calculator.")

        def get_tools(self, target: HardwareTarget) -> list[str]:
            return [support.tool.slug for support in target.support.all()]

    @extend_schema(
        operation_id="hardware_list", tags=[TAG_CATALOG], summary="List hardware targets",
        description="Hardware families with the tools that support them and the device specs (memory, bandwidth).",
        responses={200: list_envelope("HardwareList", OutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=self.OutputSerializer(selectors.hardware_target_list(), many=True).data)


class HardwareSpecListApi(ListApi):
    csv_filename = "hardware-specs"
    csv_serializer_class = HardwareSpecOutputSerializer

    @extend_schema(
        operation_id="hardware_specs_list", tags=[TAG_CATALOG], summary="List device specs",
        description="Memory capacity and bandwidth of each device, with its source.",
        responses={200: list_envelope("HardwareSpecList", HardwareSpecOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=HardwareSpecOutputSerializer(selectors.hardware_spec_list(), many=True).data)


class _ToolSlugsMixin(serializers.Serializer):
    tools = serializers.SerializerMethodField(help_text="Slugs of the tools that support it.")

    def get_tools(self, obj: Any) -> list[str]:
        return [support.tool.slug for support in obj.support.all()]


class QuantFormatListApi(ListApi):
    csv_filename = "quant-formats"

    class OutputSerializer(_ToolSlugsMixin):
        slug = serializers.CharField()
        name = serializers.CharField()
        description = serializers.CharField()
        hardware_requirement = serializers.CharField()
        bits_per_weight = serializers.DecimalField(max_digits=5, decimal_places=3, allow_null=True)
        source = SourceRefSerializer(allow_null=True)

    @extend_schema(
        operation_id="quant_formats_list", tags=[TAG_CATALOG], summary="List quantization formats",
        description="Formats with the hardware they need for native speed and the tools that load them.",
        responses={200: list_envelope("QuantFormatList", OutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=self.OutputSerializer(selectors.quant_format_list(), many=True).data)


class FeatureListApi(ListApi):
    csv_filename = "features"

    class OutputSerializer(_ToolSlugsMixin):
        slug = serializers.CharField()
        name = serializers.CharField()
        description = serializers.CharField()

    @extend_schema(
        operation_id="features_list", tags=[TAG_CATALOG], summary="List features",
        description="Serving features (continuous batching, prefix caching, ...) and the tools that have them.",
        responses={200: list_envelope("FeatureList", OutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=self.OutputSerializer(selectors.feature_list(), many=True).data)


class ApiSurfaceListApi(ListApi):
    csv_filename = "api-surfaces"

    class OutputSerializer(_ToolSlugsMixin):
        slug = serializers.CharField()
        name = serializers.CharField()
        description = serializers.CharField()

    @extend_schema(
        operation_id="api_surfaces_list", tags=[TAG_CATALOG], summary="List API surfaces",
        description="APIs the tools speak (OpenAI chat completions, Anthropic Messages, gRPC, ...).",
        responses={200: list_envelope("ApiSurfaceList", OutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=self.OutputSerializer(selectors.api_surface_list(), many=True).data)


# --- Use cases -----------------------------------------------------------------------------------


class UseCaseRecommendationSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    tool = serializers.CharField(source="tool.slug")
    tool_name = serializers.CharField(source="tool.name")
    reason = serializers.CharField()
    is_recommended = serializers.BooleanField(
        help_text="false: a source lists the tool here but the project does not recommend it (see its caveats)."
    )
    source = SourceRefSerializer()


class UseCaseListApi(ListApi):
    csv_filename = "use-cases"

    class FilterSerializer(serializers.Serializer):
        group = serializers.ChoiceField(
            choices=UseCase.Group.choices, required=False, help_text="Which part of the guide the use case belongs to."
        )

    class OutputSerializer(serializers.Serializer):
        slug = serializers.CharField()
        title = serializers.CharField()
        question = serializers.CharField()
        group = serializers.CharField()
        summary = serializers.CharField()
        recommendations = UseCaseRecommendationSerializer(many=True)
        sources = SourceRefSerializer(many=True)

    @extend_schema(
        operation_id="use_cases_list", tags=[TAG_CATALOG], summary="List use cases",
        description="Questions (\"which engine for ...?\") with ordered recommendations, each with its reason "
        "and source.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("UseCaseList", OutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        filters = query_params(self.FilterSerializer, request)
        use_cases = selectors.use_case_list(group=filters.get("group"))
        return list_response(rows=self.OutputSerializer(use_cases, many=True).data)


# --- Compare -------------------------------------------------------------------------------------


class CompareApi(APIView):
    class FilterSerializer(serializers.Serializer):
        tools = serializers.CharField(
            max_length=400,
            help_text=f"Comma-separated tool slugs, {selectors.COMPARE_MIN_TOOLS} to {selectors.COMPARE_MAX_TOOLS}, "
            "in the column order wanted.",
        )

    class RowSerializer(serializers.Serializer):
        section = serializers.CharField()
        key = serializers.CharField()
        label = serializers.CharField()
        cells = serializers.ListField(child=serializers.DictField(), help_text="One cell per tool, in order.")
        differs = serializers.BooleanField(help_text="true when two tools have known values here and they differ.")
        not_stated_for = serializers.ListField(child=serializers.CharField(),
                                               help_text="Names of the tools for which no source states this.")

    @extend_schema(
        operation_id="compare_retrieve",
        tags=[TAG_CATALOG],
        summary="Compare tools side by side",
        description="The compare page's matrix: one row per fact any of the tools has, one cell per tool, the rows "
        "where two tools have known, different values marked, and for each row the tools it is not stated for.",
        parameters=[FilterSerializer],
        responses={
            200: inline_serializer(
                name="Comparison",
                fields={"tools": ToolRefSerializer(many=True), "rows": RowSerializer(many=True)},
            )
        },
    )
    @cached_get
    def get(self, request: Request) -> Response:
        params = query_params(self.FilterSerializer, request)
        try:
            slugs = selectors.compare_parse_slugs(params["tools"])
        except selectors.CompareError as error:
            raise ApplicationError(error.message, code=error.code, fields={"tools": [error.message]}) from None
        matrix = compare_matrix(selectors.tool_compare(slugs=slugs))
        return Response(
            {
                "tools": [{"slug": tool.slug, "name": tool.name} for tool in matrix.tools],
                "rows": [
                    {
                        "section": section.key, "key": row.key, "label": row.label,
                        "cells": [{"state": cell.state, "label": cell.label, "note": cell.note} for cell in row.cells],
                        "differs": row.differs, "not_stated_for": row.not_stated_for,
                    }
                    for section in matrix.sections for row in section.rows
                ],
            }
        )


# --- Changes -------------------------------------------------------------------------------------


class ChangeOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    recorded_at = serializers.DateTimeField()
    effective_on = serializers.DateField(allow_null=True, help_text="When it took effect, where its source says.")
    title = serializers.CharField()
    subject = serializers.CharField()
    tool = serializers.CharField(source="tool.slug", allow_null=True, default=None)
    model = serializers.CharField(source="model.slug", allow_null=True, default=None)
    hardware = serializers.CharField(source="hardware.slug", allow_null=True, default=None)
    before = serializers.JSONField(allow_null=True, help_text="{field: value} before; null for something new.")
    after = serializers.JSONField(allow_null=True)
    source = SourceRefSerializer(allow_null=True)
    url = serializers.CharField(help_text="Where the change shows: a path on this site or a publisher's link.")


class ChangeListApi(ListApi):
    csv_filename = "changes"
    OutputSerializer = ChangeOutputSerializer

    class FilterSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=Change.Kind.choices, required=False, help_text="Kind of change.")
        tool = SlugFilterField(queryset=Tool.objects.all(), listed_at="api:tool-list",
                               help_text="Engine or provider slug (see /tools/).")
        model = SlugFilterField(queryset=LanguageModel.objects.all(), listed_at="api:model-list",
                                help_text="Model slug (see /models/).")
        hardware = SlugFilterField(queryset=HardwareTarget.objects.all(), listed_at="api:hardware-list",
                                   help_text="Hardware target slug.")
        since = serializers.DateField(required=False, help_text="Only changes recorded on or after this date.")
        limit = serializers.IntegerField(
            required=False, min_value=1, max_value=selectors.CHANGE_MAX_LIMIT, default=selectors.CHANGE_LIMIT,
            help_text=f"How many of the newest changes (default {selectors.CHANGE_LIMIT}).",
        )

    @extend_schema(
        operation_id="changes_list",
        tags=[TAG_CATALOG],
        summary="List changes",
        description="Dated changes of what the site shows, newest first: prices, releases, licences, documented "
        "gaps, ratings, published evidence, and measured regressions and recoveries, each with before and after.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("ChangeList", ChangeOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        filters = query_params(self.FilterSerializer, request)
        changes = selectors.change_list(filters=filters, limit=filters.pop("limit"))
        return list_response(rows=ChangeOutputSerializer(changes, many=True).data)
