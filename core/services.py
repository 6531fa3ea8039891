"""Writes shared by every app: applying a partial update to a model, and recording it in the audit trail."""
from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import models

from core.models import AuditEntry

Changes = dict[str, dict[str, Any]]


def audit_value(value: Any) -> Any:
    """A JSON-safe form of a field value: money stays exact, relations are named by their key."""
    if isinstance(value, models.Model):
        for natural_key in ("slug", "key", "spdx_id"):
            if hasattr(value, natural_key):
                return getattr(value, natural_key)
        return value.pk
    if isinstance(value, (list, tuple, set)):
        return sorted(audit_value(item) for item in value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def model_update(*, instance: models.Model, fields: Iterable[str], data: Mapping[str, Any]) -> Changes:
    """Set the given fields that are present in `data` and differ; return what changed, old and new.

    The caller validates (full_clean) and saves; many-to-many fields are not handled here.
    """
    changes: Changes = {}
    for field_name in fields:
        if field_name not in data:
            continue
        old = getattr(instance, field_name)
        new = data[field_name]
        if old != new:
            setattr(instance, field_name, new)
            changes[field_name] = {"old": audit_value(old), "new": audit_value(new)}
    return changes


def audit_record(
    *, actor: Any, action: str, instance: models.Model, changes: Changes | None = None
) -> AuditEntry:
    """Record one write. `actor` is the user who made it, or None for the system itself."""
    user = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEntry.objects.create(
        user=user,
        username=user.get_username() if user else "",
        action=action,
        object_type=instance._meta.label_lower,
        object_id=str(instance.pk),
        object_repr=str(instance)[:300],
        changes=changes or {},
    )


def creation_changes(*, instance: models.Model, fields: Iterable[str]) -> Changes:
    return {name: {"old": None, "new": audit_value(getattr(instance, name))} for name in fields}
