"""Model bases every app shares, and who changed what and when, for every write that goes through a service."""
from django.conf import settings
from django.db import models


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class AuditEntry(models.Model):
    class Action(models.TextChoices):
        CREATE = "create", "Created"
        UPDATE = "update", "Updated"
        TRIGGER = "trigger", "Triggered"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries"
    )
    # Kept as text so the record still names the person after the account is deleted.
    username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=10, choices=Action.choices)
    object_type = models.CharField(max_length=100, help_text='"app_label.model", e.g. "catalog.tool".')
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=300, blank=True)
    changes = models.JSONField(
        default=dict, blank=True, help_text='{field: {"old": value, "new": value}}; old is null on create.'
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object")]

    def __str__(self) -> str:
        return f"{self.username or 'system'} {self.action} {self.object_type}:{self.object_id}"
