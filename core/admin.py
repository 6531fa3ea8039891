from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist

from core.cache import generation_bump
from core.models import AuditEntry
from core.services import audit_record, audit_value


class RecordAdmin(admin.ModelAdmin):
    """Rows the services write as a record (the audit trail, the change record): shown, never added, edited or
    deleted through the admin."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(RecordAdmin):
    list_display = ("created_at", "username", "action", "object_type", "object_id", "object_repr")
    list_filter = ("action", "object_type")
    search_fields = ("username", "object_id", "object_repr")
    date_hierarchy = "created_at"
    readonly_fields = [field.name for field in AuditEntry._meta.fields]


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


class AuditedModelAdmin(PageCacheAdmin):
    """A model admin whose saves are recorded in the audit trail like a service's writes (core.services): the fields
    the form changed, old and new, by the signed-in user, for the object and for each changed inline row. Deletions
    and many-to-many links (saved after the object) keep Django's own admin log only."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        _audit_form(request, form, created=not change)

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        deleted = {id(row) for row in formset.deleted_forms}
        for row in formset.forms:
            if id(row) not in deleted and row.instance.pk is not None and row.has_changed():
                _audit_form(request, row, created=row in formset.extra_forms)


def _audit_form(request, form, *, created: bool) -> None:
    instance = form.instance
    changes = {}
    for name in form.changed_data:
        try:
            field = instance._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        if field.many_to_many:
            continue
        old = None if created else form.initial.get(name)
        if old is not None and field.many_to_one:
            old = field.remote_field.model._default_manager.filter(pk=old).first()
        changes[name] = {"old": audit_value(old), "new": audit_value(getattr(instance, name))}
    if changes:
        action = AuditEntry.Action.CREATE if created else AuditEntry.Action.UPDATE
        audit_record(actor=request.user, action=action, instance=instance, changes=changes)
