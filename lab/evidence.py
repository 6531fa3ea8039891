"""Engines compared on evidence: the series of published runs, and of runs measured here, grouped so that only
like is compared with like.

A comparison holds the runs of one model in one weight format on one hardware spec and count, under one workload:
the same requests (dataset, lengths and prompt count) sent the same way (the load mode: N concurrent, a request
rate, every prompt at once, or an offline batch). Nothing outside a comparison is ever drawn or ranked with it, and a
chart line joins only the points of one series' own sweep. Every series names its engine and version, who published
it (or that it was measured here), the page and the dates, and whether a newer release of the engine is known.

A comparison ranks its series by one figure, at the highest load all of them ran: the publisher's headline when
every series shares it (GPUStack orders engines by total token throughput), else output tok/s per GPU (the
publisher's total divided by the GPU count, or the per-GPU figure a table states). The matrix, the comparison pages
and the recommendation answers all read that one ranking. Tok/s per user is 1000 / the median TPOT, else the mean.

Setup differences inside a comparison are flagged per series: the parallelism, DP attention, expert parallel and
speculative decoding a serving command states (lab/setups.py) where not every series shares them, and output
lengths left to the engine when the series generated different token totals.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from django.db.models import Prefetch, Q, QuerySet
from packaging.version import InvalidVersion, Version

from lab.loading import workload_identity
from lab.models import SOURCE_TOOL_LABELS, LoadMode, SweepLevel, SweepRun
from lab.services.plan import workload_key
from lab.setups import differences, setup_facts
from scoring.vocabulary import model_slug

MEASURED_HERE = "Inference Atlas (measured here)"
# What the publication date of a published series is (lab/loading.py DATED_BY): a short label and its meaning.
DATE_SOURCES = {"page": ("page date", "the date the page states"),
                "commit": ("commit date", "the date of the commit that added these figures to the page"),
                "dataset": ("data commit date", "the date of the commit that added the data file")}
PER_GPU = "output_tps_per_gpu"
TOTAL = "total_tps"
FIGURE_NAMES = {PER_GPU: "output tok/s per GPU", TOTAL: "total tok/s (input + output, all GPUs)"}
# The figure a publisher ranks engines by, where it is not output tok/s per GPU. GPUStack's pages order engines by
# total token throughput, e.g. "vLLM (6095.37 tok/s) > TensorRT-LLM (2139.54 tok/s) > SGLang(1814.32 tok/s)", the
# "Total Token throughput" line of each printed block.
PUBLISHER_HEADLINES = {"GPUStack": TOTAL}
# Mean output lengths further apart than this mean the engines did not produce the same outputs.
OUTPUT_SPREAD = 0.01
DATASETS = {"sharegpt": "ShareGPT", "random": "random prompts", "sonnet": "Sonnet"}


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
    # Mean output tokens per request: output tok/s over requests/s, both as the publisher printed them.
    output_per_request: float | None = None

    @property
    def load(self) -> str:
        """The load in words: how many requests were in flight, or how they were sent."""
        if self.mode == "offline":
            return f"offline batch of {self.level:,.0f} requests" if self.level else "offline batch"
        if self.mode == "burst":
            return f"{self.level:,.0f} prompt{'' if self.level == 1 else 's'} at once"
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
    mode: str = LoadMode.CONCURRENCY
    # Parallelism and decoding the serving command states (lab/setups.py).
    facts: dict[str, str] = field(default_factory=dict)
    label: str = ""
    # The options that set this series apart from the same engine's other configurations in its comparison.
    setup: str = ""
    # Where a published series' observed_on comes from: page, commit, dataset or unknown (empty when measured here).
    dated_by: str = ""
    # What differs from the other series of the comparison: parallelism, DP attention, EP, speculative decoding,
    # an output length left to the engine.
    flags: list[str] = field(default_factory=list)

    @property
    def is_published(self) -> bool:
        return self.origin == SweepRun.Origin.PUBLISHED

    @property
    def date_source(self) -> tuple[str, str]:
        """What the publication date is (label, meaning); empty when it is unknown or the series was measured here."""
        return DATE_SOURCES.get(self.dated_by, ("", ""))

    @property
    def headline(self) -> str:
        """The figure the publisher ranks by (a key of FIGURE_NAMES)."""
        return PUBLISHER_HEADLINES.get(self.publisher, PER_GPU) if self.is_published else PER_GPU

    def best(self, figure: str = PER_GPU) -> Point | None:
        stated = [point for point in self.points if getattr(point, figure) is not None]
        return max(stated, key=lambda point: getattr(point, figure)) if stated else None


@dataclass(frozen=True)
class Ranked:
    """One series' point at the load a comparison ranks at (or at its own best, when unranked)."""

    series: Series
    point: Point
    figure: str

    @property
    def value(self) -> float:
        return getattr(self.point, self.figure)


