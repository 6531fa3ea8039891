"""Writes shared by every app: applying a partial update to a model, and recording it in the audit trail."""
from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from django.db import models

from core.models import AuditEntry

Changes = dict[str, dict[str, Any]]
ModelT = TypeVar("ModelT", bound=models.Model)
Validator = Callable[[Any], None]
AuditObserver = Callable[[list[AuditEntry]], None]

# Called with every batch of audit entries once they are saved: the apps that derive records from the trail (the
# catalog's change record) register here in AppConfig.ready, so every writer that audits feeds them alike.
_AUDIT_OBSERVERS: dict[str, AuditObserver] = {}


def audit_observer_register(*, name: str, observer: AuditObserver) -> None:
    """Register (or replace, when an app is set up again) the observer called `name`."""
    _AUDIT_OBSERVERS[name] = observer


def audit_entries_observe(*, entries: list[AuditEntry]) -> None:
    """Hand saved audit entries to every observer, in registration order, inside the writer's transaction."""
    if entries:
        for observer in _AUDIT_OBSERVERS.values():
            observer(entries)


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
    entry = AuditEntry.objects.create(
        user=user,
        username=user.get_username() if user else "",
        action=action,
        object_type=instance._meta.label_lower,
        object_id=str(instance.pk),
        object_repr=str(instance)[:300],
        changes=changes or {},
    )
    audit_entries_observe(entries=[entry])
    return entry


def creation_changes(*, instance: models.Model, fields: Iterable[str]) -> Changes:
    return {name: {"old": None, "new": audit_value(getattr(instance, name))} for name in fields}


def _validate(instance: models.Model, validate: Validator | None) -> None:
    if validate is None:
        instance.full_clean()
    else:
        validate(instance)


def audited_create(
    *,
    actor: Any,
    instance: ModelT,
    fields: Iterable[str],
    validate: Validator | None = None,
    many_to_many: Mapping[str, Iterable[models.Model]] | None = None,
) -> ModelT:
    """Validate (`validate`, else full_clean), save and audit a new object, with its `fields` as created.

    `many_to_many` sets those relations once the object has a key and records them too. The caller
    runs this inside its transaction.
    """
    _validate(instance, validate)
    instance.save()
    changes = creation_changes(instance=instance, fields=fields)
    for name, related in (many_to_many or {}).items():
        related = list(related)
        getattr(instance, name).set(related)
        changes[name] = {"old": None, "new": audit_value(related)}
    audit_record(actor=actor, action=AuditEntry.Action.CREATE, instance=instance, changes=changes)
    return instance


def audited_update(
    *,
    actor: Any,
    instance: ModelT,
    fields: Iterable[str],
    data: Mapping[str, Any],
    validate: Validator | None = None,
    many_to_many_fields: Iterable[str] = (),
) -> ModelT:
    """Apply the `fields` present in `data` (a partial update); validate, save and audit only what changed.

    Relations named in `many_to_many_fields` are replaced when `data` carries them and differ. The
    caller runs this inside its transaction.
    """
    changes = model_update(instance=instance, fields=fields, data=data)
    if changes:
        _validate(instance, validate)
        # Only the changed columns: a concurrent edit of other fields (another PATCH, the admin) survives.
        changed = [*changes, *(["updated_at"] if hasattr(instance, "updated_at") else [])]
        instance.save(update_fields=changed)
    for name in many_to_many_fields:
        if name not in data:
            continue
        new = list(data[name])
        old_value, new_value = audit_value(list(getattr(instance, name).all())), audit_value(new)
        if old_value != new_value:
            getattr(instance, name).set(new)
            changes[name] = {"old": old_value, "new": new_value}
    if changes:
        audit_record(actor=actor, action=AuditEntry.Action.UPDATE, instance=instance, changes=changes)
    return instance
