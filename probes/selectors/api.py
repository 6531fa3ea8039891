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
    for name, lookup in (("target", "target__slug"), ("tool", "target__tool__slug"), ("workload", "workload"),
                         ("concurrency", "concurrency")):
        if filters.get(name):
            queryset = queryset.filter(**{lookup: filters[name]})
    return queryset


def compat_status_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[CompatStatus]:
    filters = filters or {}
    queryset = CompatStatus.objects.select_related("target").order_by("target__name", "target__slug", "check_name")
    for name, lookup in (("target", "target__slug"), ("check", "check_name"), ("outcome", "outcome")):
        if filters.get(name):
            queryset = queryset.filter(**{lookup: filters[name]})
    return queryset
