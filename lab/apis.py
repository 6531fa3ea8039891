"""REST endpoints of the benchmark lab: sweep runs (measured here or imported), their levels (also as CSV),
and the staff-only writes that start, stop and resume a run and import a peer tool's result file.

Runs grow without bound, so their list is keyset-paginated (newest first, by id) like the probe runs.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from catalog.models import HardwareSpec, Tool
from core.apis import (
    ListApi,
    SlugFilterField,
    list_envelope,
    list_response,
    query_params,
    select_or_404,
    validated_body,
)
from core.exceptions import error_body
from core.fields import SlugLookupField
from core.pagination import KeysetParamsSerializer, keyset_page, page_envelope
from core.renderers import JSONLinesRenderer
from core.throttles import AnonBurstThrottle, ProbeRunThrottle, UserBurstThrottle
from lab import selectors
from lab.models import SOURCE_TOOL_LABELS, SweepRun
from lab.services.imports import sweep_import_file
from lab.services.run import sweep_run_request, sweep_run_request_stop, sweep_run_resume
from probe_client.sweep import IMPORT_FORMATS, PRESETS, WorkloadError, workload_from_jsonl
from probe_client.sweep.imports import MAX_RESULT_BYTES
from probes.models import ProbeTarget
from scoring.vocabulary import LEVEL_METRICS, PERCENTILES

TAG_LAB = "benchmark lab"
TAG_WRITES = "probe writes (staff)"


class SweepLevelOutputSerializer(serializers.Serializer):
    run = serializers.IntegerField(source="run_id")
    mode = serializers.CharField(help_text="concurrency (closed loop) or rate (open loop, requests/s).")
    level = serializers.FloatField()
    requests = serializers.IntegerField()
    ok = serializers.IntegerField()
    duration_s = serializers.FloatField(allow_null=True)
    output_tps = serializers.FloatField(allow_null=True, help_text="Output tokens/s of the whole level.")
    total_tps = serializers.FloatField(allow_null=True, help_text="Input + output tokens/s.")
    request_rate = serializers.FloatField(allow_null=True, help_text="Successful requests/s.")
    goodput_rps = serializers.FloatField(allow_null=True, help_text="Requests/s that met every SLO.")
    slo_attainment = serializers.FloatField(allow_null=True)
    meets_slo = serializers.BooleanField(allow_null=True)
    cost_per_1m_output_usd = serializers.FloatField(allow_null=True)
    output_tokens_source = serializers.CharField()
    truncated = serializers.BooleanField()
    errors = serializers.DictField(child=serializers.IntegerField())

    def to_representation(self, level) -> dict:
        data = super().to_representation(level)
        for metric in LEVEL_METRICS:
            figures = getattr(level, metric.key) or {}
            for name in PERCENTILES:
                data[metric.percentile_field(name)] = figures.get(name)
        # Figures a merged read may have made late (probe_client.sweep.stats): requests whose TTFT, and gaps.
        data["ttft_merged_reads"] = (level.ttft_ms or {}).get("merged_reads")
        data["itl_merged_reads"] = (level.itl_ms or {}).get("merged_reads")
        # Open loop only: the rate asked for (achieved is request_rate) and how late requests left their schedule.
        data["offered_rate"] = level.level if level.mode == "rate" else None
        lag = level.schedule_lag_ms or {}
        for name in PERCENTILES:
            data[f"schedule_lag_{name}_ms"] = lag.get(name)
        return data


class SweepRunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.CharField()
    source_tool = serializers.CharField(help_text='"inference-atlas", or the peer tool an import came from.')
    target = serializers.CharField(source="target.slug", allow_null=True, default=None)
    tool = serializers.CharField(source="tool.slug", allow_null=True, default=None)
    hardware = serializers.CharField(source="hardware.slug", allow_null=True, default=None)
    hardware_count = serializers.IntegerField()
    hourly_price_usd = serializers.DecimalField(max_digits=10, decimal_places=4, allow_null=True)
    workload_name = serializers.CharField()
    workload_key = serializers.CharField(help_text="Runs with the same key measured the same workload.")
    engine_version = serializers.CharField(help_text="As the server reported it (empty when it did not).")
    model_fingerprint = serializers.CharField()
    levels_done = serializers.IntegerField()
    levels_total = serializers.IntegerField()
    stopped_reason = serializers.CharField(allow_null=True, help_text="Why the run stopped early; null when nothing stopped it.")
    error_class = serializers.CharField()
    error_message = serializers.CharField()
    queued_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    def to_representation(self, run: SweepRun) -> dict:
        data = super().to_representation(run)
        data["stopped_reason"] = run.stopped_reason or None
        return data

    def get_url(self, run: SweepRun) -> str:
        return reverse("api:sweep-run-detail", kwargs={"pk": run.pk}, request=self.context.get("request"))


class SweepRunDetailOutputSerializer(SweepRunOutputSerializer):
    plan = serializers.JSONField()
    workload = serializers.JSONField()
    card = serializers.JSONField(help_text="The benchmark card: model, weights, engine and version, hardware, flags.")
    changes = serializers.JSONField(help_text="What the server reported differently from the previous run.")
    results = serializers.JSONField(
        help_text="A suite's results, or a sweep's knee and its settle request (sent before the first level, "
        "counted in none: ok, ttft_ms, e2e_ms, output_tokens, error_class).",
    )
    flags = serializers.CharField()
    levels = SweepLevelOutputSerializer(many=True)
    levels_csv = serializers.SerializerMethodField()
    requests_jsonl = serializers.SerializerMethodField(help_text="Every request of the run, one JSON object a line.")

    def get_levels_csv(self, run: SweepRun) -> str:
        url = reverse("api:sweep-level-list", kwargs={"pk": run.pk}, request=self.context.get("request"))
        return f"{url}?format=csv"

    def get_requests_jsonl(self, run: SweepRun) -> str:
        url = reverse("api:sweep-request-list", kwargs={"pk": run.pk}, request=self.context.get("request"))
        return f"{url}?format=jsonl"


# Runs name a device (HardwareSpec), not a family (HardwareTarget such as x86-cpu): the message says where
# the device slugs are, since /api/v1/hardware/ lists families first.
HARDWARE_NOT_A_DEVICE = ('No hardware device with the slug "{value}": use a slug of /api/v1/hardware/specs/ '
                         '(each family of /api/v1/hardware/ lists its devices under "specs").')


class BenchmarkCardInputSerializer(serializers.Serializer):
    """What the operator states on a run's benchmark card: the hardware, its price and the engine flags."""

    hardware = SlugLookupField(
        slug_field="slug", queryset=HardwareSpec.objects.all(), required=False, allow_null=True,
        help_text="A device slug of /api/v1/hardware/specs/ (the devices each family of /api/v1/hardware/ lists "
        "under specs), such as nvidia-h100-sxm.",
        error_messages={"does_not_exist": HARDWARE_NOT_A_DEVICE},
    )
    hardware_count = serializers.IntegerField(required=False, default=1, min_value=1, max_value=4096)
    hourly_price_usd = serializers.DecimalField(
        required=False, allow_null=True, max_digits=10, decimal_places=4, min_value=0,
        help_text="What the hardware costs per hour; gives cost per 1M output tokens at each level.",
    )
    flags = serializers.CharField(required=False, allow_blank=True, max_length=4000)


