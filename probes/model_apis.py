"""/api/v1/models/ and /api/v1/models/<slug>/: the model pages as JSON and CSV, row for row in the pages' order.

Reads come from probes.selectors.language_models, the read model the HTML pages use, so a page and its API
cannot disagree. Both are lists (`?format=csv` renders `results`): the model index, and one model's tools.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from catalog.models import ReportedFigure
from catalog.selectors import BLENDED_QUANTUM
from core.apis import ListApi, list_envelope, list_response, select_or_404
from core.cache import cached_get
from core.decimals import decimal_text
from probes.selectors.language_models import Figure, ModelListRow, OfferingRow, model_comparison_get, model_list
from scoring.vocabulary import OUTPUT_SPEED, TTFAT, TTFT

TAG_MODELS = "models"
def _figure_value(figure: Figure | None) -> dict[str, Any] | None:
    if figure is None:
        return None
    reported = figure.reported
    return {
        "metric": figure.key,
        "value": figure.value,
        "evidence": figure.evidence,
        "workload": figure.workload,
        "publisher": reported.publisher if reported else None,
        "url": reported.url if reported else None,
        "observed_on": reported.observed_on.isoformat() if reported else None,
        "is_approximate": reported.is_approximate if reported else False,
    }


def _reported_value(figure: ReportedFigure) -> dict[str, Any]:
    return {
        "key": figure.key,
        "metric": figure.metric,
        "value": decimal_text(figure.value),
        "unit": figure.unit,
        "is_approximate": figure.is_approximate,
        "concurrency": figure.concurrency,
        "hardware": figure.hardware.slug if figure.hardware else None,
        "device_count": figure.device_count,
        "workload": figure.workload,
        "publisher": figure.publisher,
        "url": figure.url,
        "observed_on": figure.observed_on.isoformat(),
        "verified_on": figure.verified_on.isoformat(),
    }


def offering_row_value(row: OfferingRow) -> dict[str, Any]:
    price = row.price
    return {
        "tool": row.tool.slug,
        "tool_name": row.tool.name,
        "kind": row.tool.kind,
        "api_model_id": row.offering.api_model_id,
        "context_tokens": row.context_tokens,
        "input_usd_per_mtok": decimal_text(price.input_usd_per_mtok) if price else None,
        "output_usd_per_mtok": decimal_text(price.output_usd_per_mtok) if price else None,
        "blended_usd_per_mtok": decimal_text(row.blended_usd, quantum=BLENDED_QUANTUM),
        "price_tier": price.tier if price else None,
        "price_source": price.source.url or price.source.title if price else None,
        "price_verified_on": price.verified_on.isoformat() if price and price.verified_on else None,
        "output_speed_tps": _figure_value(row.output_speed),
        "first_token_ms": _figure_value(row.ttft),
        "first_answer_token_ms": _figure_value(row.ttfat),
        "documented_problems": [f"{name}: {outcome}" for name, outcome in row.documented_problems],
        "documented_checks": len(row.documented_checks),
        "measured_compat": dict(row.measured_compat),
        "reported_figures": [_reported_value(figure) for figure in row.reported],
    }


def model_list_row_value(row: ModelListRow, request: Request) -> dict[str, Any]:
    model = row.model
    return {
        "slug": model.slug,
        "name": model.name,
        "publisher": model.publisher,
        "params_total_b": decimal_text(model.params_total_b),
        "params_active_b": decimal_text(model.params_active_b),
        "licence": model.licence.spdx_id if model.licence else None,
        "provider_count": row.provider_count,
        "engine_count": row.engine_count,
        "cheapest_provider": row.cheapest.tool.slug if row.cheapest else None,
        "cheapest_blended_usd_per_mtok": (
            decimal_text(row.cheapest.blended_usd, quantum=BLENDED_QUANTUM) if row.cheapest else None
        ),
        "fastest_provider": row.fastest.tool.slug if row.fastest else None,
        "fastest_output_speed_tps": _figure_value(row.fastest.output_speed) if row.fastest else None,
        "url": reverse("api:model-detail", kwargs={"slug": model.slug}, request=request),
    }


def _figure_serializer(name: str) -> serializers.Serializer:
    return inline_serializer(
        name=name,
        fields={
            "metric": serializers.CharField(
                help_text=f"{TTFT.key}, {TTFAT.key} (first answer token) or {OUTPUT_SPEED.key}."
            ),
            "value": serializers.FloatField(
                help_text=f"In {TTFT.unit} or {OUTPUT_SPEED.unit}, as the metric's name says."
            ),
            "evidence": serializers.ChoiceField(
                choices=["measured", "reported"],
                help_text="measured: this site's 72-hour median; reported: a third party's published figure.",
            ),
            "workload": serializers.CharField(),
            "publisher": serializers.CharField(allow_null=True),
            "url": serializers.CharField(allow_null=True),
            "observed_on": serializers.CharField(allow_null=True),
            "is_approximate": serializers.BooleanField(),
        },
        allow_null=True,
    )


class ModelOfferingOutputSerializer(serializers.Serializer):
    tool = serializers.CharField()
    tool_name = serializers.CharField()
    kind = serializers.CharField()
    api_model_id = serializers.CharField()
    context_tokens = serializers.IntegerField(allow_null=True)
    input_usd_per_mtok = serializers.CharField(allow_null=True, help_text="For this model, per 1M tokens.")
    output_usd_per_mtok = serializers.CharField(allow_null=True)
    blended_usd_per_mtok = serializers.CharField(allow_null=True, help_text="3 parts input to 1 part output.")
    price_tier = serializers.CharField(allow_null=True)
    price_source = serializers.CharField(allow_null=True)
    price_verified_on = serializers.CharField(allow_null=True)
    output_speed_tps = _figure_serializer("ModelOutputSpeed")
    first_token_ms = _figure_serializer("ModelFirstToken")
    first_answer_token_ms = _figure_serializer("ModelFirstAnswerToken")
    documented_problems = serializers.ListField(child=serializers.CharField())
    documented_checks = serializers.IntegerField(help_text="OpenAI chat parameters the tool's documentation covers.")
    measured_compat = serializers.DictField(child=serializers.IntegerField())
    reported_figures = serializers.ListField(child=serializers.DictField())


class ModelListOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    publisher = serializers.CharField()
    params_total_b = serializers.CharField(allow_null=True)
    params_active_b = serializers.CharField(allow_null=True)
    licence = serializers.CharField(allow_null=True)
    provider_count = serializers.IntegerField()
    engine_count = serializers.IntegerField()
    cheapest_provider = serializers.CharField(allow_null=True)
    cheapest_blended_usd_per_mtok = serializers.CharField(allow_null=True)
    fastest_provider = serializers.CharField(allow_null=True)
    fastest_output_speed_tps = _figure_serializer("ModelFastestSpeed")
    url = serializers.CharField()


class ModelListApi(ListApi):
    csv_filename = "models"
    csv_serializer_class = ModelListOutputSerializer

    @extend_schema(
        operation_id="models_list", tags=[TAG_MODELS], summary="List models",
        description="Every model with its provider and engine counts, cheapest like-for-like blended price and "
        "fastest provider (measured first, else reported), in the order of /models/. `?format=csv` for CSV.",
        responses={200: list_envelope("ModelList", ModelListOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=[model_list_row_value(row, request) for row in model_list()])


class ModelDetailApi(ListApi):
    csv_filename = "model"
    csv_serializer_class = ModelOfferingOutputSerializer

    @extend_schema(
        operation_id="models_retrieve", tags=[TAG_MODELS], summary="One model's providers and engines",
        description="The rows of /models/<slug>/: every tool serving the model, providers first by blended price, "
        "with the price for this model, context, speed and first-token time (measured or reported, labelled), "
        "documented API gaps and every reported figure. `?format=csv` renders `results`.",
        responses={200: inline_serializer(
            name="ModelDetail",
            fields={
                "model": inline_serializer(name="ModelRef", fields={
                    "slug": serializers.CharField(), "name": serializers.CharField(),
                    "publisher": serializers.CharField(),
                }),
                "count": serializers.IntegerField(),
                "results": ModelOfferingOutputSerializer(many=True),
            },
        )},
    )
    @cached_get
    def get(self, request: Request, slug: str) -> Response:
        comparison = select_or_404(model_comparison_get, 'No model with the slug "{slug}".', slug=slug)
        model = comparison.model
        rows = [offering_row_value(row) for row in [*comparison.providers, *comparison.engines]]
        return Response({
            "model": {"slug": model.slug, "name": model.name, "publisher": model.publisher},
            "count": len(rows),
            "results": rows,
        })
