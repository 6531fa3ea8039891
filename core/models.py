"""Model bases every app shares, and who changed what and when, for every write that goes through a service."""
import functools
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.encoding import force_str
from django.utils.hashable import make_hashable


@functools.cache
def _choice_labels(field: models.Field) -> dict[Any, Any]:
    return dict(make_hashable(field.flatchoices))


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    def _get_FIELD_display(self, field: models.Field) -> str:  # noqa: N802 (Django's name)
        # Django's get_<field>_display() rebuilds the field's choice dict on every call, which list pages
        # pay per row and per badge; choices are fixed with the class, so the dict is built once per field.
        value = getattr(self, field.attname)
        return force_str(_choice_labels(field).get(make_hashable(value), value), strings_only=True)


class LeasedRun(TimeStampedModel):
    """The columns of a run that a worker claims and holds by a lease (core.leases): probe runs and lab sweeps.
    A subclass has `status` (its `Status` with QUEUED, RUNNING and FAILED) and `queued_at`; `updated_at` is when
    recovery last saw to a queued run."""

    error_class = models.CharField(max_length=60, blank=True)
    error_message = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    task_id = models.CharField(max_length=80, blank=True)
    attempts = models.PositiveIntegerField(
        default=0, help_text="How many times a worker claimed the run; a worker that dies leaves it to the next."
    )
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="A running run whose lease passed belongs to a dead worker."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

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
