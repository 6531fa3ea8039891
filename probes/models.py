"""Probe targets, every stored run with its per-request measurements, and the summaries pages read."""
import os

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.deconstruct import deconstructible

from catalog.models import Tool
from core.models import TimeStampedModel
from probe_client.config import api_key_env_error
from scoring.vocabulary import MEASURED_OUTCOMES, TargetFigures, run_summary_keys


@deconstructible
class ApiKeyEnvValidator:
    """The client's rule for the name of the variable holding a key (see probe_client.config)."""

    code = "invalid"

    def __call__(self, value: str) -> None:
        problem = api_key_env_error(value)
        if problem:
            raise ValidationError(problem, code=self.code)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKeyEnvValidator)

    def __hash__(self) -> int:
        return hash(type(self))


API_KEY_ENV_VALIDATOR = ApiKeyEnvValidator()


class ProbeTargetQuerySet(models.QuerySet):
    def enabled(self):
        return self.filter(enabled=True)

    def for_listing(self):
        return self.select_related("tool")


class ProbeTarget(TimeStampedModel):
    """An OpenAI-compatible endpoint to measure. The API key is never stored: only the variable that holds it."""

    READY = "ready"
    NOT_CONFIGURED = "not_configured"
    DISABLED = "disabled"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=160)
    tool = models.ForeignKey(Tool, on_delete=models.PROTECT, related_name="probe_targets")
    base_url = models.URLField(max_length=300, help_text="Up to and including /v1.")
    model_id = models.CharField(max_length=200)
    api_key_env = models.CharField(max_length=80, blank=True, validators=[API_KEY_ENV_VALIDATOR])
    hardware = models.CharField(max_length=200, blank=True)
    quantization = models.CharField(max_length=80, blank=True)
    engine_version = models.CharField(max_length=80, blank=True)
    region = models.CharField(max_length=80, blank=True)
    notes = models.TextField(blank=True)
    enabled = models.BooleanField(default=False)

    objects = ProbeTargetQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def needs_api_key(self) -> bool:
        return bool(self.api_key_env)

    @property
    def api_key_is_set(self) -> bool:
        """Whether THIS process sees the key; workers and the web server may have different environments."""
        return bool(self.api_key_env) and bool(os.environ.get(self.api_key_env))

    @property
    def is_configured(self) -> bool:
        """A target that needs a key is configured only where its variable is set; keyless targets always are."""
        return not self.needs_api_key or self.api_key_is_set

    @property
    def configuration(self) -> str:
        """Whether the target is probed: an enabled target whose key variable is unset is "not configured". Only
        the presence of the variable is checked; its value is never read into a page."""
        if not self.enabled:
            return self.DISABLED
        return self.READY if self.is_configured else self.NOT_CONFIGURED


class ProbeRunQuerySet(models.QuerySet):
    def finished(self):
        return self.filter(status__in=ProbeRun.FINISHED_STATUSES)

    def pending(self):
        return self.filter(status__in=[ProbeRun.Status.QUEUED, ProbeRun.Status.RUNNING])

    def lease_expired(self, *, now=None):
        return self.filter(status=ProbeRun.Status.RUNNING, lease_expires_at__lt=now or timezone.now())


class ProbeRun(TimeStampedModel):
    class Suite(models.TextChoices):
        SPEED = "speed", "Speed"
        COMPAT = "compat", "Compatibility"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        PARTIAL = "partial", "Partially failed"
        FAILED = "failed", "Failed"
        NOT_CONFIGURED = "not_configured", "Not configured"

    FINISHED_STATUSES = (Status.SUCCEEDED, Status.PARTIAL, Status.FAILED, Status.NOT_CONFIGURED)

    target = models.ForeignKey(ProbeTarget, on_delete=models.CASCADE, related_name="runs")
    suite = models.CharField(max_length=10, choices=Suite.choices)
    workload = models.CharField(max_length=40, blank=True, help_text="e.g. 'in-1k' for about 1,000 input tokens.")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    max_output_tokens = models.PositiveIntegerField(null=True, blank=True)
    concurrency = models.PositiveIntegerField(default=1)
    request_count = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error_class = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    region = models.CharField(max_length=80, blank=True)
    task_id = models.CharField(max_length=80, blank=True)
    queue = models.CharField(max_length=120, blank=True, help_text="Celery queue the run was sent to.")
    attempts = models.PositiveIntegerField(
        default=0, help_text="How many times a worker claimed the run; a worker that dies leaves it to the next."
    )
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="A running run whose lease passed belongs to a dead worker."
    )
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    target_snapshot = models.JSONField(
        default=dict, blank=True, help_text="Target fields as they were when the run started (no secrets)."
    )
    request_params = models.JSONField(default=dict, blank=True, help_text="What was sent, to reproduce the run.")
    server_info = models.JSONField(default=dict, blank=True, help_text="Engine/version headers seen.")
    client_info = models.JSONField(default=dict, blank=True, help_text="Client version, host, Python.")
    summary = models.JSONField(
        default=dict,
        blank=True,
        help_text="Per-run figures for history charts: {metric: {p50, p95, p99}}, success_rate, requests.",
    )

    objects = ProbeRunQuerySet.as_manager()

    class Meta:
        ordering = ["-queued_at", "-id"]
        indexes = [models.Index(fields=["target", "suite", "-queued_at"], name="run_target_suite_recent")]
        constraints = [
            # The database, not a hope, keeps a second run of the same endpoint from starting.
            models.UniqueConstraint(
                fields=["target"], condition=models.Q(status="running"), name="one_running_run_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.target} {self.suite} #{self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED_STATUSES


class RequestMeasurement(models.Model):
    """One streamed request of a speed run; times in milliseconds from the moment the request was written."""

    run = models.ForeignKey(ProbeRun, on_delete=models.CASCADE, related_name="measurements")
    index = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    ok = models.BooleanField(default=True)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    queue_ms = models.FloatField(null=True, blank=True, help_text="Client-side wait before the request was sent.")
    connect_ms = models.FloatField(null=True, blank=True)
    headers_ms = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    ttfat_ms = models.FloatField(null=True, blank=True, help_text="Time to first answer (non-reasoning) token.")
    e2e_ms = models.FloatField(null=True, blank=True)
    tpot_ms = models.FloatField(null=True, blank=True)
    output_speed_tps = models.FloatField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens_source = models.CharField(max_length=20, blank=True, help_text="'usage' or 'estimate'.")
    chunks = models.PositiveIntegerField(null=True, blank=True)
    itl_p50_ms = models.FloatField(null=True, blank=True)
    itl_p95_ms = models.FloatField(null=True, blank=True)
    itl_p99_ms = models.FloatField(null=True, blank=True)
    gaps_ms = models.JSONField(default=list, blank=True, help_text="Gap before each token-bearing chunk.")
    tokens_per_chunk = models.JSONField(default=list, blank=True)
    buffered = models.BooleanField(default=False)
    server_timings = models.JSONField(default=dict, blank=True)
    request_id = models.CharField(max_length=200, blank=True)
    error_class = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="measurement_unique_per_run")]


