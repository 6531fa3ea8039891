"""Probe targets, every stored run with its per-request measurements, and the summaries pages read."""
import os

from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.deconstruct import deconstructible

from catalog.models import Tool
from core.models import LeasedRun, TimeStampedModel
from probe_client.config import EndpointConfig, api_key_env_error
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

    def endpoint_config(self) -> EndpointConfig:
        """The client's view of the endpoint: the variable's NAME only; the client reads the value per request."""
        return EndpointConfig(base_url=self.base_url, model=self.model_id, api_key_env=self.api_key_env or None)

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


class ProbeRun(LeasedRun):
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
    region = models.CharField(max_length=80, blank=True)
    queue = models.CharField(max_length=120, blank=True, help_text="Celery queue the run was sent to.")
    queued_at = models.DateTimeField(auto_now_add=True)
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
