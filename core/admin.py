from django.contrib import admin

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
