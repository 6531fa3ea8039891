"""/api/v1/cost/: the cost page's answer as data; `?format=csv` gives one row per costed point (`results`)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from core.apis import ListApi, query_params
from core.cache import cached_get
from recommend.cost import cost_as_dict, cost_groups, cost_query
from scoring.errors import InputError


class CostQuerySerializer(serializers.Serializer):
    model = serializers.SlugField(help_text="A model's slug (/api/v1/models/), e.g. gpt-oss-120b.")
    hardware = serializers.SlugField(help_text="A hardware spec's slug (/api/v1/hardware/specs/).")
    gpu_count = serializers.IntegerField(required=False, max_value=4096,
                                         help_text="Only evidence on this many GPUs; every count when left out.")
    gpu_hour_usd = serializers.FloatField(required=False, max_value=10_000,
                                          help_text="Price of one GPU per hour; the lowest sourced on-demand offer "
                                          "for the hardware when left out.")
    max_ttft_ms = serializers.FloatField(required=False, help_text="Target: time to first token p50 at most (ms).")
    min_tokens_per_user = serializers.FloatField(required=False, help_text="Target: tokens/s per user at least.")


class CostRowSerializer(serializers.Serializer):
    engine = serializers.CharField()
    engine_version = serializers.CharField()
    series_key = serializers.CharField(help_text="The series (run and load mode) the point belongs to.")
    run_id = serializers.IntegerField()
    label = serializers.CharField()
    measured_here = serializers.BooleanField(help_text="A lab run of this site (measured or imported).")
    publisher = serializers.CharField()
    source_url = serializers.CharField(help_text="The publisher's page; empty for a lab run.")
    series_url = serializers.CharField(help_text="The lab run's page, or the publisher's page.")
    observed_on = serializers.CharField(allow_null=True)
    mode = serializers.CharField(help_text="Load mode: concurrency, request_rate (rate), burst or offline.")
    workload = serializers.CharField()
    hardware_count = serializers.IntegerField()
    point = serializers.CharField(help_text="The load, in words.")
    level = serializers.FloatField()
    output_tokens_per_second_per_gpu = serializers.FloatField()
    ttft_p50_ms = serializers.FloatField(allow_null=True)
    tokens_per_second_per_user = serializers.FloatField(allow_null=True)
    input_tokens_per_output_token = serializers.FloatField(allow_null=True)
    usd_per_million_output_tokens = serializers.FloatField()
    usd_per_million_total_tokens = serializers.FloatField(allow_null=True)
    meets_slo = serializers.BooleanField(allow_null=True, help_text="Null: a figure a target needs is not stated.")
    interpolated = serializers.BooleanField(help_text="True only for estimates in `answers[].estimates`.")
    between = serializers.ListField(child=serializers.CharField(), help_text="An estimate's two measured points.")
    cheapest = serializers.BooleanField(help_text="The cheapest measured point meeting the target in its comparison.")


class HostedRowSerializer(serializers.Serializer):
    provider = serializers.CharField()
    mode = serializers.CharField()
    workload = serializers.CharField()
    input_tokens_per_output_token = serializers.FloatField()
    usd_per_million_output_tokens = serializers.FloatField(help_text="Output price plus the input that came with it.")
    output_tokens_per_second = serializers.FloatField(allow_null=True)
    latency_ms = serializers.FloatField(allow_null=True)
    latency_metric = serializers.CharField()
    publisher = serializers.CharField(help_text="Who reported the latency and speed; empty when none is used.")
    publisher_url = serializers.CharField()
    observed_on = serializers.CharField(allow_null=True)
    meets_slo = serializers.BooleanField(allow_null=True, help_text="Null: a figure a target needs is not reported.")
    price_source = serializers.CharField(help_text="The catalog source of the per-token price.")
    price_verified_on = serializers.CharField(allow_null=True)


class AnswerSerializer(serializers.Serializer):
    title = serializers.CharField()
    mode = serializers.CharField()
    workload = serializers.CharField()
    hardware_count = serializers.IntegerField()
    cheapest = CostRowSerializer(allow_null=True)
    verdict = serializers.CharField(help_text='"no measured point meets it" when none does, else empty.')
    estimates = CostRowSerializer(many=True)


class CostApi(ListApi):
    permission_classes = [AllowAny]
    csv_filename = "cost"
    OutputSerializer = CostRowSerializer

    @extend_schema(
        operation_id="cost", summary="Cost per million tokens at a latency target",
        description="For a model on a hardware spec, every measured point of the evidence (published benchmarks and "
        "this site's lab runs) costed at a price per GPU-hour, the cheapest point meeting the target per comparison "
        "and load mode (never across them), and each hosted provider's price for the model at the same "
        "input:output mix with one publisher's latency figures. A 400 names an unknown model or hardware, or a "
        "price or target that is not positive.",
        parameters=[CostQuerySerializer],
        responses={200: inline_serializer(name="Cost", fields={
            "model": serializers.CharField(), "hardware": serializers.CharField(),
            "gpu_count": serializers.IntegerField(allow_null=True), "gpu_price": serializers.DictField(),
            "slo": serializers.DictField(), "answers": AnswerSerializer(many=True),
            "count": serializers.IntegerField(), "results": CostRowSerializer(many=True),
            "hosted": HostedRowSerializer(many=True),
        })},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        try:
            query = cost_query(**query_params(CostQuerySerializer, request))
        except InputError as exc:
            raise serializers.ValidationError(exc.errors) from exc
        groups = cost_groups(model=query.model.slug, hardware=query.hardware.slug, gpu_count=query.gpu_count,
                             gpu_hour_usd=query.gpu_hour_usd, slo=query.slo)
        return Response(cost_as_dict(query, groups))
