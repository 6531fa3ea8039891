"""Benchmark-lab runs, measured here or imported from a peer tool's result file, and their levels. The tables
kept the names they had when the lab was part of the probes app."""
from django.db import models
from django.utils import timezone

from catalog.models import HardwareSpec, LanguageModel, Tool
from core.models import LeasedRun
from probe_client.sweep import IMPORT_FORMATS
from probes.models import ProbeTarget

OWN_TOOL = "inference-atlas"
# Tools publishers name that the lab does not import files of.
PUBLISHED_TOOLS = {"benchmark-serving-py": "vLLM benchmark_serving.py", "trtllm-bench": "TensorRT-LLM trtllm-bench",
                   "genai-perf": "NVIDIA GenAI-Perf", "own-script": "the publisher's own script",
                   "not-stated": "a tool the publisher does not name"}
SOURCE_TOOL_LABELS = {OWN_TOOL: "Inference Atlas", **IMPORT_FORMATS, **PUBLISHED_TOOLS}


class LoadMode(models.TextChoices):
    """How a benchmark sent its requests: part of what makes two workloads the same one."""

    CONCURRENCY = "concurrency", "Closed loop: N requests in flight"
    REQUEST_RATE = "request_rate", "Fixed or Poisson request rate"
    BURST = "burst", "N prompts sent at once, no limit"
    OFFLINE = "offline", "Offline batch: engine-side, no per-request latency"


# The mode a level records for each load mode (the lab's sweeps name an open loop "rate").
LEVEL_MODES = {LoadMode.CONCURRENCY: "concurrency", LoadMode.REQUEST_RATE: "rate", LoadMode.BURST: "burst",
               LoadMode.OFFLINE: "offline"}


class SweepRunQuerySet(models.QuerySet):
    def lab(self):
        """Runs measured here or imported from a result file: the lab's own. Published runs are shown as evidence
        on the engine pages, never in the lab's lists and charts."""
        return self.exclude(origin=SweepRun.Origin.PUBLISHED)

    def finished(self):
        return self.filter(status__in=SweepRun.FINISHED_STATUSES)

    def for_listing(self):
        return self.select_related("target", "target__tool", "tool", "hardware")


