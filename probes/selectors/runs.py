"""Reads of probe targets and runs: the one contract of each, for the API, the CLI, the admin and the services."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Prefetch, QuerySet

from probes.models import CompatOutcome, ProbeRun, ProbeTarget, RequestMeasurement


def probe_target_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[ProbeTarget]:
    """Targets by name. Filters: ``tool`` (a tool slug) and ``enabled`` (True, False, or None for both)."""
    filters = filters or {}
    queryset = ProbeTarget.objects.for_listing().order_by("name", "slug")
    if filters.get("tool"):
        queryset = queryset.filter(tool__slug=filters["tool"])
    if filters.get("enabled") is not None:
        queryset = queryset.filter(enabled=filters["enabled"])
    return queryset


def probe_target_get(*, slug: str) -> ProbeTarget:
    """The one read of a target by slug. Raises ProbeTarget.DoesNotExist."""
    return ProbeTarget.objects.for_listing().get(slug=slug)


def probe_targets_due() -> list[ProbeTarget]:
    """Enabled targets this process can probe: keyless ones, and those whose key variable is set here."""
    return [target for target in ProbeTarget.objects.enabled().for_listing() if target.is_configured]


def probe_targets_not_configured() -> list[ProbeTarget]:
    """Enabled targets that would be probed if their key variable were set in this process."""
    return [target for target in ProbeTarget.objects.enabled().for_listing() if not target.is_configured]


def probe_run_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[ProbeRun]:
    """Runs matching validated filters: ``target`` (a target slug), ``suite``, ``status``, ``since`` and
    ``until`` (on the queue time). Unordered: the caller orders and pages them by primary key (keyset)."""
    filters = filters or {}
    queryset = ProbeRun.objects.select_related("target")
    for name, lookup in (("target", "target__slug"), ("suite", "suite"), ("status", "status"),
                         ("since", "queued_at__gte"), ("until", "queued_at__lt")):
        if filters.get(name):
            queryset = queryset.filter(**{lookup: filters[name]})
    return queryset


def probe_run_get(*, run_id: int) -> ProbeRun:
    """One run with its per-request measurements and compat outcomes. Raises ProbeRun.DoesNotExist."""
    return (
        ProbeRun.objects.select_related("target")
        .prefetch_related(
            Prefetch("measurements", queryset=RequestMeasurement.objects.order_by("index")),
            Prefetch("compat_outcomes", queryset=CompatOutcome.objects.order_by("check_name")),
        )
        .get(pk=run_id)
    )
