"""/api/v1/published-benchmarks/: the engine benchmarks third parties published, as series with their points, and
the points one per row for CSV. Filters name the model, hardware, engine, publisher and workload dataset."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.models import HardwareSpec, LanguageModel, Tool
from core.apis import ListApi, SlugFilterField, list_envelope, list_response, query_params
from core.cache import cached_get
from lab import evidence
from lab.apis import HARDWARE_NOT_A_DEVICE
from lab.loading import DATED_BY
from lab.models import SOURCE_TOOL_LABELS, LoadMode
from scoring.vocabulary import LEVEL_METRICS

TAG_EVIDENCE = "published benchmarks"


class EvidenceFilterSerializer(serializers.Serializer):
    model = SlugFilterField(
        queryset=LanguageModel.objects.all(), listed_at="api:model-list",
        help_text="A model's slug (/api/v1/models/), e.g. gpt-oss-120b.",
    )
    hardware = SlugFilterField(
        queryset=HardwareSpec.objects.all(), listed_at="api:hardware-spec-list",
        error_messages={"does_not_exist": HARDWARE_NOT_A_DEVICE},
        help_text="A hardware device's slug (/api/v1/hardware/specs/), e.g. nvidia-h100-sxm.",
    )
    engine = SlugFilterField(
        queryset=Tool.objects.all(), listed_at="api:tool-list", help_text="An engine's tool slug, e.g. vllm."
    )
    publisher = serializers.CharField(required=False, max_length=200, help_text="The publisher, as listed.")
    dataset = serializers.CharField(required=False, max_length=40, help_text="The workload's dataset: sharegpt, random…")


class FiguresSerializer(serializers.Serializer):
    mean = serializers.FloatField(required=False)
    p50 = serializers.FloatField(required=False)
    p99 = serializers.FloatField(required=False)


class PointSerializer(serializers.Serializer):
    load = serializers.CharField(help_text='The load in words: "4 concurrent", "2 req/s", "1,000 prompts at once", '
                                 '"offline batch".')
    level = serializers.FloatField(help_text="Concurrent requests, requests/s, or the prompts sent at once or batched "
                                   "(0: an offline batch of a count the page does not give).")
    output_tps = serializers.FloatField(allow_null=True, help_text="Output tokens/s of the whole system.")
    output_tps_per_gpu = serializers.FloatField(allow_null=True, help_text="Stated, or the total over the GPU count.")
    total_tps = serializers.FloatField(allow_null=True, help_text="Input and output tokens/s of the whole system.")
    headline_value = serializers.FloatField(allow_null=True, help_text="This point's figure named by the series' "
                                            "`headline`.")
    request_rate = serializers.FloatField(allow_null=True, help_text="Requests/s achieved.")
    tps_per_user = serializers.FloatField(allow_null=True, help_text="1000 / TPOT (median, else mean); in a burst it "
                                          "leaves out the wait in the queue.")
    ttft_ms = FiguresSerializer(help_text="In a burst (every prompt at once), mostly time spent queued.")
    tpot_ms = FiguresSerializer()
    itl_ms = FiguresSerializer()
    e2e_ms = FiguresSerializer()


class SeriesSerializer(serializers.Serializer):
    key = serializers.CharField()
    engine = serializers.CharField()
    engine_name = serializers.CharField()
    engine_version = serializers.CharField()
    newer_release = serializers.CharField(help_text="Set when a newer release of the engine is known.")
    model = serializers.CharField()
    weight_format = serializers.CharField()
    hardware = serializers.CharField()
    hardware_count = serializers.IntegerField()
    tensor_parallel = serializers.IntegerField(allow_null=True)
    pipeline_parallel = serializers.IntegerField(allow_null=True)
    mode = serializers.ChoiceField(choices=LoadMode.choices, help_text="How the load was sent: concurrency (closed "
                                   "loop, N in flight), request_rate (fixed or Poisson rate), burst (N prompts at "
                                   "once, no limit), offline (engine-side batch, no per-request latency).")
    workload = serializers.DictField(help_text="dataset, input_tokens, output_tokens, num_prompts, …")
    workload_description = serializers.CharField(help_text="The workload in the publisher's words.")
    measured_with = serializers.CharField()
    serving_command = serializers.CharField()
    publisher = serializers.CharField()
    url = serializers.URLField()
    headline = serializers.ChoiceField(choices=list(evidence.FIGURE_NAMES), help_text="The figure the publisher ranks "
                                       "engines by: total_tps (GPUStack) or output_tps_per_gpu (NVIDIA's tables, and "
                                       "where a publisher ranks by none).")
    observed_on = serializers.DateField(allow_null=True, help_text="The publisher's date; null when none could be "
                                        "established (dated_by unknown).")
    dated_by = serializers.ChoiceField(choices=DATED_BY, help_text="Where observed_on comes from: the page's own date, "
                                       "the commit that added the figures, the commit that added the data file, or "
                                       "unknown.")
    verified_on = serializers.DateField(help_text="The day the series was last checked against its source.")
    points = PointSerializer(many=True)


class PointRowSerializer(SeriesSerializer):
    """One point with its series' fields: a row of the points export."""

    points = None

    def get_fields(self) -> dict[str, serializers.Field]:
        return {**super().get_fields(), **PointSerializer().get_fields()}