class CompatOutcome(models.Model):
    Outcome = models.TextChoices(
        "Outcome", [(outcome.value.upper(), (outcome.value, outcome.label)) for outcome in MEASURED_OUTCOMES]
    )

    run = models.ForeignKey(ProbeRun, on_delete=models.CASCADE, related_name="compat_outcomes")
    check_name = models.CharField(max_length=40)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField(blank=True, help_text="The provider's own error message, when it rejected.")
    detail = models.TextField(blank=True, help_text="What the check observed.")

    class Meta:
        ordering = ["run", "check_name"]
        constraints = [models.UniqueConstraint(fields=["run", "check_name"], name="compat_outcome_unique_per_run")]


class MeasurementSummary(TimeStampedModel):
    """Percentiles over all stored requests and the median of the last 72 hours, per target x workload x concurrency."""

    target = models.ForeignKey(ProbeTarget, on_delete=models.CASCADE, related_name="summaries")
    workload = models.CharField(max_length=40)
    concurrency = models.PositiveIntegerField(default=1)
    samples = models.PositiveIntegerField(default=0)
    samples_72h = models.PositiveIntegerField(default=0)
    success_rate = models.FloatField(null=True, blank=True)
    success_rate_72h = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(
        default=dict,
        help_text=f"{{metric: {{{', '.join(TargetFigures.__annotations__)}}}}} for {', '.join(run_summary_keys())}.",
    )
    first_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run = models.ForeignKey(ProbeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["target", "workload", "concurrency"]
        constraints = [
            models.UniqueConstraint(fields=["target", "workload", "concurrency"], name="summary_unique_per_workload")
        ]


class CompatStatus(TimeStampedModel):
    """The latest outcome of each compatibility check for a target: one cell of the matrix."""

    target = models.ForeignKey(ProbeTarget, on_delete=models.CASCADE, related_name="compat_statuses")
    check_name = models.CharField(max_length=40)
    outcome = models.CharField(max_length=10, choices=CompatOutcome.Outcome.choices)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField(blank=True)
    detail = models.TextField(blank=True)
    checked_at = models.DateTimeField()
    run = models.ForeignKey(ProbeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["target", "check_name"]
        constraints = [models.UniqueConstraint(fields=["target", "check_name"], name="compat_status_unique")]


class SweepRunQuerySet(models.QuerySet):
    def finished(self):
        return self.filter(status__in=SweepRun.FINISHED_STATUSES)

    def for_listing(self):
        return self.select_related("target", "target__tool", "tool", "hardware")


class SweepRun(TimeStampedModel):
    """One benchmark-lab run: a throughput sweep or one of the single-stream suites, measured here by a Celery
    worker (claimed and leased like a probe run, resumable per level) or imported from a peer tool's file.

    ``card`` is the benchmark card: what the server said about itself (model id, weights/format, engine and
    version), what the operator entered (hardware, flags), the workload and the client version.
    """

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
    OWN_TOOL = "inference-atlas"

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
        "catalog.HardwareSpec", null=True, blank=True, on_delete=models.PROTECT, related_name="sweep_runs"
    )
    hardware_count = models.PositiveIntegerField(default=1)
    hourly_price_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    flags = models.TextField(blank=True, help_text="Engine flags as the operator entered them.")
    workload_name = models.CharField(max_length=80, blank=True)
    workload_key = models.CharField(max_length=64, blank=True, db_index=True, help_text="Hash of the workload.")
    workload = models.JSONField(default=dict, blank=True)
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
    error_class = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=80, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

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
        return self.source_tool != self.OWN_TOOL


class SweepLevel(models.Model):
    """The figures of one sweep level (see probe_client.sweep.stats for every definition)."""

    run = models.ForeignKey(SweepRun, on_delete=models.CASCADE, related_name="levels")
    mode = models.CharField(max_length=12, help_text='"concurrency" (closed loop) or "rate" (open loop).')
    level = models.FloatField(help_text="Concurrent streams, or requests per second.")
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

    class Meta:
        ordering = ["run", "level"]
        constraints = [models.UniqueConstraint(fields=["run", "level"], name="sweep_level_unique_per_run")]

    def __str__(self) -> str:
        return f"{self.run} @ {self.level:g}"
