"""Read model of the /methodology/ page: how fresh each figure is, what the beat schedule runs, which workloads
it sends and the thresholds the client applies."""
from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from celery.schedules import crontab
from celery.schedules import schedule as interval_schedule
from cron_descriptor import ExpressionDescriptor, Options
from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from probe_client import WORKLOADS, stream_analysis
from probes.models import CompatStatus, MeasurementSummary, ProbeTarget
from probes.selectors.cells import STALE_AFTER_PARALLEL, age_since, stale_after
from scoring.vocabulary import workload_input_tokens


@dataclass
class FreshnessRow:
    target: ProbeTarget
    configuration: str
    workload: str
    concurrency: int
    last_run_at: dt.datetime | None
    age: dt.timedelta | None
    stale: bool
    samples_72h: int


@dataclass
class CompatFreshness:
    target: ProbeTarget
    last_checked_at: dt.datetime
    age: dt.timedelta
    stale: bool


@dataclass
class Freshness:
    speed: list[FreshnessRow]
    compat: list[CompatFreshness]
    unmeasured_targets: list[ProbeTarget]
    now: dt.datetime


def freshness_report(*, now: dt.datetime | None = None) -> Freshness:
    """When each figure was last refreshed, per target × workload × concurrency and per compat matrix row.

    Three queries: summaries with their targets, the latest compat check per target, and the enabled targets.
    """
    now = now or timezone.now()
    summaries = (
        MeasurementSummary.objects.select_related("target")
        .defer("metrics")
        .order_by("target__name", "workload", "concurrency")
    )
    speed = []
    measured_ids = set()
    for summary in summaries:
        measured_ids.add(summary.target_id)
        age = age_since(summary.last_run_at, now)
        speed.append(
            FreshnessRow(
                target=summary.target,
                configuration=summary.target.configuration,
                workload=summary.workload,
                concurrency=summary.concurrency,
                last_run_at=summary.last_run_at,
                age=age,
                stale=age is not None and age > stale_after(summary.concurrency),
                samples_72h=summary.samples_72h,
            )
        )
    enabled = list(ProbeTarget.objects.filter(enabled=True).select_related("tool"))
    enabled_by_id = {target.pk: target for target in enabled}
    latest_checks = (
        CompatStatus.objects.values("target_id").annotate(last_checked_at=Max("checked_at")).order_by()
    )
    known_targets = {row.target.pk: row.target for row in speed} | enabled_by_id
    compat = []
    for entry in latest_checks:
        target = known_targets.get(entry["target_id"])
        if target is None:
            continue
        measured_ids.add(target.pk)
        age = age_since(entry["last_checked_at"], now)
        compat.append(CompatFreshness(target, entry["last_checked_at"], age, age > STALE_AFTER_PARALLEL))
    compat.sort(key=lambda item: item.target.name.lower())
    return Freshness(
        speed=speed,
        compat=compat,
        unmeasured_targets=[target for target in enabled if target.pk not in measured_ids],
        now=now,
    )


@dataclass(frozen=True)
class ScheduleEntry:
    name: str
    task: str
    schedule: str
    arguments: str


def _describe_cron(expression: str) -> str:
    options = Options()
    options.use_24hour_time_format = True
    described = ExpressionDescriptor(expression, options).get_description()
    return f"{described} — cron “{expression}” ({settings.CELERY_TIMEZONE})"


def _describe_schedule(name: str, schedule: object) -> str:
    if isinstance(schedule, crontab):
        expression = (getattr(settings, "PROBE_CRON_SCHEDULES", None) or {}).get(name)
        # A crontab added without its expression in PROBE_CRON_SCHEDULES is shown as Celery prints it.
        return _describe_cron(expression) if expression else str(schedule)
    if isinstance(schedule, interval_schedule):
        schedule = schedule.run_every
    if isinstance(schedule, int | float):
        schedule = dt.timedelta(seconds=schedule)
    if isinstance(schedule, dt.timedelta):
        seconds = schedule.total_seconds()
        if seconds >= 3600 and seconds % 3600 == 0:
            hours = int(seconds // 3600)
            return f"Every {hours} hour{'s' if hours != 1 else ''}"
        if seconds >= 60 and seconds % 60 == 0:
            return f"Every {int(seconds // 60)} minutes"
        return f"Every {seconds:g} seconds"
    return str(schedule)


def _describe_arguments(entry: Mapping) -> str:
    parts = [repr(arg) for arg in entry.get("args", ()) or ()]
    parts += [f"{key}={value!r}" for key, value in (entry.get("kwargs") or {}).items()]
    return ", ".join(parts)


def probe_schedule() -> list[ScheduleEntry]:
    """The beat entries that run probes, as configured in settings.CELERY_BEAT_SCHEDULE."""
    entries = []
    for name, entry in (getattr(settings, "CELERY_BEAT_SCHEDULE", None) or {}).items():
        task = str(entry.get("task", ""))
        if not task.startswith("probes."):
            continue
        entries.append(ScheduleEntry(name, task, _describe_schedule(name, entry.get("schedule")), _describe_arguments(entry)))
    return entries


def buffered_share_percent() -> float:
    """The threshold the probe client flags a buffered stream with, in percent, for the methodology page to quote."""
    return stream_analysis.BUFFERED_SHARE * 100


@dataclass(frozen=True)
class WorkloadPlan:
    workload: str
    input_tokens: int | None
    max_output_tokens: int | None
    concurrencies: tuple[int, ...]


def probe_workloads() -> list[WorkloadPlan]:
    """The workloads this deployment schedules, from the probe settings (names, output lengths, parallel test)."""
    single_stream = list(getattr(settings, "PROBE_SCHEDULED_WORKLOADS", None) or [])
    parallel_workload = getattr(settings, "PROBE_PARALLEL_WORKLOAD", None)
    parallel_concurrency = getattr(settings, "PROBE_PARALLEL_CONCURRENCY", None)
    output_override = getattr(settings, "PROBE_MAX_OUTPUT_TOKENS", None)
    output_tokens = getattr(settings, "PROBE_WORKLOAD_MAX_TOKENS", None) or {}
    names = single_stream + ([parallel_workload] if parallel_workload not in single_stream else [])
    plans = []
    for workload in filter(None, names):
        concurrencies = [1] if workload in single_stream else []
        if workload == parallel_workload and parallel_concurrency:
            concurrencies.append(int(parallel_concurrency))
        plans.append(
            WorkloadPlan(
                workload=workload,
                input_tokens=WORKLOADS.get(workload) or workload_input_tokens(workload),
                max_output_tokens=output_override or output_tokens.get(workload),
                concurrencies=tuple(concurrencies),
            )
        )
    return plans
