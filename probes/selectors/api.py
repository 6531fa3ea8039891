"""Reads of the stored summaries and the compat matrix for the REST API (and a tool's API detail), each at a
fixed number of queries. Targets and runs are read through probes.selectors.runs."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from probes.models import CompatStatus, MeasurementSummary


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
