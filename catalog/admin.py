from django.contrib import admin
from django.contrib.admin.options import InlineModelAdmin
from django.db.models import Model

from catalog.models import (
    ApiSurface,
    Caveat,
    Change,
    DocumentedAbsence,
    Feature,
    HardwareSpec,
    HardwareSupport,
    HardwareTarget,
    LanguageModel,
    Licence,
    ModelOffering,
    PriceItem,
    QuantFormat,
    ReportedFigure,
    Source,
    Tool,
    ToolApiSurface,
    ToolFeature,
    ToolQuantFormat,
    UseCase,
    UseCaseRecommendation,
)
from core.admin import AuditedModelAdmin, RecordAdmin


def _inline(link: type[Model], *autocomplete: str, style: type[InlineModelAdmin] = admin.TabularInline,
            **options) -> type[InlineModelAdmin]:
    """An inline of `link` rows without blank extra forms, its foreign keys `autocomplete` picked by search."""
    return type(f"{link.__name__}Inline", (style,),
                {"model": link, "extra": 0, "autocomplete_fields": autocomplete, **options})


@admin.register(Tool)
class ToolAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "kind", "rating", "rank", "licence", "last_verified")
    list_filter = ("kind", "licence", "licence__is_open_source", "hardware_support__hardware", "last_verified")
    search_fields = ("name", "slug", "family", "summary", "verdict", "ideal_for")
    list_select_related = ("licence",)
    prepopulated_fields = {"slug": ("name",)}
    autocomplete_fields = ("licence", "rating_source", "sources")
    ordering = ("name",)
    inlines = (
        _inline(Caveat, "source", style=admin.StackedInline),
        _inline(PriceItem, "source", "model", fields=(
            "position", "item", "model", "unit", "tier", "input_usd_per_mtok", "output_usd_per_mtok", "amount_usd",
            "discount_percent", "is_lower_bound", "notes", "verified_on", "source",
        )),
        _inline(HardwareSupport, "hardware", "source"),
        _inline(ToolQuantFormat, "quant_format", "source"),
        _inline(ToolApiSurface, "api_surface", "source"),
        _inline(ToolFeature, "feature", "source"),
        _inline(DocumentedAbsence, "hardware", "quant_format", "feature", "api_surface", "source"),
    )


@admin.register(Source)
class SourceAdmin(AuditedModelAdmin):
    list_display = ("title", "key", "publisher", "verified_on")
    list_filter = ("publisher", "verified_on")
    search_fields = ("title", "key", "url", "publisher")


@admin.register(Licence)
class LicenceAdmin(AuditedModelAdmin):
    list_display = ("spdx_id", "name", "is_open_source")
    list_filter = ("is_open_source",)
    search_fields = ("spdx_id", "name")


@admin.register(HardwareTarget)
class HardwareTargetAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "vendor", "category", "position")
    list_filter = ("category", "vendor")
    search_fields = ("name", "slug", "vendor")


@admin.register(QuantFormat)
class QuantFormatAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "bits_per_weight", "hardware_requirement")
    search_fields = ("name", "slug", "description", "hardware_requirement")
    list_filter = ("source",)
    autocomplete_fields = ("source",)


@admin.register(ApiSurface)
class ApiSurfaceAdmin(AuditedModelAdmin):
    list_display = ("name", "slug")
    search_fields = ("name", "slug", "description")


@admin.register(Feature)
class FeatureAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "position")
    search_fields = ("name", "slug", "description")


@admin.register(PriceItem)
class PriceItemAdmin(AuditedModelAdmin):
    list_display = (
        "tool", "item", "model", "unit", "tier", "input_usd_per_mtok", "output_usd_per_mtok", "amount_usd", "verified_on",
    )
    list_filter = ("unit", "tier", "tool__kind", "tool", "model", "verified_on")
    search_fields = ("item", "notes", "tool__name", "tool__slug")
    list_select_related = ("tool", "model")
    autocomplete_fields = ("tool", "source", "model")


@admin.register(HardwareSupport)
class HardwareSupportAdmin(AuditedModelAdmin):
    list_display = ("tool", "hardware", "level")
    list_filter = ("level", "hardware")
    search_fields = ("tool__name", "hardware__name", "notes")
    list_select_related = ("tool", "hardware")
    autocomplete_fields = ("tool", "hardware", "source")


@admin.register(ToolQuantFormat)
class ToolQuantFormatAdmin(AuditedModelAdmin):
    list_display = ("tool", "quant_format")
    list_filter = ("quant_format",)
    search_fields = ("tool__name", "quant_format__name", "notes")
    list_select_related = ("tool", "quant_format")
    autocomplete_fields = ("tool", "quant_format", "source")