class SweepStartInputSerializer(BenchmarkCardInputSerializer):
    target = SlugLookupField(
        slug_field="slug", queryset=ProbeTarget.objects.select_related("tool"),
        error_messages={"does_not_exist": 'No probe target with the slug "{value}".'},
    )
    kind = serializers.ChoiceField(choices=SweepRun.Kind.choices, default=SweepRun.Kind.SWEEP)
    plan = serializers.DictField(
        required=False, default=dict,
        help_text="Sweep: mode (concurrency|rate), levels or cap, requests_per_level, slo {ttft_ms, tpot_ms, "
        "attainment}, max_duration_s, max_in_flight, seed. Suites: their parameters (see docs/benchmark-lab.md).",
    )
    workload = serializers.DictField(required=False, help_text="A workload object (see docs/benchmark-lab.md).")
    preset = serializers.ChoiceField(choices=sorted(PRESETS), required=False, help_text="A named workload.")
    workload_jsonl = serializers.CharField(
        required=False, max_length=16 * 1024 * 1024, trim_whitespace=False,
        help_text="Your traffic's lengths: one JSON object per line with input_tokens and output_tokens.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in ("workload", "preset", "workload_jsonl") if name in attrs]
        if attrs["kind"] == SweepRun.Kind.SWEEP and len(given) != 1:
            raise serializers.ValidationError({"workload": ["Give exactly one of workload, preset or workload_jsonl."]})
        if "preset" in attrs:
            attrs["workload"] = PRESETS[attrs.pop("preset")].to_dict()
        if "workload_jsonl" in attrs:
            try:
                attrs["workload"] = workload_from_jsonl(attrs.pop("workload_jsonl"), name="your traffic").to_dict()
            except WorkloadError as error:
                raise serializers.ValidationError({"workload_jsonl": [str(error)]}) from None
        return attrs


def _run(pk: int) -> SweepRun:
    return select_or_404(selectors.sweep_run_get, "No sweep run with the id {pk}.", pk=pk)


def _run_response(run: SweepRun, request: Request, *, status_code: int) -> Response:
    return Response(SweepRunOutputSerializer(run, context={"request": request}).data, status=status_code)


class SweepRunListApi(ListApi):
    csv_filename = "sweep-runs"
    csv_serializer_class = SweepRunOutputSerializer
    throttle_classes = [AnonBurstThrottle, UserBurstThrottle, ProbeRunThrottle]

    def get_throttles(self):
        # Reading is as cheap as any list; only starting a run has the probe runs' own limit.
        return super().get_throttles() if self.request.method == "POST" else [AnonBurstThrottle(), UserBurstThrottle()]

    class FilterSerializer(KeysetParamsSerializer):
        target = SlugFilterField(queryset=ProbeTarget.objects.all(), listed_at="api:probe-target-list")
        tool = SlugFilterField(queryset=Tool.objects.all(), listed_at="api:tool-list")
        hardware = SlugFilterField(
            queryset=HardwareSpec.objects.all(), listed_at="api:hardware-spec-list",
            error_messages={"does_not_exist": HARDWARE_NOT_A_DEVICE},
        )
        kind = serializers.ChoiceField(choices=SweepRun.Kind.choices, required=False)
        status = serializers.ChoiceField(choices=SweepRun.Status.choices, required=False)
        source_tool = serializers.ChoiceField(choices=sorted(SOURCE_TOOL_LABELS), required=False)
        workload_key = serializers.CharField(required=False, max_length=64)

    @extend_schema(
        operation_id="sweep_runs_list",
        tags=[TAG_LAB],
        summary="List benchmark-lab runs",
        description="Newest first (by id), keyset-paginated; `?format=csv` exports the same page.",
        parameters=[FilterSerializer],
        responses={200: page_envelope("SweepRunPage", SweepRunOutputSerializer)},
    )
    def get(self, request: Request) -> Response:
        runs = selectors.sweep_run_list(filters=query_params(self.FilterSerializer, request))
        page, paginator = keyset_page(runs, request=request)
        rows = SweepRunOutputSerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(rows)

    @extend_schema(
        operation_id="sweep_runs_create",
        tags=[TAG_WRITES],
        summary="Start a sweep or a lab suite (staff)",
        description="Queues the run and answers at once; poll its URL. Bad parameters or a bad workload file "
        "answer 400 naming the field (`plan.levels[2]`, `workload.input.mean`, `workload_jsonl` with its line).",
        request=SweepStartInputSerializer,
        responses={202: SweepRunOutputSerializer},
        examples=[OpenApiExample("Chat sweep to 32 streams", request_only=True, value={
            "target": "my-vllm", "preset": "chat", "hardware": "h100-sxm", "hourly_price_usd": "2.50",
            "plan": {"cap": 32, "requests_per_level": 64, "slo": {"ttft_ms": 500, "tpot_ms": 50}},
        })],
    )
    def post(self, request: Request) -> Response:
        run = sweep_run_request(actor=request.user, **validated_body(SweepStartInputSerializer, request))
        return _run_response(run, request, status_code=status.HTTP_202_ACCEPTED)


class SweepRunDetailApi(APIView):
    @extend_schema(
        operation_id="sweep_runs_retrieve", tags=[TAG_LAB], summary="One benchmark-lab run",
        description="The card, the plan and workload, every level's figures, the knee or the suite's results, "
        "and what changed since the target's previous run.",
        responses={200: SweepRunDetailOutputSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(SweepRunDetailOutputSerializer(_run(pk), context={"request": request}).data)


class SweepLevelListApi(ListApi):
    csv_filename = "sweep-levels"
    csv_serializer_class = SweepLevelOutputSerializer

    @extend_schema(
        operation_id="sweep_levels_list", tags=[TAG_LAB], summary="The levels of one sweep run",
        description="One row per level with TTFT/TPOT/ITL/E2E p50/p95/p99, tok/s, req/s, goodput and cost; "
        "`?format=csv` for a spreadsheet.",
        responses={200: list_envelope("SweepLevelList", SweepLevelOutputSerializer)},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        return list_response(rows=SweepLevelOutputSerializer(selectors.sweep_level_list(run=run), many=True).data)


class SweepRequestOutputSerializer(serializers.Serializer):
    mode = serializers.CharField()
    level = serializers.FloatField()
    index = serializers.IntegerField(help_text="The request's position in its level's workload.")
    sent_ms = serializers.FloatField(allow_null=True, help_text="When it was sent, ms after the level's first send.")
    ok = serializers.BooleanField()
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    ttft_ms = serializers.FloatField(allow_null=True)
    tpot_ms = serializers.FloatField(allow_null=True)
    e2e_ms = serializers.FloatField(allow_null=True)
    itl_ms = serializers.ListField(child=serializers.FloatField(), help_text="Every gap between token-bearing chunks.")
    ttft_merged = serializers.BooleanField(
        default=False, help_text="Merged read: the first two token events came in one network read under one kernel "
        "stamp, so the TTFT may be up to one inter-token gap late.",
    )
    itl_merged = serializers.ListField(
        child=serializers.IntegerField(), default=list,
        help_text="Positions in itl_ms of the gaps a merged read may have made off by up to one gap.",
    )
    error_class = serializers.CharField(allow_blank=True)
    error_message = serializers.CharField(allow_blank=True)


class SweepRequestListApi(ListApi):
    renderer_classes = [*ListApi.renderer_classes, JSONLinesRenderer]
    csv_filename = "sweep-requests"
    csv_serializer_class = SweepRequestOutputSerializer

    @extend_schema(
        operation_id="sweep_requests_list", tags=[TAG_LAB], summary="Every request of one sweep run",
        description="Per request of a run measured here, level by level in sending order: send time, TTFT, TPOT, "
        "E2E, every inter-token gap, tokens and the error. `?format=jsonl` or `?format=csv` to export; an "
        "imported run has no per-request records.",
        responses={200: list_envelope("SweepRequestList", SweepRequestOutputSerializer)},
    )
    def get(self, request: Request, pk: int) -> Response:
        rows = SweepRequestOutputSerializer(selectors.sweep_request_list(run=_run(pk)), many=True).data
        return list_response(rows=rows)


class _RunAction(APIView):
    throttle_classes = [AnonBurstThrottle, UserBurstThrottle, ProbeRunThrottle]
    action: Any
    refusal: str

    def post(self, request: Request, pk: int) -> Response:
        run = _run(pk)
        if not type(self).action(run=run):
            message = self.refusal.format(status=run.status)
            return Response(error_body(code="invalid", message=message), status=status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return _run_response(run, request, status_code=status.HTTP_202_ACCEPTED)


@extend_schema_view(post=extend_schema(
    operation_id="sweep_runs_stop", tags=[TAG_WRITES], summary="Stop a sweep (staff)",
    description="The level in progress is dropped; finished levels stay, and the run can be resumed.",
    request=None, responses={202: SweepRunOutputSerializer},
))
class SweepRunStopApi(_RunAction):
    action = staticmethod(sweep_run_request_stop)
    refusal = "Only a queued or running sweep can be stopped; this one is {status}."


@extend_schema_view(post=extend_schema(
    operation_id="sweep_runs_resume", tags=[TAG_WRITES], summary="Resume a stopped sweep (staff)",
    description="Queues the run again; only the levels not yet stored are measured.",
    request=None, responses={202: SweepRunOutputSerializer},
))
class SweepRunResumeApi(_RunAction):
    action = staticmethod(sweep_run_resume)
    refusal = "Only a stopped sweep can be resumed; this one is {status}."


class SweepImportInputSerializer(BenchmarkCardInputSerializer):
    file = serializers.FileField(
        help_text="The tool's result file as it wrote it: vLLM bench serve --save-result JSON (or JSONL with "
        "--append-result), GuideLLM benchmarks.json, AIPerf profile_export_aiperf.json.",
    )
    source_tool = serializers.ChoiceField(
        choices=IMPORT_FORMATS, required=False, help_text="Which tool wrote the file; recognised from it when absent."
    )
    target = SlugLookupField(
        slug_field="slug", queryset=ProbeTarget.objects.select_related("tool"), required=False, allow_null=True,
        error_messages={"does_not_exist": 'No probe target with the slug "{value}".'},
    )
    tool = SlugLookupField(
        slug_field="slug", queryset=Tool.objects.all(), required=False, allow_null=True,
        help_text="The engine that was measured (the target's when a target is given).",
        error_messages={"does_not_exist": 'No tool with the slug "{value}".'},
    )

    def validate_file(self, upload):
        if upload.size > MAX_RESULT_BYTES:
            raise serializers.ValidationError(f"Larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB.")
        return upload


class SweepImportOutputSerializer(SweepRunOutputSerializer):
    warnings = serializers.ListField(
        child=inline_serializer(name="RefusedFigure", fields={
            "field": serializers.CharField(help_text="Where in the file, e.g. `mean_ttft_ms` or `[2].p99_itl_ms`."),
            "value": serializers.JSONField(help_text="The value as the file wrote it."),
            "reason": serializers.CharField(),
        }),
        help_text="Figures the file gives that were not taken, and why; the run holds every other figure.",
    )


class SweepImportApi(APIView):
    parser_classes = [MultiPartParser, FormParser]
    throttle_classes = [AnonBurstThrottle, UserBurstThrottle, ProbeRunThrottle]

    @extend_schema(
        operation_id="sweep_runs_import",
        tags=[TAG_WRITES],
        summary="Import a peer tool's result file (staff)",
        description="Stores the file's benchmarks as one run labelled with the tool that wrote it. A figure that is "
        "not a number (text, NaN) is left out and listed in `warnings`. A file that is not one of the known formats, "
        "or that has no usable figure, answers 400 on `file` and stores nothing.",
        request={"multipart/form-data": SweepImportInputSerializer},
        responses={201: SweepImportOutputSerializer},
    )
    def post(self, request: Request) -> Response:
        card = validated_body(SweepImportInputSerializer, request)
        upload = card.pop("file")
        run = sweep_import_file(data=upload, **card)
        data = SweepRunOutputSerializer(run, context={"request": request}).data
        return Response({**data, "warnings": run.card.get("refused_figures", [])}, status=status.HTTP_201_CREATED)
