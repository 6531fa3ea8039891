"""Engines compared on evidence: the curves of published runs, and of runs measured here, grouped so that only
like is compared with like.

A comparison holds the runs of one model in one weight format on one hardware spec and count, under one workload
(the same requests: dataset and lengths, and whether latency was measured at all). Nothing outside a comparison is
ever drawn or ranked with it; a page shows each comparison on its own. Every series names its engine and version,
who published it (or that it was measured here), the page and the dates, and whether a newer release of the
engine is known.

Two throughput figures are kept apart: output tok/s per GPU (the publisher's total divided by the GPU count, or the
per-GPU figure a table states) and tok/s per user (1000 / the median TPOT, else the mean): the two axes of the
throughput-versus-interactivity curves that engine dashboards draw.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Prefetch, Q, QuerySet
from packaging.version import InvalidVersion, Version

from lab.loading import workload_identity
from lab.models import SOURCE_TOOL_LABELS, LoadMode, SweepLevel, SweepRun
from lab.services.plan import workload_key
from scoring.vocabulary import model_slug

MEASURED_HERE = "Inference Atlas (measured here)"
UNDATED = "The page states no date"


@dataclass(frozen=True)
class Point:
    mode: str
    level: float
    output_tps: float | None
    output_tps_per_gpu: float | None
    total_tps: float | None
    tps_per_user: float | None
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    request_rate: float | None

    @property
    def load(self) -> str:
        """The load in words: how many requests were in flight, or how they were sent."""
        if self.mode == "offline":
            return f"offline batch of {self.level:,.0f} requests" if self.level else "offline batch"
        if self.mode == "burst":
            return f"{self.level:,.0f} prompts at once"
        if self.mode == "rate":
            return f"{self.level:g} req/s"
        return f"{self.level:,.0f} concurrent"


@dataclass
class Series:
    run_id: int
    engine: str
    engine_slug: str
    engine_version: str
    newer_release: str
    origin: str
    publisher: str
    url: str
    observed_on: str | None
    verified_on: str | None
    measured_with: str
    configuration: str
    workload_description: str
    notes: str
    points: list[Point]
    label: str = ""
    # The flags that set this series apart from the same engine's other configurations on the page, if any.
    setup: str = ""

    @property
    def is_published(self) -> bool:
        return self.origin == SweepRun.Origin.PUBLISHED

    @property
    def undated(self) -> bool:
        """The page gives no date: its observed date is the day it was read (lab/loading.py notes it so)."""
        return self.notes.startswith(UNDATED)

    @property
    def best(self) -> Point | None:
        figures = [point for point in self.points if point.output_tps_per_gpu is not None]
        return max(figures, key=lambda point: point.output_tps_per_gpu) if figures else None


@dataclass
class Comparison:
    """The runs of one model, weight format, hardware and count under one workload."""

    model_slug: str
    model_name: str
    weight_format: str
    hardware_slug: str
    hardware_name: str
    hardware_count: int
    workload: str
    mode: str
    series: list[Series] = field(default_factory=list)

    @property
    def engines(self) -> list[str]:
        return sorted({series.engine for series in self.series})

    @property
    def chart_axis(self) -> str | None:
        """What the chart's x-axis can be for every series: tok/s per user, else TTFT; None: no chart."""
        points = [point for series in self.series for point in series.points]
        if points and all(point.tps_per_user is not None for point in points):
            return "tps_per_user"
        if points and all(point.ttft_p50_ms is not None for point in points):
            return "ttft_p50_ms"
        return None

    @property
    def dom_id(self) -> str:
        """An id for the comparison's chart data, unique on a page."""
        raw = f"{self.model_slug}-{self.hardware_slug}-{self.hardware_count}-{self.weight_format}-{self.workload}"
        return "evidence-" + "".join(char if char.isalnum() else "-" for char in raw.lower())

    @property
    def chart_data(self) -> dict:
        """What the chart script draws: one series per engine (and version, publisher, configuration)."""
        axis = self.chart_axis
        return {
            "x": axis,
            "x_label": "Tokens/s per user (1000 / TPOT)" if axis == "tps_per_user" else "TTFT p50 (ms)",
            "y_label": "Output tokens/s per GPU",
            "series": [
                {"label": series.label, "measured_here": not series.is_published,
                 "points": [{"x": getattr(point, axis), "y": point.output_tps_per_gpu, "load": point.load}
                            for point in series.points
                            if point.output_tps_per_gpu is not None and getattr(point, axis) is not None]}
                for series in self.series
            ] if axis else [],
        }