class SweepRun(LeasedRun):
    """One benchmark run and its curve, wherever it comes from (`origin`): measured here by a Celery worker
    (claimed and leased like a probe run, resumable per level), imported from a peer tool's result file, or
    published by a third party and transcribed from their page (with its publisher, link, dates, model and weight
    format, parallelism and the workload in their words). Every curve lives here.

    ``card`` is the benchmark card: what the server said about itself (model id, weights/format, engine and
    version), what the operator entered (hardware, flags), the workload and the client version.
    """

    class Origin(models.TextChoices):
        MEASURED = "measured", "Measured here"
        IMPORTED = "imported", "Imported from a result file"
        PUBLISHED = "published", "Published by a third party"

    class Kind(models.TextChoices):
        SWEEP = "sweep", "Throughput sweep"
        PREFILL_DECODE = "prefill_decode", "Prefill vs decode"
        PREFIX_CACHE = "prefix_cache", "Prefix cache"
        STRUCTURED_OUTPUT = "structured_output", "Structured output"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        STOPPED = "stopped", "Stopped (resumable)"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Ended early"
        FAILED = "failed", "Failed"
        IMPORTED = "imported", "Imported"

    FINISHED_STATUSES = (Status.SUCCEEDED, Status.PARTIAL, Status.FAILED, Status.IMPORTED)

    target = models.ForeignKey(
        ProbeTarget, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweep_runs"
    )
    tool = models.ForeignKey(
        Tool, null=True, blank=True, on_delete=models.PROTECT, related_name="sweep_runs",
        help_text="The engine measured (the target's tool, or named by an import).",
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SWEEP)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    source_tool = models.CharField(
        max_length=40, default=OWN_TOOL, help_text='"inference-atlas", or the peer tool whose result file was imported.'
    )
    hardware = models.ForeignKey(
        HardwareSpec, null=True, blank=True, on_delete=models.PROTECT, related_name="sweep_runs"
    )
    hardware_count = models.PositiveIntegerField(default=1)
    hourly_price_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    flags = models.TextField(blank=True, help_text="Engine flags as the operator entered them.")
    workload_name = models.CharField(max_length=80, blank=True)
    workload_key = models.CharField(max_length=64, blank=True, db_index=True, help_text="Hash of the workload.")
    workload = models.JSONField(default=dict, blank=True)
    load_mode = models.CharField(
        max_length=12, choices=LoadMode.choices, blank=True,
        help_text="How a published run sent its load. Runs measured here or imported: their levels' mode says.",
    )
    plan = models.JSONField(default=dict, blank=True, help_text="Levels, SLO, limits, or the suite's parameters.")
    card = models.JSONField(default=dict, blank=True)
    engine_version = models.CharField(max_length=120, blank=True)
    model_fingerprint = models.CharField(max_length=300, blank=True)
    changes = models.JSONField(
        default=dict, blank=True,
        help_text="What changed since the target's previous run: {engine_version|model: {old, new}}.",
    )
    results = models.JSONField(default=dict, blank=True, help_text="A suite's result, or a sweep's knee.")
    levels_total = models.PositiveIntegerField(default=0)
    levels_done = models.PositiveIntegerField(default=0)
    stop_requested = models.BooleanField(default=False)
    stopped_reason = models.CharField(max_length=40, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.MEASURED, db_index=True)
    key = models.SlugField(max_length=120, unique=True, null=True, blank=True,
                           help_text="A published run's name in fixtures/published_benchmarks.yaml.")
    model = models.ForeignKey(LanguageModel, null=True, blank=True, on_delete=models.PROTECT, related_name="sweep_runs")
    weight_format = models.CharField(max_length=40, blank=True, help_text="As the publisher names it.")
    tensor_parallel = models.PositiveSmallIntegerField(null=True, blank=True)
    pipeline_parallel = models.PositiveSmallIntegerField(null=True, blank=True)
    publisher = models.CharField(max_length=200, blank=True)
    url = models.URLField(max_length=500, blank=True)
    observed_on = models.DateField(null=True, blank=True, help_text="When the publisher ran or published it.")
    verified_on = models.DateField(null=True, blank=True, help_text="When it was last checked against the page.")
    workload_description = models.TextField(blank=True, help_text="The workload in the publisher's words.")
    notes = models.TextField(blank=True)

    objects = SweepRunQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [models.Index(fields=["target", "kind", "-queued_at"], name="sweep_target_kind_recent")]
        constraints = [
            models.UniqueConstraint(
                fields=["target"], condition=models.Q(status="running"), name="one_running_sweep_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED_STATUSES

    @property
    def is_imported(self) -> bool:
        return self.origin == self.Origin.IMPORTED

    @property
    def is_published(self) -> bool:
        return self.origin == self.Origin.PUBLISHED


class SweepLevelQuerySet(models.QuerySet):
    def figures(self):
        """The level's figures without its per-request records, which only the requests export reads."""
        return self.defer("request_records")


class SweepLevel(models.Model):
    """The figures of one sweep level (see probe_client.sweep.stats for every definition), and the requests it
    sent when it was measured here (``request_records``; an import has only the figures the tool reported)."""

    run = models.ForeignKey(SweepRun, on_delete=models.CASCADE, related_name="levels")
    mode = models.CharField(max_length=12, help_text='"concurrency" (closed loop) or "rate" (open loop); a published '
                                                    'run\'s also "burst" (all prompts at once) or "offline" (batch).')
    level = models.FloatField(help_text="Concurrent streams, requests per second, or the prompts of a burst or batch.")
    requests = models.PositiveIntegerField(default=0)
    ok = models.PositiveIntegerField(default=0)
    duration_s = models.FloatField(null=True, blank=True)
    ttft_ms = models.JSONField(default=dict, blank=True)
    tpot_ms = models.JSONField(default=dict, blank=True)
    itl_ms = models.JSONField(default=dict, blank=True)
    e2e_ms = models.JSONField(default=dict, blank=True)
    output_tps = models.FloatField(null=True, blank=True)
    total_tps = models.FloatField(null=True, blank=True)
    request_rate = models.FloatField(null=True, blank=True)
    goodput_rps = models.FloatField(null=True, blank=True)
    slo_attainment = models.FloatField(null=True, blank=True)
    meets_slo = models.BooleanField(null=True, blank=True)
    cost_per_1m_output_usd = models.FloatField(null=True, blank=True)
    errors = models.JSONField(default=dict, blank=True)
    output_tokens_source = models.CharField(max_length=20, blank=True)
    truncated = models.BooleanField(default=False)
    schedule_lag_ms = models.JSONField(null=True, blank=True)
    output_tps_per_gpu = models.FloatField(
        null=True, blank=True, help_text="Output tok/s per GPU as a publisher states it (no total given)."
    )
    request_records = models.JSONField(
        default=list, blank=True,
        help_text="Per request, in sending order: sent_ms (from the level's first send), ttft_ms, tpot_ms, e2e_ms, "
        "itl_ms (every gap), input and output tokens, ok, error class and message.",
    )

    objects = SweepLevelQuerySet.as_manager()

    class Meta:
        ordering = ["run", "level"]
        constraints = [models.UniqueConstraint(fields=["run", "level"], name="sweep_level_unique_per_run")]

    def __str__(self) -> str:
        return f"{self.run} @ {self.level:g}"
