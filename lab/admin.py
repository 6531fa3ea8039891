"""Admin for the lab: runs are measured by workers or imported from a peer tool's result file (the "Import"
button); nobody edits their figures."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from catalog.models import HardwareSpec, Tool
from core.exceptions import ApplicationError
from lab.models import SweepLevel, SweepRun
from lab.services.imports import sweep_import_file
from probe_client.sweep import IMPORT_FORMATS
from probe_client.sweep.imports import MAX_RESULT_BYTES
from probes.admin import ReadOnlyAdmin, ReadOnlyInline
from probes.models import ProbeTarget


class SweepLevelInline(ReadOnlyInline):
    model = SweepLevel
    fields = ("level", "mode", "requests", "ok", "output_tps", "goodput_rps", "meets_slo", "cost_per_1m_output_usd")
    readonly_fields = fields
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).figures()


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
    change_list_template = "admin/lab/sweeprun/change_list.html"

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="lab_sweeprun_import"),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_staff:
            raise PermissionDenied
        form = SweepImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                run = sweep_import_file(
                    data=data["file"], source_tool=data["source_tool"] or None, target=data["target"],
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
                return HttpResponseRedirect(reverse("lab:sweep-detail", args=[run.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Import a peer tool's result file",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/lab/sweeprun/import.html", context, status=400 if form.errors else 200)