def _median_or_mean(figures: dict) -> float | None:
    value = figures.get("p50", figures.get("mean"))
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _point(level: SweepLevel, count: int) -> Point:
    tpot = _median_or_mean(level.tpot_ms or {})
    per_gpu = level.output_tps_per_gpu
    if per_gpu is None and level.output_tps is not None:
        per_gpu = level.output_tps / count
    ttft = level.ttft_ms or {}
    return Point(
        mode=level.mode, level=level.level, output_tps=level.output_tps, output_tps_per_gpu=per_gpu,
        total_tps=level.total_tps, tps_per_user=1000.0 / tpot if tpot else None,
        ttft_p50_ms=_median_or_mean(ttft), ttft_p99_ms=ttft.get("p99"), tpot_p50_ms=tpot,
        request_rate=level.request_rate,
    )


def _version(text: str) -> Version | None:
    try:
        return Version(text.strip().lstrip("v"))
    except InvalidVersion:
        return None


def newer_release(run: SweepRun) -> str:
    """The engine's newest release a source states, when it is newer than the version this run measured."""
    tool = run.tool
    if tool is None or not tool.latest_version or not run.engine_version:
        return ""
    measured, latest = _version(run.engine_version), _version(tool.latest_version)
    if measured is None or latest is None or latest <= measured:
        return ""
    released = f", released {tool.latest_version_released_on:%d %b %Y}," if tool.latest_version_released_on else ""
    return f"{tool.name} {tool.latest_version}{released} is newer than the {run.engine_version} measured"


def series_of(run: SweepRun) -> Series:
    published = run.origin == SweepRun.Origin.PUBLISHED
    return Series(
        run_id=run.pk, engine=run.tool.name if run.tool else "engine not stated",
        engine_slug=run.tool.slug if run.tool else "", engine_version=run.engine_version,
        newer_release=newer_release(run), origin=run.origin,
        publisher=run.publisher if published else MEASURED_HERE, url=run.url,
        observed_on=run.observed_on.isoformat() if run.observed_on else (
            run.finished_at.date().isoformat() if run.finished_at else None),
        verified_on=run.verified_on.isoformat() if run.verified_on else None,
        measured_with=SOURCE_TOOL_LABELS.get(run.source_tool, run.source_tool),
        configuration=run.flags, workload_description=run.workload_description or run.workload_name,
        notes=run.notes, points=[_point(level, run.hardware_count) for level in run.levels.all()],
    )


def _merge_and_label(comparison: Comparison) -> None:
    """One line per engine, version, publisher and configuration (a publisher's extra load point of the same setup
    joins its line); a configuration is named by the flags that set it apart from the same engine's others."""
    merged: dict[tuple, Series] = {}
    for series in comparison.series:
        identity = (series.engine, series.engine_version, series.publisher, series.configuration)
        if identity in merged:
            merged[identity].points = sorted([*merged[identity].points, *series.points],
                                             key=lambda point: (point.mode, point.level))
        else:
            merged[identity] = series
    comparison.series = list(merged.values())
    flags: dict[tuple, list[set[str]]] = {}
    for series in comparison.series:
        flags.setdefault((series.engine, series.engine_version, series.publisher), []).append(
            set(series.configuration.split()))
    for series in comparison.series:
        version = series.engine_version or "version not stated"
        configurations = flags[(series.engine, series.engine_version, series.publisher)]
        if len(configurations) > 1:
            shared = set.intersection(*configurations)
            series.setup = " ".join(flag for flag in series.configuration.split() if flag not in shared) or "defaults"
        series.label = " · ".join(part for part in (f"{series.engine} {version}", series.publisher, series.setup)
                                  if part)


def _runs() -> QuerySet[SweepRun]:
    return SweepRun.objects.select_related("tool", "hardware", "model", "target").prefetch_related(
        Prefetch("levels", queryset=SweepLevel.objects.figures().order_by("level"))
    )


