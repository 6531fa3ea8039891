from django.contrib import admin

from core.cache import generation_bump
from core.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ("created_at", "username", "action", "object_type", "object_id", "object_repr")
    list_filter = ("action", "object_type")
    search_fields = ("username", "object_id", "object_repr")
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in AuditEntry._meta.fields]

    # The trail is evidence: nobody edits or deletes it through the admin.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class PageCacheAdmin(admin.ModelAdmin):
    """The admin writes rows itself, not through the services: each of its writes moves the page cache's
    generation as theirs do (save_related follows every save of the change form and the list's edits)."""

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        generation_bump()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        generation_bump()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        generation_bump()
