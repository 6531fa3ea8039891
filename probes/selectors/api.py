"""Reads the probe endpoints of the REST API need, each at a fixed number of queries."""
from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from django.db.models import Prefetch, QuerySet

from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget, RequestMeasurement


def probe_target_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[ProbeTarget]:
    filters = filters or {}
    queryset = ProbeTarget.objects.select_related("tool").order_by("name", "slug")
    if filters.get("tool"):
        queryset = queryset.filter(tool__slug=filters["tool"])
    if filters.get("enabled") is not None:
        queryset = queryset.filter(enabled=filters["enabled"])
    return queryset


def probe_run_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[ProbeRun]:
    """Runs matching validated filters; the caller orders and pages them by primary key (keyset)."""
    filters = filters or {}
    queryset = ProbeRun.objects.select_related("target")
    if filters.get("target"):
        queryset = queryset.filter(target__slug=filters["target"])
    if filters.get("suite"):
        queryset = queryset.filter(suite=filters["suite"])
    if filters.get("status"):
        queryset = queryset.filter(status=filters["status"])
    since: datetime.datetime | None = filters.get("since")
    until: datetime.datetime | None = filters.get("until")
    if since:
        queryset = queryset.filter(queued_at__gte=since)
    if until:
        queryset = queryset.filter(queued_at__lt=until)
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


# What the API shows of a summary; leaving out the timestamps of both rows halves the decoding work.
SUMMARY_FIELDS = (
    "target", "target__slug", "target__name", "workload", "concurrency", "samples", "samples_72h", "success_rate",
    "success_rate_72h", "metrics", "first_run_at", "last_run_at", "last_run",
)


def measurement_summary_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[MeasurementSummary]:
    filters = filters or {}
    queryset = (
        MeasurementSummary.objects.select_related("target")
        .only(*SUMMARY_FIELDS)
        .order_by("target__name", "target__slug", "workload", "concurrency", "id")
    )
    if filters.get("target"):
        queryset = queryset.filter(target__slug=filters["target"])
    if filters.get("tool"):
        queryset = queryset.filter(target__tool__slug=filters["tool"])
    if filters.get("workload"):
        queryset = queryset.filter(workload=filters["workload"])
    if filters.get("concurrency"):
        queryset = queryset.filter(concurrency=filters["concurrency"])
    return queryset


def compat_status_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[CompatStatus]:
    filters = filters or {}
    queryset = CompatStatus.objects.select_related("target").order_by("target__name", "target__slug", "check_name")
    if filters.get("target"):
        queryset = queryset.filter(target__slug=filters["target"])
    if filters.get("check"):
        queryset = queryset.filter(check_name=filters["check"])
    if filters.get("outcome"):
        queryset = queryset.filter(outcome=filters["outcome"])
    return queryset
