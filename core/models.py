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


class WriteLogRow(models.Model):
    """What a row of the write log counts (core.write_log): `transactions` is 1 and `txid_sum` the
    transaction's id (on SQLite, a random mark set anew by every write), and `writes` counts the statements
    (on SQLite, the rows) it wrote; a folded row (txid 0) keeps the sums of the rows it replaced."""

    txid = models.BigIntegerField()
    transactions = models.BigIntegerField()
    txid_sum = models.BigIntegerField()
    writes = models.BigIntegerField()

    class Meta:
        abstract = True


class TableWrite(WriteLogRow):
    """The writes one transaction made to one table that a cached read may show, kept by database triggers
    (core.write_log) so that the read cache's fingerprint (core.cache) reads a few rows of this table instead
    of every row of the catalog.

    A row is (table, transaction). core.write_log.write_log_compact folds the rows of committed transactions
    into one row per table (txid 0) that keeps the three sums, so compacting moves no fingerprint. The table
    name "*" stands for every table: a TRUNCATE, or the installing of the triggers.
    """

    table_name = models.CharField(max_length=100)

    class Meta:
        db_table = "atlas_table_write"
        constraints = [models.UniqueConstraint(fields=["table_name", "txid"], name="atlas_table_write_once")]

    def __str__(self) -> str:
        return f"{self.table_name} in transaction {self.txid}"


class OwnerWrite(WriteLogRow):
    """Like TableWrite, per cache scope and owner (a tool): the writes one transaction made to the rows of
    one tool, whichever of its tables they were in (core.cache keys each tool's cached pieces by them)."""

    scope = models.CharField(max_length=30)
    owner_id = models.BigIntegerField()

    class Meta:
        db_table = "atlas_owner_write"
        constraints = [models.UniqueConstraint(fields=["scope", "owner_id", "txid"], name="atlas_owner_write_once")]

    def __str__(self) -> str:
        return f"{self.scope} of owner {self.owner_id} in transaction {self.txid}"