@admin.register(ToolApiSurface)
class ToolApiSurfaceAdmin(AuditedModelAdmin):
    list_display = ("tool", "api_surface", "has_gaps")
    list_filter = ("api_surface",)
    search_fields = ("tool__name", "api_surface__name", "gaps")
    list_select_related = ("tool", "api_surface")
    autocomplete_fields = ("tool", "api_surface", "source")

    @admin.display(boolean=True, description="Gaps documented")
    def has_gaps(self, obj: ToolApiSurface) -> bool:
        return bool(obj.gaps)


@admin.register(ToolFeature)
class ToolFeatureAdmin(AuditedModelAdmin):
    list_display = ("tool", "feature")
    list_filter = ("feature",)
    search_fields = ("tool__name", "feature__name", "notes")
    list_select_related = ("tool", "feature")
    autocomplete_fields = ("tool", "feature", "source")


@admin.register(Caveat)
class CaveatAdmin(AuditedModelAdmin):
    list_display = ("title", "tool", "severity", "key")
    list_filter = ("severity", "tool")
    search_fields = ("title", "body", "key", "tool__name")
    list_select_related = ("tool",)
    autocomplete_fields = ("tool", "source")


@admin.register(UseCase)
class UseCaseAdmin(AuditedModelAdmin):
    list_display = ("title", "slug", "group", "position")
    list_filter = ("group",)
    search_fields = ("title", "slug", "question", "summary")
    autocomplete_fields = ("sources",)
    inlines = (_inline(UseCaseRecommendation, "tool", "source"),)


@admin.register(UseCaseRecommendation)
class UseCaseRecommendationAdmin(AuditedModelAdmin):
    list_display = ("use_case", "tool", "position", "is_recommended")
    list_filter = ("is_recommended", "use_case")
    search_fields = ("use_case__title", "tool__name", "reason")
    list_select_related = ("use_case", "tool")
    autocomplete_fields = ("use_case", "tool", "source")


@admin.register(HardwareSpec)
class HardwareSpecAdmin(AuditedModelAdmin):
    list_display = ("name", "vendor", "memory_gb", "bandwidth_gb_s", "memory_kind", "is_unified_memory")
    list_filter = ("vendor", "is_unified_memory", "memory_kind")
    search_fields = ("name", "slug", "vendor", "notes")
    list_select_related = ("hardware_target",)
    autocomplete_fields = ("hardware_target", "source")


@admin.register(LanguageModel)
class LanguageModelAdmin(AuditedModelAdmin):
    list_display = ("name", "slug", "publisher", "params_total_b", "params_active_b", "context_tokens", "licence")
    list_filter = ("publisher", "licence")
    search_fields = ("name", "slug", "publisher", "summary")
    list_select_related = ("licence",)
    prepopulated_fields = {"slug": ("name",)}
    autocomplete_fields = ("licence", "source")
    inlines = (_inline(ModelOffering, "tool", "source",
                       fields=("tool", "api_model_id", "context_tokens", "notes", "verified_on", "source")),)


@admin.register(ModelOffering)
class ModelOfferingAdmin(AuditedModelAdmin):
    list_display = ("model", "tool", "api_model_id", "context_tokens", "verified_on")
    list_filter = ("model", "tool__kind", "tool")
    search_fields = ("model__name", "tool__name", "api_model_id", "notes")
    list_select_related = ("model", "tool")
    autocomplete_fields = ("model", "tool", "source")


@admin.register(ReportedFigure)
class ReportedFigureAdmin(AuditedModelAdmin):
    """Third-party figures: publisher, link and both dates are required, so none is shown unsourced."""

    list_display = ("key", "tool", "model", "hardware", "metric", "value", "publisher", "observed_on", "verified_on")
    list_filter = ("metric", "tool", "model", "publisher", "observed_on")
    search_fields = ("key", "publisher", "url", "workload", "notes", "tool__name")
    list_select_related = ("tool", "model", "hardware")
    autocomplete_fields = ("tool", "model", "hardware", "source")
    date_hierarchy = "observed_on"


@admin.register(DocumentedAbsence)
class DocumentedAbsenceAdmin(AuditedModelAdmin):
    list_display = ("tool", "hardware", "quant_format", "feature", "api_surface", "source")
    search_fields = ("tool__name", "notes")
    list_select_related = ("tool", "hardware", "quant_format", "feature", "api_surface", "source")
    autocomplete_fields = ("tool", "hardware", "quant_format", "feature", "api_surface", "source")


@admin.register(Change)
class ChangeAdmin(RecordAdmin):
    list_display = ("recorded_at", "kind", "title", "tool", "model", "effective_on")
    list_filter = ("kind", "tool")
    search_fields = ("title", "subject", "tool__name", "model__name")
    list_select_related = ("tool", "model")
    date_hierarchy = "recorded_at"
    readonly_fields = [field.name for field in Change._meta.fields]
