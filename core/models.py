"""Model bases every app shares, and who changed what and when, for every write that goes through a service."""
import functools
import secrets
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


class DataGenerationManager(models.Manager):
    def first_number(self) -> int:
        """The number of the one row, created where it is missing (a new or flushed database) at a random
        number, so that a database flushed or restored never counts through numbers whose pages may still
        be cached."""
        row, _ = self.get_or_create(pk=DataGeneration.ONLY, defaults={"number": secrets.randbits(48)})
        return row.number


class DataGeneration(models.Model):
    """The data generation: one row whose number moves after every committed write that pages show
    (core.cache keys the page cache by it)."""

    ONLY = 1

    number = models.BigIntegerField()

    objects = DataGenerationManager()

    def __str__(self) -> str:
        return f"data generation {self.number}"