def measured_identity(run: SweepRun) -> tuple[str, str] | None:
    """(model slug, workload key) under which a run measured here compares with published runs: fixed input and
    output lengths of synthetic prompts compare with a publisher's random dataset of the same lengths."""
    workload = run.workload or {}
    lengths = [(workload.get(part) or {}).get("value") if (workload.get(part) or {}).get("kind") == "fixed" else None
               for part in ("input", "output")]
    model_id = (run.card or {}).get("model_id") or (run.target.model_id if run.target else "")
    if None in lengths or not model_id:
        return None
    plan = run.plan or {}
    mode = LoadMode.REQUEST_RATE if plan.get("mode") == "rate" else LoadMode.CONCURRENCY
    identity = workload_identity(mode=mode, dataset="random", input_tokens=lengths[0], output_tokens=lengths[1],
                                 num_prompts=plan.get("requests_per_level"))
    return model_slug(model_id), workload_key({"identity": identity})


def comparisons(*, model: str | None = None, hardware: Iterable[str] | None = None,
                engines_at_least: int = 1) -> list[Comparison]:
    """Every comparison (of one model, optionally on some hardware), published series first then measured ones,
    biggest comparisons first. `engines_at_least` 2 keeps the ones that compare engines."""
    published = _runs().filter(origin=SweepRun.Origin.PUBLISHED)
    if model:
        published = published.filter(model__slug=model)
    if hardware is not None:
        published = published.filter(hardware__slug__in=list(hardware))
    groups: dict[tuple, Comparison] = {}
    for run in published:
        identity = (run.model.slug, run.weight_format.lower(), run.hardware.slug, run.hardware_count, run.workload_key)
        comparison = groups.get(identity)
        if comparison is None:
            workload = run.workload or {}
            groups[identity] = comparison = Comparison(
                model_slug=run.model.slug, model_name=run.model.name, weight_format=run.weight_format,
                hardware_slug=run.hardware.slug, hardware_name=run.hardware.name, hardware_count=run.hardware_count,
                workload=_workload_name(workload), mode=run.load_mode,
            )
        comparison.series.append(series_of(run))
    for run, identity in _measured_candidates(groups):
        groups[identity].series.append(series_of(run))
    kept = [group for group in groups.values() if len(group.engines) >= engines_at_least]
    for group in kept:
        group.series.sort(key=lambda series: (not series.is_published, series.engine, series.engine_version,
                                              len(series.configuration)))
        _merge_and_label(group)
    return sorted(kept, key=lambda group: (-len(group.engines), group.model_name, group.hardware_name,
                                           group.hardware_count, group.workload))


def _workload_name(workload: dict) -> str:
    dataset = {"sharegpt": "ShareGPT", "random": "random prompts", "sonnet": "Sonnet"}.get(
        workload.get("dataset"), str(workload.get("dataset")))
    lengths = ""
    if workload.get("input_tokens") or workload.get("output_tokens"):
        lengths = f", {workload.get('input_tokens') or '?'} in / {workload.get('output_tokens') or '?'} out"
    return f"{dataset}{lengths}"


def _measured_candidates(groups: dict[tuple, Comparison]) -> list[tuple[SweepRun, tuple]]:
    """Runs measured here that fall in one of `groups`: same model, format, hardware, count and workload."""
    if not groups:
        return []
    hardware = {identity[2] for identity in groups}
    found = []
    measured = _runs().filter(origin=SweepRun.Origin.MEASURED, kind=SweepRun.Kind.SWEEP,
                              hardware__slug__in=hardware).filter(Q(status__in=SweepRun.FINISHED_STATUSES))
    for run in measured:
        matched = measured_identity(run)
        if matched is None:
            continue
        model, key = matched
        fmt = ((run.card or {}).get("quantization") or (run.target.quantization if run.target else "")).lower()
        identity = (model, fmt, run.hardware.slug, run.hardware_count, key)
        if identity in groups:
            found.append((run, identity))
    return found


@dataclass(frozen=True)
class Standing:
    """Where a run measured here sits against one published series at one load both ran."""

    load: str
    percent: float
    engine: str
    engine_version: str
    publisher: str
    url: str
    observed_on: str | None
    hardware: str

    @property
    def sentence(self) -> str:
        direction = "below" if self.percent < 0 else "above"
        version = self.engine_version or "(version not stated)"
        return (f"at {self.load}: {abs(self.percent):.0f}% {direction} the published {self.engine} {version} "
                f"output tok/s per GPU on the same {self.hardware}")