@dataclass
class Comparison:
    """The runs of one model, weight format, hardware and count under one workload and load mode. What it derives
    from its series is computed once, on first use, after comparisons() has gathered them all."""

    model_slug: str
    model_name: str
    weight_format: str
    hardware_slug: str
    hardware_name: str
    hardware_count: int
    workload: str
    mode: str
    series: list[Series] = field(default_factory=list)

    @cached_property
    def engines(self) -> list[str]:
        return sorted({series.engine for series in self.series})

    @cached_property
    def publishers(self) -> list[str]:
        return sorted({series.publisher for series in self.series})

    @property
    def newest(self) -> str:
        """The latest date a publisher ran or published a series of this comparison (observed, not read)."""
        return max((series.observed_on or "" for series in self.series), default="")

    @cached_property
    def load(self) -> str:
        """The load of every point, in words, or the range a sweep covers."""
        points = sorted({(point.mode, point.level): point for series in self.series
                         for point in series.points}.values(), key=lambda point: point.level)
        if not points:
            return ""
        if len(points) == 1:
            return points[0].load
        low = f"{points[0].level:g}" if points[0].mode == "rate" else f"{points[0].level:,.0f}"
        return f"{low} to {points[-1].load}"

    @property
    def title(self) -> str:
        return f"{self.workload} · {self.load}" if self.load else self.workload

    @cached_property
    def rank_by(self) -> str:
        """The one figure this comparison ranks by: the publishers' shared headline, else output tok/s per GPU."""
        headlines = {series.headline for series in self.series}
        return headlines.pop() if len(headlines) == 1 else PER_GPU

    @property
    def rank_by_name(self) -> str:
        return FIGURE_NAMES[self.rank_by]

    @property
    def shows_total(self) -> bool:
        return self.rank_by == TOTAL

    @cached_property
    def ranking(self) -> list[Ranked]:
        """Every series stating the ranking figure, best first, at the highest load all of them ran; empty when
        fewer than two series state it or they share no load (then nothing is ranked)."""
        figure = self.rank_by
        stated = [series for series in self.series if series.best(figure) is not None]
        loads = [{(point.mode, point.level) for point in series.points if getattr(point, figure) is not None}
                 for series in stated]
        shared = set.intersection(*loads) if len(stated) >= 2 else set()
        if not shared:
            return []
        load = max(shared, key=lambda each: each[1])
        ranked = [Ranked(series, point, figure) for series in stated for point in series.points
                  if (point.mode, point.level) == load]
        return sorted(ranked, key=lambda entry: -entry.value)

    @property
    def table(self) -> list[tuple[int | None, Series]]:
        """(place, series) in ranking order, then the series not ranked (place None)."""
        ranked = [entry.series for entry in self.ranking]
        return [*enumerate(ranked, start=1), *((None, series) for series in self.series if series not in ranked)]

    @property
    def ranked_load(self) -> str:
        return self.ranking[0].point.load if self.ranking else ""

    @cached_property
    def by_engine(self) -> list[Ranked]:
        """Each engine once, best first by the ranking figure: at its baseline, the configuration with the fewest
        serving options (the engine as the publisher first ran it; tuned configurations are on the comparison's
        page). Unranked, each engine at its baseline's best point, by engine name."""
        baseline: dict[str, Series] = {}
        for series in self.series:
            known = baseline.get(series.engine)
            if known is None or len(_options(series.configuration)) < len(_options(known.configuration)):
                baseline[series.engine] = series
        if self.ranking:
            return [entry for entry in self.ranking if baseline[entry.series.engine] is entry.series]
        found = []
        for engine in sorted(baseline):
            point = baseline[engine].best(self.rank_by)
            if point is not None:
                found.append(Ranked(baseline[engine], point, self.rank_by))
        return found

    @property
    def chart_axis(self) -> str | None:
        """What the chart's x-axis can be for every series: tok/s per user, else TTFT; None: no chart (no series
        is a sweep of several loads, or a figure is missing)."""
        points = [point for series in self.series for point in series.points]
        if not any(len(series.points) > 1 for series in self.series):
            return None
        if points and all(point.tps_per_user is not None for point in points):
            return "tps_per_user"
        if points and all(point.ttft_p50_ms is not None for point in points):
            return "ttft_p50_ms"
        return None

    @property
    def dom_id(self) -> str:
        """An id for the comparison's chart data, unique on a page."""
        raw = (f"{self.model_slug}-{self.hardware_slug}-{self.hardware_count}-{self.weight_format}-{self.mode}-"
               f"{self.title}")
        return "evidence-" + "".join(char if char.isalnum() else "-" for char in raw.lower())

    @property
    def chart_data(self) -> dict:
        """What the chart script draws: one line per series, joining only that series' own points."""
        axis = self.chart_axis
        per_user = "Tokens/s per user (1000 / TPOT)"
        if self.mode == LoadMode.BURST:
            per_user += ", not counting the wait in the queue"
        return {
            "x": axis,
            "x_label": per_user if axis == "tps_per_user" else "TTFT p50 (ms)",
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
    generated = level.output_tps / level.request_rate if level.output_tps and level.request_rate else None
    return Point(
        mode=level.mode, level=level.level, output_tps=level.output_tps, output_tps_per_gpu=per_gpu,
        total_tps=level.total_tps, tps_per_user=1000.0 / tpot if tpot else None,
        ttft_p50_ms=_median_or_mean(ttft), ttft_p99_ms=ttft.get("p99"), tpot_p50_ms=tpot,
        request_rate=level.request_rate, output_per_request=generated,
    )


def release_version(text: str) -> Version | None:
    """A version as releases are ordered (a leading "v" aside), or None when it does not parse as one."""
    try:
        return Version(text.strip().lstrip("v"))
    except InvalidVersion:
        return None


def newer_release(run: SweepRun) -> str:
    """The engine's newest release a source states, when it is newer than the version this run measured."""
    tool = run.tool
    if tool is None or not tool.latest_version or not run.engine_version:
        return ""
    measured, latest = release_version(run.engine_version), release_version(tool.latest_version)
    if measured is None or latest is None or latest <= measured:
        return ""
    released = f", released {tool.latest_version_released_on:%d %b %Y}," if tool.latest_version_released_on else ""
    return f"{tool.name} {tool.latest_version}{released} is newer than the {run.engine_version} measured"


def load_mode(run: SweepRun) -> str:
    """A published run's stated mode; a run measured here or imported sweeps concurrency or a request rate."""
    if run.load_mode:
        return run.load_mode
    return LoadMode.REQUEST_RATE if (run.plan or {}).get("mode") == "rate" else LoadMode.CONCURRENCY


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
        dated_by=(run.card or {}).get("dated_by", "page") if published else "",
        mode=load_mode(run),
        facts=setup_facts(run.flags, tensor_parallel=run.tensor_parallel, pipeline_parallel=run.pipeline_parallel),
    )


