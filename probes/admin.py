"""Admin for probes: targets are edited here; runs and everything measured are read-only records.

The admin shows the NAME of each target's key variable and whether this process sees it set; it never
reads or shows a value.
"""
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import PageCacheAdmin
from core.exceptions import ApplicationError
from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget, RequestMeasurement
from scoring.vocabulary import E2E, OUTPUT_SPEED, TTFAT, TTFT

# The per-request figures a measurement row shows in the admin's lists.
MEASUREMENT_COLUMNS = tuple(metric.key for metric in (TTFT, TTFAT, E2E, OUTPUT_SPEED))


class ReadOnlyAdmin(PageCacheAdmin):
    """Measurements come only from probe runs; nobody types them in or edits them."""

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ProbeTarget)
class ProbeTargetAdmin(PageCacheAdmin):
    list_display = ("name", "slug", "tool", "base_url", "model_id", "api_key_env", "key_status", "enabled")
    list_filter = ("enabled", "tool__kind")
    list_editable = ("enabled",)
    search_fields = ("name", "slug", "model_id", "base_url")
    list_select_related = ("tool",)
    readonly_fields = ("key_status", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("slug", "name", "tool", "enabled")}),
        ("Endpoint", {"fields": ("base_url", "model_id", "api_key_env", "key_status")}),
        ("Deployment", {"fields": ("hardware", "quantization", "engine_version", "region", "notes")}),
        ("Record", {"fields": ("created_at", "updated_at")}),
    )
    actions = ("enqueue_probe_runs",)

    @admin.display(description="API key")
    def key_status(self, obj: ProbeTarget) -> str:
        if not obj.api_key_env:
            return "no key needed"
        if obj.api_key_is_set:
            return f"{obj.api_key_env} is set in this process"
        return f"{obj.api_key_env} is NOT set in this process (not configured)"

    @admin.action(description="Enqueue speed and compat runs for the selected targets")
    def enqueue_probe_runs(self, request: HttpRequest, queryset: QuerySet[ProbeTarget]) -> None:
        from probes.services.runs.enqueue import probe_runs_enqueue

        total = 0
        for target in queryset.select_related("tool"):
            try:
                total += len(probe_runs_enqueue(target=target))
            except ApplicationError as exc:
                self.message_user(request, f"{target}: {exc.message}", level=messages.ERROR)
        self.message_user(request, f"Queued {total} probe runs; workers will pick them up.")


class RequestMeasurementInline(ReadOnlyInline):
    model = RequestMeasurement
    fields = ("index", "ok", "http_status", *MEASUREMENT_COLUMNS, "error_class")
    readonly_fields = fields


class CompatOutcomeInline(ReadOnlyInline):
    model = CompatOutcome
    fields = ("check_name", "outcome", "http_status", "message", "detail")
    readonly_fields = fields


@admin.register(ProbeRun)
class ProbeRunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "target",
        "suite",
        "workload",
        "concurrency",
        "status",
        "attempts",
        "region",
        "worker",
        "queued_at",
        "finished_at",
    )
    list_filter = ("status", "suite", "workload", "concurrency", "region")
    search_fields = ("target__name", "target__slug", "worker", "error_class")
    list_select_related = ("target",)
    date_hierarchy = "queued_at"
    inlines = (RequestMeasurementInline, CompatOutcomeInline)


@admin.register(RequestMeasurement)
class RequestMeasurementAdmin(ReadOnlyAdmin):
    list_display = ("run", "index", "ok", *MEASUREMENT_COLUMNS, "error_class")
    list_filter = ("ok", "buffered", "output_tokens_source")
    list_select_related = ("run__target",)


@admin.register(CompatOutcome)
class CompatOutcomeAdmin(ReadOnlyAdmin):
    list_display = ("run", "check_name", "outcome", "http_status")
    list_filter = ("outcome", "check_name")
    list_select_related = ("run__target",)


@admin.register(MeasurementSummary)
class MeasurementSummaryAdmin(ReadOnlyAdmin):
    list_display = ("target", "workload", "concurrency", "samples", "samples_72h", "success_rate", "last_run_at")
    list_filter = ("workload", "concurrency")
    list_select_related = ("target",)


@admin.register(CompatStatus)
class CompatStatusAdmin(ReadOnlyAdmin):
    list_display = ("target", "check_name", "outcome", "http_status", "checked_at")
    list_filter = ("outcome", "check_name")
    list_select_related = ("target",)
