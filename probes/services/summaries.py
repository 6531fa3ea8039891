"""Turn stored per-request measurements into the summary rows that pages and the API read.

Percentiles are the vocabulary's (scoring.vocabulary.percentile). Only successful requests enter the
latency and speed figures; failures count against the success rate instead. The 72-hour median
follows Artificial Analysis, which reports the median of the past 72 hours.
"""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Min, OuterRef, Subquery
from django.utils import timezone

from core.cache import generation_bump
from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget, RequestMeasurement
from scoring.vocabulary import Percentiles, TargetFigures, percentile, percentiles, run_summary_keys

# Runs whose requests count: a failed run's requests lower the success rate, they are not dropped.
MEASURED_STATUSES = (ProbeRun.Status.SUCCEEDED, ProbeRun.Status.PARTIAL, ProbeRun.Status.FAILED)
DIGITS = 3


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def rounded_percentiles(values: Iterable[float | None]) -> Percentiles:
    """p50/p95/p99 of the non-missing values as stored, or None for each when there are none."""
    return Percentiles(**{name: _rounded(value) for name, value in percentiles(values).items()})


def run_summary_compute(*, rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per-run figures for history charts: {metric: {p50,p95,p99}} plus request counts and success rate."""
    rows = list(rows)
    succeeded = [row for row in rows if row["ok"]]
    summary: dict[str, Any] = {
        key: rounded_percentiles(row.get(key) for row in succeeded) for key in run_summary_keys()
    }
    summary.update(
        requests=len(rows),
        succeeded=len(succeeded),
        success_rate=round(len(succeeded) / len(rows), 4) if rows else None,
    )
    return summary


def _group_metrics(
    requests: list[tuple[bool, dt.datetime, dict[str, float | None]]], *, recent_since: dt.datetime
) -> tuple[dict[str, Any], int, int]:
    succeeded = [figures for ok, _, figures in requests if ok]
    recent = [figures for ok, started_at, figures in requests if ok and started_at >= recent_since]
    metrics = {
        key: TargetFigures(
            **rounded_percentiles(figures[key] for figures in succeeded),
            median_72h=_rounded(percentile((figures[key] for figures in recent), 50)),
        )
        for key in run_summary_keys()
    }
    return metrics, len(succeeded), len(recent)


def _success_rate(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


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
    generation_bump()
    _lock_target(target)
    now = now or timezone.now()
    window_start = now - dt.timedelta(days=settings.PROBE_SUMMARY_WINDOW_DAYS)
    recent_since = now - dt.timedelta(hours=settings.PROBE_MEDIAN_WINDOW_HOURS)
    keys = run_summary_keys()
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
    requests: dict[tuple[str, int], list[tuple[bool, dt.datetime, dict[str, float | None]]]] = defaultdict(list)
    for workload, concurrency, ok, started_at, *figures in rows:
        requests[(workload, concurrency)].append((bool(ok), started_at, dict(zip(keys, figures, strict=True))))

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
        group = requests.get((workload, concurrency), [])
        if not group:
            metrics, samples, samples_72h = {}, 0, 0
            success_rate = success_rate_72h = None
        else:
            metrics, samples, samples_72h = _group_metrics(group, recent_since=recent_since)
            success_rate = _success_rate([ok for ok, _, _ in group])
            success_rate_72h = _success_rate([ok for ok, started_at, _ in group if started_at >= recent_since])
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
    generation_bump()
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