@dataclass(frozen=True)
class RunPosition:
    comparison: Comparison
    standings: list[Standing]


def run_position(run: SweepRun) -> RunPosition | None:
    """The comparison a sweep measured here belongs to (same model, format, hardware, count and workload as
    published runs), and at each load it shares with a published series, how far its output per GPU is from it."""
    if run.origin != SweepRun.Origin.MEASURED or run.kind != SweepRun.Kind.SWEEP or run.hardware_id is None:
        return None
    matched = measured_identity(run)
    if matched is None:
        return None
    for comparison in comparisons(model=matched[0], hardware=[run.hardware.slug]):
        own = next((series for series in comparison.series if series.run_id == run.pk), None)
        if own is None:
            continue
        standings = []
        for series in comparison.series:
            if not series.is_published:
                continue
            published = {(point.mode, point.level): point for point in series.points}
            for point in own.points:
                other = published.get((point.mode, point.level))
                if other and other.output_tps_per_gpu and point.output_tps_per_gpu is not None:
                    standings.append(Standing(
                        load=point.load, percent=(point.output_tps_per_gpu / other.output_tps_per_gpu - 1) * 100,
                        engine=series.engine, engine_version=series.engine_version, publisher=series.publisher,
                        url=series.url, observed_on=series.observed_on, hardware=comparison.hardware_name))
        return RunPosition(comparison, standings)
    return None


@dataclass(frozen=True)
class MatrixEngine:
    engine: str
    version: str
    best_per_gpu: float | None
    best_comparison: str
    newer_release: str


@dataclass
class MatrixRow:
    model_slug: str
    model_name: str
    hardware_slug: str
    hardware_name: str
    engines: dict[str, MatrixEngine] = field(default_factory=dict)
    publishers: set[str] = field(default_factory=set)
    newest: str = ""
    comparisons: int = 0

    @property
    def compares_engines(self) -> bool:
        return len(self.engines) >= 2


def evidence_matrix() -> list[MatrixRow]:
    """Model × hardware: which engines have evidence, each engine's best output tok/s per GPU with the comparison
    it comes from (never ranked across comparisons), the publishers and the newest evidence."""
    rows: dict[tuple[str, str], MatrixRow] = {}
    for comparison in comparisons():
        row = rows.setdefault((comparison.model_slug, comparison.hardware_slug), MatrixRow(
            comparison.model_slug, comparison.model_name, comparison.hardware_slug, comparison.hardware_name))
        row.comparisons += 1
        for series in comparison.series:
            row.publishers.add(series.publisher)
            row.newest = max(row.newest, series.observed_on or "")
            best = series.best
            known = row.engines.get(series.engine)
            if best is not None and (known is None or (known.best_per_gpu or 0) < best.output_tps_per_gpu):
                where = (f"{comparison.hardware_count}× · {comparison.weight_format} · {comparison.workload} · "
                         f"{best.load}")
                row.engines[series.engine] = MatrixEngine(series.engine, series.engine_version,
                                                          best.output_tps_per_gpu, where, series.newer_release)
            elif known is None:
                row.engines[series.engine] = MatrixEngine(series.engine, series.engine_version, None, "",
                                                          series.newer_release)
    return sorted(rows.values(), key=lambda row: (-len(row.engines), row.model_name, row.hardware_name))


def published_runs(*, model: str = "", hardware: str = "", engine: str = "", publisher: str = "",
                   dataset: str = "") -> QuerySet[SweepRun]:
    """Published runs with their levels, filtered by slugs, publisher and dataset, in a stable order."""
    runs = _runs().filter(origin=SweepRun.Origin.PUBLISHED)
    for value, lookup in ((model, "model__slug"), (hardware, "hardware__slug"), (engine, "tool__slug"),
                          (publisher, "publisher__iexact"), (dataset, "workload__dataset")):
        if value:
            runs = runs.filter(**{lookup: value})
    return runs.order_by("model__slug", "hardware__slug", "hardware_count", "tool__slug", "key")