def _figures(level) -> dict[str, Any]:
    return {metric.key: getattr(level, metric.key) or {} for metric in LEVEL_METRICS}


def _series_rows(filters: dict) -> list[dict]:
    runs = evidence.published_runs(**filters)
    rows = []
    for run in runs:
        series = evidence.series_of(run)
        points = [{**vars(point), "load": point.load, **_figures(level)}
                  for point, level in zip(series.points, run.levels.all(), strict=True)]
        for point in points:
            # The mode is the series': every point of a series was sent the same way.
            for name in ("mode", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "output_per_request"):
                point.pop(name)
            point["headline_value"] = point[series.headline]
        rows.append({
            "key": run.key, "engine": run.tool.slug, "engine_name": run.tool.name,
            "engine_version": run.engine_version, "newer_release": series.newer_release, "model": run.model.slug,
            "weight_format": run.weight_format, "hardware": run.hardware.slug, "hardware_count": run.hardware_count,
            "tensor_parallel": run.tensor_parallel, "pipeline_parallel": run.pipeline_parallel,
            "mode": run.load_mode, "workload": run.workload, "workload_description": run.workload_description,
            "measured_with": SOURCE_TOOL_LABELS.get(run.source_tool, run.source_tool), "serving_command": run.flags,
            "publisher": run.publisher, "url": run.url, "headline": series.headline, "observed_on": run.observed_on,
            "dated_by": series.dated_by, "verified_on": run.verified_on, "points": points,
        })
    return rows


class PublishedBenchmarkListApi(ListApi):
    csv_filename = "published-benchmarks"
    csv_serializer_class = SeriesSerializer

    @extend_schema(
        operation_id="published_benchmarks_list", tags=[TAG_EVIDENCE], summary="Published engine benchmarks",
        description="Every engine benchmark series a third party published (engine and version, hardware and count, "
        "model and weight format, workload, tool, publisher, link and dates) with its points. Compare points only "
        "within one model, weight format, hardware, count and workload. `/points/` gives one row per point (CSV).",
        parameters=[EvidenceFilterSerializer],
        responses={200: list_envelope("PublishedBenchmarkList", SeriesSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        return list_response(rows=_series_rows(query_params(EvidenceFilterSerializer, request)))


class PublishedPointListApi(ListApi):
    csv_filename = "published-benchmark-points"
    csv_serializer_class = PointRowSerializer

    @extend_schema(
        operation_id="published_benchmark_points_list", tags=[TAG_EVIDENCE], summary="Published benchmark points",
        description="One row per point of the published benchmark series, with its series' fields: for CSV "
        "(`?format=csv`) and spreadsheets. Same filters as the series list.",
        parameters=[EvidenceFilterSerializer],
        responses={200: list_envelope("PublishedPointList", PointRowSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        rows = []
        for series in _series_rows(query_params(EvidenceFilterSerializer, request)):
            points = series.pop("points")
            rows.extend({**series, **point} for point in points)
        return list_response(rows=rows)
