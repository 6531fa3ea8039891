"""Admin for probes: targets are edited here; runs and everything measured are read-only records.

The admin shows the NAME of each target's key variable and whether this process sees it set; it never
reads or shows a value.
"""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from catalog.models import HardwareSpec, Tool
from core.exceptions import ApplicationError
from probe_client.sweep import IMPORT_FORMATS
from probe_client.sweep.imports import MAX_RESULT_BYTES
from probes.models import (
    CompatOutcome,
    CompatStatus,
    MeasurementSummary,
    ProbeRun,
    ProbeTarget,
    RequestMeasurement,
    SweepLevel,
    SweepRun,
)
from scoring.vocabulary import E2E, OUTPUT_SPEED, TTFAT, TTFT

# The per-request figures a measurement row shows in the admin's lists.
MEASUREMENT_COLUMNS = tuple(metric.key for metric in (TTFT, TTFAT, E2E, OUTPUT_SPEED))


class ReadOnlyAdmin(admin.ModelAdmin):
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
class ProbeTargetAdmin(admin.ModelAdmin):
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


class SweepLevelInline(ReadOnlyInline):
    model = SweepLevel
    fields = ("level", "mode", "requests", "ok", "output_tps", "goodput_rps", "meets_slo", "cost_per_1m_output_usd")
    readonly_fields = fields
    show_change_link = False


class SweepImportForm(forms.Form):
    file = forms.FileField(
        help_text="vLLM bench serve --save-result JSON (JSONL with --append-result), GuideLLM benchmarks.json, "
        "or AIPerf profile_export_aiperf.json, as the tool wrote it."
    )
    source_tool = forms.ChoiceField(
        choices=[("", "Recognise from the file")] + [(name, name) for name in IMPORT_FORMATS], required=False
    )
    target = forms.ModelChoiceField(queryset=ProbeTarget.objects.select_related("tool"), required=False)
    tool = forms.ModelChoiceField(
        queryset=Tool.objects.all(), required=False, help_text="The engine measured (the target's when one is chosen)."
    )
    hardware = forms.ModelChoiceField(queryset=HardwareSpec.objects.all(), required=False)
    hardware_count = forms.IntegerField(min_value=1, max_value=4096, initial=1)
    hourly_price_usd = forms.DecimalField(
        label="Hourly price (USD)", min_value=0, max_digits=10, decimal_places=4, required=False,
        help_text="What the hardware costs per hour: gives the cost per 1M output tokens at each level.",
    )
    flags = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, max_length=4000)

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_RESULT_BYTES:
            raise forms.ValidationError(f"Larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB.")
        return upload


@admin.register(SweepRun)
class SweepRunAdmin(ReadOnlyAdmin):
    """Lab runs are measured by workers or imported from a peer tool's file (the "Import" button)."""

    list_display = ("id", "kind", "status", "source_tool", "target", "tool", "hardware", "workload_name",
                    "levels_done", "levels_total", "queued_at")
    list_filter = ("kind", "status", "source_tool")
    search_fields = ("target__name", "target__slug", "workload_name", "engine_version")
    list_select_related = ("target", "tool", "hardware")
    date_hierarchy = "queued_at"
    inlines = (SweepLevelInline,)
    change_list_template = "admin/probes/sweeprun/change_list.html"

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="probes_sweeprun_import"),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        from probes.services.sweeps import sweep_import_file

        if not request.user.is_staff:
            raise PermissionDenied
        form = SweepImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                run = sweep_import_file(
                    data=data["file"].read(), source_tool=data["source_tool"] or None, target=data["target"],
                    tool=data["tool"], hardware=data["hardware"], hardware_count=data["hardware_count"],
                    hourly_price_usd=data["hourly_price_usd"], flags=data["flags"],
                )
            except ApplicationError as error:
                for name, problems in error.fields.items():
                    form.add_error(name if name in form.fields else None, problems)
                if not error.fields:
                    form.add_error(None, error.message)
            else:
                self.message_user(
                    request, f"Imported {run.levels_done} levels from {run.source_tool} as run {run.pk}.", messages.SUCCESS
                )
                return HttpResponseRedirect(reverse("probes:sweep-detail", args=[run.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Import a peer tool's result file",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/probes/sweeprun/import.html", context, status=400 if form.errors else 200)
