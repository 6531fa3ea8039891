"""Reads of the benchmark lab: sweep runs for lists, one run with everything its page shows, the runs whose
curves may share its chart (same hardware, same workload, same load mode: never anything else), and the
target's history split where the server-reported engine or model changed. Each at a fixed number of queries."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db.models import Prefetch, QuerySet

from catalog.models import PriceItem, ReportedFigure, Source
from lab.models import SweepLevel, SweepRun

CHART_SERIES_LIMIT = 8
HISTORY_LIMIT = 20


def sweep_run_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[SweepRun]:
    """Runs matching validated filters; the caller orders and pages them by primary key (keyset)."""
    filters = filters or {}
    queryset = SweepRun.objects.lab().for_listing()
    for name, lookup in (
        ("target", "target__slug"),
        ("tool", "tool__slug"),
        ("hardware", "hardware__slug"),
        ("kind", "kind"),
        ("status", "status"),
        ("source_tool", "source_tool"),
        ("workload_key", "workload_key"),
    ):
        if filters.get(name):
            queryset = queryset.filter(**{lookup: filters[name]})
    return queryset


def sweep_run_get(*, pk: int) -> SweepRun:
    """One run with its levels; raises SweepRun.DoesNotExist."""
    return (
        SweepRun.objects.lab().for_listing()
        .prefetch_related(Prefetch("levels", queryset=SweepLevel.objects.figures().order_by("level")))
        .get(pk=pk)
    )


def sweep_level_list(*, run: SweepRun) -> QuerySet[SweepLevel]:
    return SweepLevel.objects.figures().filter(run=run).order_by("level")


def sweep_request_list(*, run: SweepRun) -> list[dict]:
    """Every request a run's levels kept, level by level in the order they were sent, each row with its level."""
    rows = []
    for mode, level, records in SweepLevel.objects.filter(run=run).order_by("level").values_list(
        "mode", "level", "request_records"
    ):
        rows.extend({"mode": mode, "level": level, **record} for record in records)
    return rows


def series_label(run: SweepRun) -> str:
    """What names a curve: the engine (or target), its version where known, and who measured it."""
    name = run.target.name if run.target else (
        run.tool.name if run.tool else (run.card or {}).get("engine_reported") or "unknown engine"
    )
    version = run.engine_version or (run.card or {}).get("engine_version") or ""
    label = f"{name} {version}".strip()
    if run.is_imported:
        label += f" ({(run.card or {}).get('tool_label') or run.source_tool})"
    return f"{label} · run {run.pk}"


@dataclass
class ChartSeries:
    run_id: int
    label: str
    points: list[dict] = field(default_factory=list)


@dataclass
class SweepChart:
    """Curves that may be drawn together: one series per run, all on ``hardware`` × ``workload`` × ``mode``."""

    mode: str
    hardware: str
    workload: str
    series: list[ChartSeries] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _points(levels) -> list[dict]:
    return [
        {
            "level": level.level,
            "output_tps": level.output_tps,
            "ttft_p50": (level.ttft_ms or {}).get("p50"),
            "ttft_p99": (level.ttft_ms or {}).get("p99"),
            "tpot_p50": (level.tpot_ms or {}).get("p50"),
            "goodput_rps": level.goodput_rps,
        }
        for level in levels
    ]


def _mode(run: SweepRun) -> str:
    levels = list(run.levels.all())
    return levels[0].mode if levels else (run.plan or {}).get("mode", "concurrency")


def sweep_chart(*, run: SweepRun) -> SweepChart:
    """The run's curve and those of the latest other runs on the same hardware and workload key, same mode.

    Runs without hardware are drawn alone: nothing says what they ran on, so nothing may share their chart.
    Two queries whatever the number of runs (runs, then their levels)."""
    hardware = f"{run.hardware.name} × {run.hardware_count}" if run.hardware else "hardware not stated"
    chart = SweepChart(mode=_mode(run), hardware=hardware, workload=run.workload_name or "workload")
    chart.series.append(ChartSeries(run.pk, series_label(run), _points(run.levels.all())))
    if run.hardware_id is None or not run.workload_key or run.kind != SweepRun.Kind.SWEEP:
        return chart
    others = (
        SweepRun.objects.lab().for_listing()
        .filter(
            kind=SweepRun.Kind.SWEEP,
            hardware_id=run.hardware_id,
            hardware_count=run.hardware_count,
            workload_key=run.workload_key,
            status__in=[SweepRun.Status.SUCCEEDED, SweepRun.Status.PARTIAL, SweepRun.Status.IMPORTED],
        )
        .exclude(pk=run.pk)
        .prefetch_related(Prefetch("levels", queryset=SweepLevel.objects.figures().order_by("level")))
        .order_by("-queued_at", "-id")[: CHART_SERIES_LIMIT * 3]
    )
    seen = {(run.target_id, run.tool_id, run.source_tool)}
    for other in others:
        key = (other.target_id, other.tool_id, other.source_tool)
        levels = list(other.levels.all())
        if key in seen or not levels or levels[0].mode != chart.mode:
            continue
        seen.add(key)
        chart.series.append(ChartSeries(other.pk, series_label(other), _points(levels)))
        if len(chart.series) >= CHART_SERIES_LIMIT:
            break
    return chart


@dataclass
class HistoryEntry:
    run: SweepRun
    changes: dict
    knee: dict | None


def sweep_history(*, run: SweepRun) -> list[HistoryEntry]:
    """The target's runs of the same kind, newest first; an entry with ``changes`` starts a new epoch (the
    engine or model the server reported changed: "changed on DATE, re-measured")."""
    if run.target_id is None:
        return []
    runs = (
        SweepRun.objects.lab().finished()
        .filter(target_id=run.target_id, kind=run.kind)
        .only("pk", "queued_at", "finished_at", "engine_version", "model_fingerprint", "changes", "results",
              "status", "source_tool")
        .order_by("-queued_at", "-id")[:HISTORY_LIMIT]
    )
    return [HistoryEntry(run=r, changes=r.changes or {}, knee=(r.results or {}).get("knee")) for r in runs]


def source_links() -> dict[str, list[str]]:
    """Every link the site cites as a source, each with what cites it: catalog sources (and the prices they state),
    reported figures and published benchmarks. Four queries, whatever the number of rows."""
    cited: dict[str, list[str]] = {}
    for key, url in Source.objects.exclude(url="").order_by("key").values_list("key", "url"):
        cited.setdefault(url, []).append(f"source {key}")
    prices = PriceItem.objects.exclude(source__url="").order_by("source__url", "tool__slug", "item")
    for url, tool, item in prices.values_list("source__url", "tool__slug", "item"):
        cited.setdefault(url, []).append(f"price {tool}: {item}")
    for key, url in ReportedFigure.objects.order_by("key").values_list("key", "url"):
        cited.setdefault(url, []).append(f"reported figure {key}")
    published = SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED).exclude(url="").order_by("key")
    for key, url in published.values_list("key", "url"):
        cited.setdefault(url, []).append(f"published benchmark {key}")
    return cited
