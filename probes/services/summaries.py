"""Turn stored per-request measurements into the summary rows that pages and the API read.

Percentiles use linear interpolation between closest ranks (numpy's and pandas' default, the
method vLLM's and SGLang's benchmark scripts report with). Only successful requests enter the
latency and speed figures; failures count against the success rate instead. The 72-hour median
follows Artificial Analysis, which reports the median of the past 72 hours.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min, OuterRef, Subquery
from django.utils import timezone

from probes.metrics import PERCENTILES, Percentiles, TargetFigures, run_summary_keys
from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget, RequestMeasurement

# Runs whose requests count: a failed run's requests lower the success rate, they are not dropped.
MEASURED_STATUSES = (ProbeRun.Status.SUCCEEDED, ProbeRun.Status.PARTIAL, ProbeRun.Status.FAILED)
DIGITS = 3


def _rounded(value: float) -> float | None:
    return None if pd.isna(value) else round(float(value), DIGITS)


def percentiles(values: Iterable[float | None]) -> Percentiles:
    """p50/p95/p99 of the non-missing values, or None for each when there are none."""
    series = pd.Series(list(values), dtype="float64").dropna()
    if series.empty:
        return Percentiles(**dict.fromkeys(PERCENTILES))
    return Percentiles(**{name: _rounded(series.quantile(q / 100)) for name, q in PERCENTILES.items()})


def run_summary_compute(*, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-run figures for history charts: {metric: {p50,p95,p99}} plus request counts and success rate."""
    keys = run_summary_keys()
    frame = pd.DataFrame.from_records(list(rows), columns=["ok", *keys])
    total = len(frame)
    succeeded = frame[frame["ok"].astype(bool)] if total else frame
    summary: dict[str, Any] = {metric: percentiles(succeeded[metric]) for metric in keys}
    summary.update(
        requests=total,
        succeeded=len(succeeded),
        success_rate=round(len(succeeded) / total, 4) if total else None,
    )
    return summary


def _group_metrics(group: pd.DataFrame, *, recent_since: dt.datetime) -> tuple[dict[str, Any], int, int]:
    succeeded = group[group["ok"]]
    recent = succeeded[succeeded["started_at"] >= recent_since]
    metrics: dict[str, TargetFigures] = {}
    for metric in run_summary_keys():
        recent_values = recent[metric].dropna()
        median = _rounded(recent_values.median()) if not recent_values.empty else None
        metrics[metric] = TargetFigures(**percentiles(succeeded[metric]), median_72h=median)
    return metrics, len(succeeded), len(recent)


def _success_rate(flags: pd.Series) -> float | None:
    return round(float(flags.mean()), 4) if len(flags) else None


def _lock_target(target: ProbeTarget) -> None:
    """Serialise refreshes of one target, so a refresh that read older rows cannot write last."""
    ProbeTarget.objects.select_for_update().filter(pk=target.pk).values_list("pk", flat=True).first()


@transaction.atomic
def probe_summaries_refresh(*, target: ProbeTarget, now: dt.datetime | None = None) -> list[MeasurementSummary]:
    """Recompute every target x workload x concurrency summary of one target (idempotent upsert).

    Percentiles and success rate cover the last PROBE_SUMMARY_WINDOW_DAYS days; the medians and the
    72-hour success rate cover the last 72 hours. A group with no request left in the window keeps its
    row with zero samples, so a page shows "no recent data" rather than an old figure.
    """
    _lock_target(target)
    now = now or timezone.now()
    window_start = now - dt.timedelta(days=settings.PROBE_SUMMARY_WINDOW_DAYS)
    recent_since = now - dt.timedelta(hours=settings.PROBE_MEDIAN_WINDOW_HOURS)
    keys = run_summary_keys()
    columns = ["workload", "concurrency", "ok", "started_at", *keys]
    rows = (
        RequestMeasurement.objects.filter(
            run__target=target,
            run__suite=ProbeRun.Suite.SPEED,
            run__status__in=MEASURED_STATUSES,
            started_at__gte=window_start,
            started_at__lte=now,
        )
        .values_list("run__workload", "run__concurrency", "ok", "started_at", *keys)
        .order_by()
    )
    frame = pd.DataFrame.from_records(list(rows), columns=columns)
    if not frame.empty:
        frame["ok"] = frame["ok"].astype(bool)
        frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
        for metric in keys:
            frame[metric] = frame[metric].astype("float64")

    run_spans = {
        (span["workload"], span["concurrency"]): span
        for span in ProbeRun.objects.filter(
            target=target, suite=ProbeRun.Suite.SPEED, status__in=MEASURED_STATUSES
        )
        .values("workload", "concurrency")
        .annotate(first_run_at=Min("started_at"), last_run_at=Max("finished_at"))
        .order_by()
    }
    latest_runs: dict[tuple[str, int], int] = {}
    for workload, concurrency, run_id in (
        ProbeRun.objects.filter(
            target=target, suite=ProbeRun.Suite.SPEED, status__in=MEASURED_STATUSES, finished_at__gte=window_start
        )
        .order_by("-finished_at", "-id")
        .values_list("workload", "concurrency", "id")
    ):
        latest_runs.setdefault((workload, concurrency), run_id)

    groups = set(run_spans)
    groups.update(MeasurementSummary.objects.filter(target=target).values_list("workload", "concurrency"))
    refreshed = []
    for workload, concurrency in sorted(groups):
        group = (
            frame[(frame["workload"] == workload) & (frame["concurrency"] == concurrency)]
            if not frame.empty
            else frame
        )
        if group.empty:
            metrics, samples, samples_72h = {}, 0, 0
            success_rate = success_rate_72h = None
        else:
            metrics, samples, samples_72h = _group_metrics(group, recent_since=recent_since)
            success_rate = _success_rate(group["ok"])
            success_rate_72h = _success_rate(group[group["started_at"] >= recent_since]["ok"])
        span = run_spans.get((workload, concurrency), {})
        summary, _ = MeasurementSummary.objects.update_or_create(
            target=target,
            workload=workload,
            concurrency=concurrency,
            defaults={
                "samples": samples,
                "samples_72h": samples_72h,
                "success_rate": success_rate,
                "success_rate_72h": success_rate_72h,
                "metrics": metrics,
                "first_run_at": span.get("first_run_at"),
                "last_run_at": span.get("last_run_at"),
                "last_run_id": latest_runs.get((workload, concurrency)),
            },
        )
        refreshed.append(summary)
    return refreshed


@transaction.atomic
def compat_statuses_refresh(*, target: ProbeTarget) -> list[CompatStatus]:
    """One cell per check: the outcome from the most recently finished compat run that ran it."""
    _lock_target(target)
    latest = (
        CompatOutcome.objects.filter(
            run__target=target,
            run__suite=ProbeRun.Suite.COMPAT,
            run__status__in=MEASURED_STATUSES,
            check_name=OuterRef("check_name"),
        )
        .order_by("-run__finished_at", "-run_id")
        .values("pk")[:1]
    )
    outcomes = (
        CompatOutcome.objects.filter(run__target=target, pk=Subquery(latest))
        .select_related("run")
        .order_by("check_name")
    )
    refreshed = []
    for outcome in outcomes:
        status, _ = CompatStatus.objects.update_or_create(
            target=target,
            check_name=outcome.check_name,
            defaults={
                "outcome": outcome.outcome,
                "http_status": outcome.http_status,
                "message": outcome.message,
                "detail": outcome.detail,
                "checked_at": outcome.run.finished_at or outcome.run.started_at or outcome.run.queued_at,
                "run": outcome.run,
            },
        )
        refreshed.append(status)
    return refreshed
