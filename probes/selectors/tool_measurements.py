"""Read model of the measurements section of a tool's catalog page: every probe target of the tool, its figures
per workload and its compat outcomes."""
from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db.models import F
from django.utils import timezone

from catalog.models import Tool
from probes.models import CompatStatus, MeasurementSummary, ProbeTarget
from probes.selectors.cells import MetricFigures, WorkloadOption, age_since, stale_after
from scoring.vocabulary import HEADLINE_METRICS, MEASURED_OUTCOMES, MEASURED_PROBLEMS, Metric


@dataclass
class ToolWorkloadFigures:
    option: WorkloadOption
    summary: MeasurementSummary
    figures: list[MetricFigures]
    age: dt.timedelta | None
    stale: bool

    @property
    def success_percent(self) -> float | None:
        rate = self.summary.success_rate_72h
        return None if rate is None else rate * 100


@dataclass
class ToolTargetMeasurements:
    target: ProbeTarget
    configuration: str
    workloads: list[ToolWorkloadFigures]
    compat_counts: list[tuple[str, str, int]]
    compat_problems: list[CompatStatus]


@dataclass
class ToolMeasurements:
    tool: Tool
    targets: list[ToolTargetMeasurements]
    dashboard_url_name: str
    now: dt.datetime
    metrics: tuple[Metric, ...] = field(default=HEADLINE_METRICS)

    @property
    def has_data(self) -> bool:
        return any(entry.workloads or entry.compat_counts for entry in self.targets)


def tool_measurements(*, tool: Tool, now: dt.datetime | None = None) -> ToolMeasurements:
    """Measured figures of every probe target of one tool, for its catalog page. Three queries."""
    now = now or timezone.now()
    targets = list(ProbeTarget.objects.filter(tool=tool).order_by("name"))
    summaries: dict[int, list[MeasurementSummary]] = defaultdict(list)
    tool_summaries = MeasurementSummary.objects.filter(target__tool=tool).annotate(
        last_run_region=F("last_run__region")
    )
    for summary in tool_summaries:
        summaries[summary.target_id].append(summary)
    statuses: dict[int, list[CompatStatus]] = defaultdict(list)
    for status in CompatStatus.objects.filter(target__tool=tool).order_by("check_name"):
        statuses[status.target_id].append(status)

    entries = []
    for target in targets:
        if not target.enabled and not summaries.get(target.pk) and not statuses.get(target.pk):
            continue
        workloads = []
        for summary in summaries.get(target.pk, []):
            metrics = summary.metrics if isinstance(summary.metrics, Mapping) else {}
            age = age_since(summary.last_run_at, now)
            workloads.append(
                ToolWorkloadFigures(
                    option=WorkloadOption(summary.workload, summary.concurrency),
                    summary=summary,
                    figures=[MetricFigures.from_json(metric, metrics.get(metric.key)) for metric in HEADLINE_METRICS],
                    age=age,
                    stale=age is not None and age > stale_after(summary.concurrency),
                )
            )
        workloads.sort(key=lambda item: item.option.sort_key)
        target_statuses = statuses.get(target.pk, [])
        counts = []
        for outcome in MEASURED_OUTCOMES:
            count = sum(1 for status in target_statuses if status.outcome == outcome.value)
            if count:
                counts.append((outcome.value, f"{outcome.symbol} {outcome.label}", count))
        problems = [status for status in target_statuses if status.outcome in MEASURED_PROBLEMS]
        entries.append(ToolTargetMeasurements(target, target.configuration, workloads, counts, problems))
    url_name = "probes:providers" if tool.kind == Tool.Kind.PROVIDER else "probes:engines"
    return ToolMeasurements(tool=tool, targets=entries, dashboard_url_name=url_name, now=now)