def _options(command: str) -> list[str]:
    """A command's words, each option with its value ("-tp 2"), so two commands differ by whole options."""
    words = command.split()
    options: list[str] = []
    for word in words:
        if options and options[-1].startswith("-") and " " not in options[-1] and not word.startswith("-"):
            options[-1] = f"{options[-1]} {word}"
        else:
            options.append(word)
    return options


def _label(comparison: Comparison) -> None:
    """Name each series by engine, version and publisher, and a configuration by the options that set it apart
    from the same engine's others in the comparison."""
    options: dict[tuple, list[list[str]]] = {}
    for series in comparison.series:
        options.setdefault((series.engine, series.engine_version, series.publisher), []).append(
            _options(series.configuration))
    for series in comparison.series:
        version = series.engine_version or "version not stated"
        configurations = options[(series.engine, series.engine_version, series.publisher)]
        if len(configurations) > 1:
            shared = set.intersection(*(set(each) for each in configurations))
            series.setup = " ".join(option for option in _options(series.configuration)
                                    if option not in shared) or "defaults"
        series.label = " · ".join(part for part in (f"{series.engine} {version}", series.publisher, series.setup)
                                  if part)


def _flag(comparison: Comparison) -> None:
    """Flag on each series what differs from the comparison's others: the setup its command states, and its mean
    output length where the series did not generate the same lengths at the ranking load (the output length was
    left to each engine, so the same requests produced different amounts of work)."""
    for series, flags in zip(comparison.series, differences([series.facts for series in comparison.series]),
                             strict=True):
        series.flags = flags
    generated = [(entry.series, entry.point.output_per_request) for entry in comparison.ranking
                 if entry.point.output_per_request]
    lengths = [length for _, length in generated]
    if len(lengths) >= 2 and max(lengths) > min(lengths) * (1 + OUTPUT_SPREAD):
        for series, length in generated:
            series.flags.append(f"output length not fixed: ≈{length:,.1f} tokens per request")


