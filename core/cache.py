"""A shared (Redis) cache of read results, invalidated by a per-scope data version.

Every ORM write to a model of a scope (post_save, post_delete, m2m_changed) moves the scope's version,
once at once and once more when the transaction commits, so a reader never keeps a result computed
from data that changed. Writes that bypass model signals (QuerySet.update, bulk_create) are covered by
the entry's time to live. Only small, hot reads use it: the catalog lists and details, summaries,
the compat matrix and probe targets; the unbounded runs list is never cached.
"""
from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from django.apps import apps
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from rest_framework.request import Request

VERSION_KEY = "api:data-version:{scope}"
ENTRY_KEY = "api:read:v2:{digest}"
ENTRY_TTL_SECONDS = 300

# Which app's models feed which scope. Runs and per-request measurements change constantly and feed
# no cached read, so they do not move the probes version.
SCOPE_MODELS: dict[str, Callable[[Any], bool]] = {
    "catalog": lambda model: model._meta.app_label in ("catalog", "recommend"),
    "probes": lambda model: model._meta.label_lower
    in ("probes.probetarget", "probes.measurementsummary", "probes.compatstatus"),
}


def _versions(scopes: Iterable[str]) -> list[str]:
    keys = [VERSION_KEY.format(scope=scope) for scope in scopes]
    found = cache.get_many(keys)
    for key in keys:
        if key not in found:
            cache.add(key, uuid.uuid4().hex, timeout=None)
            found[key] = cache.get(key)
    return [str(found[key]) for key in keys]


def bump_version(scope: str) -> None:
    cache.set(VERSION_KEY.format(scope=scope), uuid.uuid4().hex, timeout=None)


def cached_read(*, request: Request, scopes: Iterable[str], build: Callable[[], Any]) -> tuple[Any, int]:
    """The result of `build()` for this URL (path, query and host), computed once per data version,
    and when it was computed (epoch seconds): the representation cannot be older than that."""
    scopes = tuple(scopes)
    raw = "\0".join([request.get_host(), request.path, request.META.get("QUERY_STRING", ""), *_versions(scopes)])
    key = ENTRY_KEY.format(digest=hashlib.sha256(raw.encode()).hexdigest())
    entry = cache.get(key)
    if entry is None:
        entry = (build(), int(time.time()))
        cache.set(key, entry, timeout=ENTRY_TTL_SECONDS)
    return entry


def _bump_for(model: Any) -> None:
    for scope, matches in SCOPE_MODELS.items():
        if matches(model):
            bump_version(scope)
            # Again after commit: a reader that recomputed between the write and the commit saw the old rows.
            transaction.on_commit(lambda scope=scope: bump_version(scope), robust=True)


def _on_write(sender: Any, **kwargs: Any) -> None:
    _bump_for(sender)


def connect_invalidation() -> None:
    for model in apps.get_models():
        if any(matches(model) for matches in SCOPE_MODELS.values()):
            post_save.connect(_on_write, sender=model, dispatch_uid=f"api-cache-save-{model._meta.label_lower}")
            post_delete.connect(_on_write, sender=model, dispatch_uid=f"api-cache-delete-{model._meta.label_lower}")
    m2m_changed.connect(_on_m2m, dispatch_uid="api-cache-m2m")


def _on_m2m(sender: Any, instance: Any, **kwargs: Any) -> None:
    if kwargs.get("action", "").startswith("post_"):
        _bump_for(type(instance))
