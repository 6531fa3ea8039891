"""REST endpoints of the probes: targets (never a key, only the name of its variable), runs with their
per-request measurements and compat outcomes, the 72-hour summaries, and the compat matrix.

Runs grow without bound, so their list is keyset-paginated (newest first, by id) and never counted:
page 1,000 costs what page 1 costs. Everything else is small and returned whole.
"""
from __future__ import annotations

import datetime
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from catalog.models import Tool
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
from core.pagination import KeysetParamsSerializer, keyset_page, page_envelope
from core.throttles import AnonBurstThrottle, ProbeRunThrottle, UserBurstThrottle
from probes.models import API_KEY_ENV_VALIDATOR, CompatOutcome, ProbeRun, ProbeTarget
from probes.selectors import api as selectors
from probes.selectors.runs import probe_run_get, probe_run_list, probe_target_get, probe_target_list
from probes.services import targets as target_services
from scoring.vocabulary import PERCENTILES, TargetFigures, run_summary_keys

TAG_PROBES = "probes"
TAG_WRITES = "probe writes (staff)"


def _spoken(words: tuple[str, ...]) -> str:
    return f"{', '.join(words[:-1])} and {words[-1]}" if len(words) > 1 else "".join(words)


METRIC_HELP = (
    f"{{metric: {{{', '.join(TargetFigures.__annotations__)}}}}} for {_spoken(run_summary_keys())}; "
    "a figure is null when no request produced it."
)


class MeasurementSummaryOutputSerializer(serializers.Serializer):
    target = serializers.CharField(source="target.slug")
    target_name = serializers.CharField(source="target.name")
    workload = serializers.CharField()
    concurrency = serializers.IntegerField()
    samples = serializers.IntegerField(help_text="Requests behind the percentiles.")
    samples_72h = serializers.IntegerField(help_text="Requests in the last 72 hours, behind median_72h.")
    success_rate = serializers.FloatField(allow_null=True)
    success_rate_72h = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)), help_text=METRIC_HELP
    )
    first_run_at = serializers.DateTimeField(allow_null=True)
    last_run_at = serializers.DateTimeField(allow_null=True)
    last_run = serializers.IntegerField(source="last_run_id", allow_null=True)


# --- Targets -------------------------------------------------------------------------------------


class TargetOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    tool = serializers.CharField(source="tool.slug")
    base_url = serializers.CharField()
    model_id = serializers.CharField()
    api_key_env = serializers.CharField(
        help_text="Name of the environment variable the probe workers read the key from. Never the key itself."
    )
    configured = serializers.BooleanField(
        source="is_configured",
        help_text="true when no key is needed, or when the API server's environment has the variable set. "
        "Workers may run with a different environment.",
    )
    hardware = serializers.CharField()
    quantization = serializers.CharField()
    engine_version = serializers.CharField()
    region = serializers.CharField()
    notes = serializers.CharField()
    enabled = serializers.BooleanField()
    url = serializers.SerializerMethodField()

    def get_url(self, target: ProbeTarget) -> str:
        return reverse("api:probe-target-detail", kwargs={"slug": target.slug}, request=self.context.get("request"))


class TargetInputSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=80)
    name = serializers.CharField(max_length=160)
    tool = SlugLookupField(slug_field="slug", queryset=Tool.objects.all())
    base_url = serializers.URLField(max_length=300, help_text="Up to and including /v1; no credentials in it.")
    model_id = serializers.CharField(max_length=200)
    api_key_env = serializers.CharField(
        max_length=80,
        required=False,
        allow_blank=True,
        validators=[API_KEY_ENV_VALIDATOR],
        help_text="The NAME of the environment variable holding the key (e.g. GROQ_API_KEY), never the key. "
        "Upper case letters, digits and underscores, ending with _API_KEY or _TOKEN, and not starting with "
        "DJANGO_, CELERY_, DATABASE, REDIS, AWS_ or POSTGRES.",
    )
    hardware = serializers.CharField(max_length=200, required=False, allow_blank=True)
    quantization = serializers.CharField(max_length=80, required=False, allow_blank=True)
    engine_version = serializers.CharField(max_length=80, required=False, allow_blank=True)
    region = serializers.CharField(max_length=80, required=False, allow_blank=True)
    notes = serializers.CharField(required=False, allow_blank=True)
    enabled = serializers.BooleanField(required=False)