def _runs() -> QuerySet[SweepRun]:
    return SweepRun.objects.select_related("tool", "hardware", "model", "target").prefetch_related(
        Prefetch("levels", queryset=SweepLevel.objects.figures().order_by("level"))
    )


def measured_identity(run: SweepRun) -> tuple[str, str] | None:
    """(model slug, workload key) under which a run measured here compares with published runs: fixed input and
    output lengths of synthetic prompts, swept the same way, compare with a publisher's random dataset of the same
    lengths."""
    workload = run.workload or {}
    lengths = [(workload.get(part) or {}).get("value") if (workload.get(part) or {}).get("kind") == "fixed" else None
               for part in ("input", "output")]
    model_id = (run.card or {}).get("model_id") or (run.target.model_id if run.target else "")
    if None in lengths or not model_id:
        return None
    identity = workload_identity(mode=load_mode(run), dataset="random", input_tokens=lengths[0],
                                 output_tokens=lengths[1], num_prompts=(run.plan or {}).get("requests_per_level"))
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
            groups[identity] = comparison = Comparison(
                model_slug=run.model.slug, model_name=run.model.name, weight_format=run.weight_format,
                hardware_slug=run.hardware.slug, hardware_name=run.hardware.name, hardware_count=run.hardware_count,
                workload=workload_name(run.workload or {}, load_mode(run)), mode=load_mode(run),
            )
        comparison.series.append(series_of(run))
    for run, identity in _measured_candidates(groups):
        groups[identity].series.append(series_of(run))
    kept = [group for group in groups.values() if len(group.engines) >= engines_at_least]
    for group in kept:
        group.series.sort(key=lambda series: (not series.is_published, series.engine, series.engine_version,
                                              len(series.configuration)))
        _label(group)
        _flag(group)
    return sorted(kept, key=lambda group: (-len(group.engines), group.model_name, group.hardware_name,
                                           group.hardware_count, group.title))


def workload_name(workload: dict, mode: str) -> str:
    """The requests in words: dataset and lengths, and the prompt count where the load does not already say it."""
    dataset = DATASETS.get(workload.get("dataset"), str(workload.get("dataset")))
    lengths = ""
    if workload.get("input_tokens") or workload.get("output_tokens"):
        lengths = f", {workload.get('input_tokens') or '?'} in / {workload.get('output_tokens') or '?'} out"
    prompts = workload.get("num_prompts")
    counted = f", {prompts:,} prompts" if prompts and mode in (LoadMode.CONCURRENCY, LoadMode.REQUEST_RATE) else ""
    return f"{dataset}{lengths}{counted}"


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
class Matrix:
    """Comparisons of several engines, each ranked inside by its one figure, and single-engine evidence apart."""

    compared: list[Comparison]
    single: list[Comparison]


def evidence_matrix() -> Matrix:
    """One row per comparison (model × hardware × count × weight format × workload and load mode): never an
    engine's figure set beside another comparison's."""
    found = sorted(comparisons(), key=lambda group: (group.model_name.lower(), group.hardware_name,
                                                     group.hardware_count, group.weight_format.lower(), group.title))
    return Matrix(compared=[group for group in found if len(group.engines) >= 2],
                  single=[group for group in found if len(group.engines) == 1])


def published_runs(*, model: str = "", hardware: str = "", engine: str = "", publisher: str = "",
                   dataset: str = "") -> QuerySet[SweepRun]:
    """Published runs with their levels, filtered by slugs, publisher and dataset, in a stable order."""
    runs = _runs().filter(origin=SweepRun.Origin.PUBLISHED)
    for value, lookup in ((model, "model__slug"), (hardware, "hardware__slug"), (engine, "tool__slug"),
                          (publisher, "publisher__iexact"), (dataset, "workload__dataset")):
        if value:
            runs = runs.filter(**{lookup: value})
    return runs.order_by("model__slug", "hardware__slug", "hardware_count", "tool__slug", "key")