class TargetUpdateInputSerializer(TargetInputSerializer):
    slug = None


class ProbeTargetListApi(ListApi):
    # Not cached: `configured` reads this process's environment, which no data fingerprint sees.
    csv_filename = "probe-targets"
    csv_serializer_class = TargetOutputSerializer

    class FilterSerializer(serializers.Serializer):
        tool = SlugFilterField(queryset=Tool.objects.all(), listed_at="api:tool-list", help_text="Tool slug.")
        enabled = serializers.BooleanField(required=False, help_text="true: only targets the scheduler probes.")

    @extend_schema(
        operation_id="probe_targets_list",
        tags=[TAG_PROBES],
        summary="List probe targets",
        description="Endpoints the probes measure. Keys are never exposed: only `api_key_env`, the variable name.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("ProbeTargetList", TargetOutputSerializer)},
    )
    def get(self, request: Request) -> Response:
        targets = probe_target_list(filters=query_params(self.FilterSerializer, request))
        return list_response(rows=TargetOutputSerializer(targets, many=True, context={"request": request}).data)

    @extend_schema(
        operation_id="probe_targets_create",
        tags=[TAG_WRITES],
        summary="Create a probe target (staff)",
        description="Needs a staff token. `api_key_env` names the environment variable that holds the key; the "
        "key never goes through the API.",
        request=TargetInputSerializer,
        responses={201: TargetOutputSerializer},
        examples=[
            OpenApiExample(
                "Hosted provider",
                request_only=True,
                value={"slug": "groq-gpt-oss-120b", "name": "Groq gpt-oss-120b", "tool": "groq",
                       "base_url": "https://api.groq.com/openai/v1", "model_id": "openai/gpt-oss-120b",
                       "api_key_env": "GROQ_API_KEY", "enabled": True},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        data = validated_body(TargetInputSerializer, request)
        target = target_services.probe_target_create(actor=request.user, **data)
        return Response(
            TargetOutputSerializer(target, context={"request": request}).data, status=status.HTTP_201_CREATED
        )


# Not cached: `configured` reads this process's environment, which no data fingerprint sees.
class ProbeTargetDetailApi(APIView):
    not_found = 'No probe target with the slug "{slug}".'

    @extend_schema(
        operation_id="probe_targets_retrieve", tags=[TAG_PROBES], summary="One probe target",
        description="An endpoint the probes measure: its base URL, model, hardware and whether this server holds "
        "its API key (the key itself is never shown).",
        responses={200: TargetOutputSerializer},
    )
    def get(self, request: Request, slug: str) -> Response:
        target = select_or_404(probe_target_get, self.not_found, slug=slug)
        return Response(TargetOutputSerializer(target, context={"request": request}).data)

    @extend_schema(
        operation_id="probe_targets_partial_update", tags=[TAG_WRITES], summary="Change a probe target (staff)",
        description="Only the fields sent change; the next probe run uses them.",
        request=TargetUpdateInputSerializer(partial=True), responses={200: TargetOutputSerializer},
    )
    def patch(self, request: Request, slug: str) -> Response:
        target = select_or_404(probe_target_get, self.not_found, slug=slug)
        data = validated_body(TargetUpdateInputSerializer, request, partial=True)
        target_services.probe_target_update(actor=request.user, target=target, data=data)
        target = probe_target_get(slug=slug)
        return Response(TargetOutputSerializer(target, context={"request": request}).data)


class ProbeTargetRunApi(APIView):
    """Enqueue runs now. Each run costs real money at a hosted provider, so it has its own rate limit."""

    throttle_classes = [AnonBurstThrottle, UserBurstThrottle, ProbeRunThrottle]

    class InputSerializer(serializers.Serializer):
        suites = serializers.ListField(
            child=serializers.ChoiceField(choices=ProbeRun.Suite.choices),
            required=False, min_length=1, max_length=2, help_text="Default: both speed and compat.",
        )
        workloads = serializers.ListField(
            child=serializers.CharField(max_length=40), required=False, min_length=1, max_length=10,
            help_text="Speed workloads, e.g. in-100, in-1k, in-10k. Default: the scheduled ones.",
        )
        concurrency = serializers.IntegerField(
            required=False, min_value=1, max_value=256, help_text="Parallel streams for speed runs (default 1)."
        )

    class RunRefSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        suite = serializers.CharField()
        workload = serializers.CharField()
        concurrency = serializers.IntegerField()
        status = serializers.CharField()
        url = serializers.CharField()

    @extend_schema(
        operation_id="probe_targets_run",
        tags=[TAG_WRITES],
        summary="Run the probes of a target now (staff)",
        description="Queues one run per suite (and per workload for speed) and answers at once with their ids; "
        "poll each run's URL for its status and results.",
        request=InputSerializer,
        responses={202: inline_serializer(name="ProbeRunsQueued", fields={"runs": RunRefSerializer(many=True)})},
        examples=[OpenApiExample("Speed only", request_only=True, value={"suites": ["speed"], "workloads": ["in-1k"]})],
    )
    def post(self, request: Request, slug: str) -> Response:
        target = select_or_404(probe_target_get, 'No probe target with the slug "{slug}".', slug=slug)
        options = validated_body(self.InputSerializer, request)
        runs = target_services.probe_target_run_request(actor=request.user, target=target, **options)
        for run in runs:
            run.url = reverse("api:probe-run-detail", kwargs={"pk": run.pk}, request=request)
        return Response({"runs": self.RunRefSerializer(runs, many=True).data}, status=status.HTTP_202_ACCEPTED)


# --- Runs ----------------------------------------------------------------------------------------


class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    target = serializers.CharField(source="target.slug")
    suite = serializers.CharField()
    workload = serializers.CharField()
    input_tokens = serializers.IntegerField(allow_null=True)
    max_output_tokens = serializers.IntegerField(allow_null=True)
    concurrency = serializers.IntegerField()
    request_count = serializers.IntegerField()
    status = serializers.CharField()
    error_class = serializers.CharField()
    error_message = serializers.CharField()
    worker = serializers.CharField()
    region = serializers.CharField()
    queued_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    summary = serializers.JSONField(
        help_text=f"Per-run figures: {{metric: {{{', '.join(PERCENTILES)}}}}}, success_rate, requests. "
        "Empty until finished."
    )
    url = serializers.SerializerMethodField()

    def get_url(self, run: ProbeRun) -> str:
        return reverse("api:probe-run-detail", kwargs={"pk": run.pk}, request=self.context.get("request"))


RUN_LIST_FIELDS = (
    "id", "target__slug", "suite", "workload", "input_tokens", "max_output_tokens", "concurrency", "request_count",
    "status", "error_class", "error_message", "worker", "region", "queued_at", "started_at", "finished_at", "summary",
)


def _iso(moment: datetime.datetime | None) -> str | None:
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if moment else None


def run_row(run: dict[str, Any], url_prefix: str) -> dict[str, Any]:
    """RunOutputSerializer's shape, built from a values() row: the list is the hot path, and skipping model
    instances and per-field serializers roughly halves its cost."""
    row = {name: run[name] for name in RUN_LIST_FIELDS if name != "target__slug"}
    row["target"] = run["target__slug"]
    for name in ("queued_at", "started_at", "finished_at"):
        row[name] = _iso(run[name])
    row["url"] = f"{url_prefix}{run['id']}/"
    return {name: row[name] for name in RUN_OUTPUT_ORDER}


RUN_OUTPUT_ORDER = tuple(RunOutputSerializer().fields)


class ProbeRunListApi(ListApi):
    csv_filename = "probe-runs"
    csv_serializer_class = RunOutputSerializer

    class FilterSerializer(KeysetParamsSerializer):
        target = SlugFilterField(
            queryset=ProbeTarget.objects.all(), listed_at="api:probe-target-list", help_text="Probe target slug."
        )
        suite = serializers.ChoiceField(choices=ProbeRun.Suite.choices, required=False, help_text="Probe suite.")
        status = serializers.ChoiceField(choices=ProbeRun.Status.choices, required=False, help_text="Run status.")
        since = serializers.DateTimeField(required=False, help_text="Runs queued at or after (ISO 8601).")
        until = serializers.DateTimeField(required=False, help_text="Runs queued before (ISO 8601).")

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
                raise serializers.ValidationError({"until": ["Must be later than since."]})
            return attrs

    @extend_schema(
        operation_id="probe_runs_list",
        tags=[TAG_PROBES],
        summary="List probe runs",
        description="Newest first (by id). Keyset-paginated: follow `next` (also in the Link header); deep pages "
        "cost what the first costs. `?format=csv` exports the same page as CSV.",
        parameters=[FilterSerializer],
        examples=[
            OpenApiExample(
                "Shape of a page (figures are placeholders)",
                response_only=True,
                value={
                    "next": "http://127.0.0.1:8000/api/v1/probes/runs/?cursor=bjoxMjA0", "previous": None,
                    "results": [{
                        "id": 1250, "target": "groq-gpt-oss-120b", "suite": "speed", "workload": "in-1k",
                        "input_tokens": 1000, "max_output_tokens": 1000, "concurrency": 1, "request_count": 3,
                        "status": "succeeded", "error_class": "", "error_message": "", "worker": "celery@eu-1",
                        "region": "eu-west", "queued_at": "2026-11-28T09:07:00.120000Z",
                        "started_at": "2026-11-28T09:07:00.400000Z", "finished_at": "2026-11-28T09:07:09.900000Z",
                        "summary": {"ttft_ms": {"p50": 0.0, "p95": 0.0, "p99": 0.0}, "requests": 3},
                        "url": "http://127.0.0.1:8000/api/v1/probes/runs/1250/",
                    }],
                },
            )
        ],
        responses={200: page_envelope("ProbeRunPage", RunOutputSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        runs = probe_run_list(filters=query_params(self.FilterSerializer, request)).values(*RUN_LIST_FIELDS)
        page, paginator = keyset_page(runs, request=request)
        url_prefix = reverse("api:probe-run-list", request=request)
        return paginator.get_paginated_response([run_row(run, url_prefix) for run in page])


class MeasurementOutputSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    started_at = serializers.DateTimeField()
    ok = serializers.BooleanField()
    http_status = serializers.IntegerField(allow_null=True)
    queue_ms = serializers.FloatField(allow_null=True)
    connect_ms = serializers.FloatField(allow_null=True)
    headers_ms = serializers.FloatField(allow_null=True)
    ttft_ms = serializers.FloatField(allow_null=True)
    ttfat_ms = serializers.FloatField(allow_null=True)
    e2e_ms = serializers.FloatField(allow_null=True)
    tpot_ms = serializers.FloatField(allow_null=True)
    output_speed_tps = serializers.FloatField(allow_null=True)
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    output_tokens_source = serializers.CharField(help_text="usage (reported by the server) or estimate.")
    chunks = serializers.IntegerField(allow_null=True)
    itl_p50_ms = serializers.FloatField(allow_null=True)
    itl_p95_ms = serializers.FloatField(allow_null=True)
    itl_p99_ms = serializers.FloatField(allow_null=True)
    gaps_ms = serializers.ListField(child=serializers.FloatField(), help_text="Gap before each token-bearing chunk.")
    tokens_per_chunk = serializers.ListField(child=serializers.IntegerField())
    buffered = serializers.BooleanField(help_text="The stream arrived in bursts (TTFT close to E2E).")
    server_timings = serializers.JSONField()
    request_id = serializers.CharField()
    error_class = serializers.CharField()
    error_message = serializers.CharField()


class CompatOutcomeOutputSerializer(serializers.Serializer):
    check = serializers.CharField(source="check_name")
    outcome = serializers.ChoiceField(choices=CompatOutcome.Outcome.choices)
    http_status = serializers.IntegerField(allow_null=True)
    message = serializers.CharField(help_text="The provider's own error message, when it rejected.")
    detail = serializers.CharField()


class RunDetailOutputSerializer(RunOutputSerializer):
    target_snapshot = serializers.JSONField(help_text="The target as it was when the run started (no secrets).")
    request_params = serializers.JSONField(help_text="What was sent, to reproduce the run.")
    server_info = serializers.JSONField(help_text="Engine / version headers seen.")
    client_info = serializers.JSONField(help_text="Client version, host and Python.")
    measurements = MeasurementOutputSerializer(many=True)
    compat_outcomes = CompatOutcomeOutputSerializer(many=True)


class ProbeRunDetailApi(APIView):
    @extend_schema(
        operation_id="probe_runs_retrieve",
        tags=[TAG_PROBES],
        summary="One probe run",
        description="Everything needed to reproduce the run, every per-request measurement and compat outcome.",
        responses={200: RunDetailOutputSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        run = select_or_404(probe_run_get, "No probe run with the id {run_id}.", run_id=pk)
        return Response(RunDetailOutputSerializer(run, context={"request": request}).data)


# --- Summaries and the compat matrix -------------------------------------------------------------


class SummaryListApi(ListApi):
    csv_filename = "probe-summaries"
    csv_serializer_class = MeasurementSummaryOutputSerializer

    class FilterSerializer(serializers.Serializer):
        target = SlugFilterField(
            queryset=ProbeTarget.objects.all(), listed_at="api:probe-target-list", help_text="Probe target slug."
        )
        tool = SlugFilterField(queryset=Tool.objects.all(), listed_at="api:tool-list", help_text="Tool slug.")
        workload = serializers.CharField(required=False, max_length=40, help_text="Workload, e.g. in-1k.")
        concurrency = serializers.IntegerField(
            required=False, min_value=1, max_value=10_000, help_text="Parallel streams, e.g. 1 or 10."
        )

    @extend_schema(
        operation_id="probe_summaries_list",
        tags=[TAG_PROBES],
        summary="Measurement summaries",
        description="p50/p95/p99 over the stored requests and the 72-hour median, per target x workload x "
        "concurrency. Precomputed after each run; empty until a probe has run.",
        parameters=[FilterSerializer],
        responses={200: list_envelope("MeasurementSummaryList", MeasurementSummaryOutputSerializer)},
        examples=[
            OpenApiExample(
                "Shape of a row (figures are placeholders)",
                response_only=True,
                value={"count": 1, "results": [{
                    "target": "groq-gpt-oss-120b", "target_name": "Groq gpt-oss-120b", "workload": "in-1k",
                    "concurrency": 1, "samples": 30, "samples_72h": 9, "success_rate": 1.0, "success_rate_72h": 1.0,
                    "metrics": {"ttft_ms": {"p50": 0.0, "p95": 0.0, "p99": 0.0, "median_72h": 0.0}},
                    "first_run_at": "2026-11-01T04:37:00Z", "last_run_at": "2026-11-28T09:07:00Z", "last_run": 1250,
                }]},
            )
        ],
    )
    @cached_get
    def get(self, request: Request) -> Response:
        summaries = selectors.measurement_summary_list(filters=query_params(self.FilterSerializer, request))
        return list_response(rows=MeasurementSummaryOutputSerializer(summaries, many=True).data)


class CompatCellSerializer(serializers.Serializer):
    target = serializers.CharField(source="target.slug")
    target_name = serializers.CharField(source="target.name")
    check = serializers.CharField(source="check_name")
    outcome = serializers.ChoiceField(
        choices=CompatOutcome.Outcome.choices,
        help_text="supported (effect verified), accepted (effect not verifiable), ignored (effect absent), "
        "rejected (4xx), error (5xx, timeout, broken stream).",
    )
    http_status = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()
    detail = serializers.CharField()
    checked_at = serializers.DateTimeField()
    run = serializers.IntegerField(source="run_id", allow_null=True)


class CompatMatrixApi(ListApi):
    csv_filename = "probe-compat"
    csv_serializer_class = CompatCellSerializer

    class FilterSerializer(serializers.Serializer):
        target = SlugFilterField(
            queryset=ProbeTarget.objects.all(), listed_at="api:probe-target-list", help_text="Probe target slug."
        )
        check = serializers.CharField(required=False, max_length=40, help_text="Check name, e.g. logprobs.")
        outcome = serializers.ChoiceField(
            choices=CompatOutcome.Outcome.choices, required=False, help_text="Latest outcome of the check."
        )

    @extend_schema(
        operation_id="probe_compat_list",
        tags=[TAG_PROBES],
        summary="Compatibility matrix",
        description="The latest outcome of every check for every target: one row per cell (target x check).",
        parameters=[FilterSerializer],
        responses={200: list_envelope("CompatMatrix", CompatCellSerializer)},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        cells = selectors.compat_status_list(filters=query_params(self.FilterSerializer, request))
        return list_response(rows=CompatCellSerializer(cells, many=True).data)
