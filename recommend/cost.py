"""Cost at a latency target for one model on one hardware: the evidence's curves (published, and the lab's own runs
measured here or imported) turned into scoring.cost's plain series, one answer per comparison and load mode, and
the hosted providers' prices for the model at the same token mix with one publisher's latency figures.

The sourced GPU prices (fixtures/gpu_prices.yaml) are read once per process: they change with a deploy, like code.
Reads run a fixed number of queries whatever the number of runs or points.
"""
from __future__ import annotations

import datetime
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Prefetch, Q
from django.urls import reverse
from django.utils.http import urlencode

from catalog.models import HardwareSpec, LanguageModel
from core.loading import FixtureError, default_fixtures_dir, read_yaml
from lab.evidence import Comparison, Series, comparisons, series_of
from lab.models import SweepLevel, SweepRun
from recommend.selectors import catalog_data, token_prices
from scoring.breakeven import HOURS_PER_MONTH, ProviderCost, Workload, break_even_tokens_per_day
from scoring.cost import (
    NO_POINT_MEETS,
    CheapestAnswer,
    CostSeries,
    HostedCost,
    HostedSpeed,
    MeasuredPoint,
    PointCost,
    Slo,
    cheapest_answer,
    hosted_cost,
)
from scoring.errors import InputError
from scoring.ranking import reported_latency_evidence
from scoring.vocabulary import model_slug

GPU_PRICES_FIXTURE = "gpu_prices.yaml"
GPU_PRICE_FIELDS = ("hardware", "provider", "offer", "usd_per_gpu_hour", "url", "observed_on", "read_via",
                    "verified_on")
MODE_LABELS = {"concurrency": "closed loop, fixed concurrency", "rate": "open loop, request rate",
               "request_rate": "open loop, request rate", "burst": "burst: every prompt sent at once",
               "offline": "offline batch", "throughput": "maximum throughput"}


@dataclass(frozen=True)
class GpuOffer:
    hardware: str
    provider: str
    offer: str
    usd_per_gpu_hour: float
    url: str
    observed_on: str
    read_via: str
    verified_on: str
    notes: str = ""


def _offer(path: Path, position: int, row: dict) -> GpuOffer:
    missing = [name for name in GPU_PRICE_FIELDS if row.get(name) in (None, "")]
    if missing:
        raise FixtureError(path=path, row=f"gpu_prices[{position}]", field=missing[0], message="required")
    price = row["usd_per_gpu_hour"]
    if isinstance(price, bool) or not isinstance(price, (int, float)) or price <= 0:
        raise FixtureError(path=path, row=f"gpu_prices[{position}]", field="usd_per_gpu_hour",
                           message=f"expected a positive number, got {price!r}")
    dates = {name: row[name].isoformat() if isinstance(row[name], datetime.date) else str(row[name])
             for name in ("observed_on", "verified_on")}
    return GpuOffer(hardware=str(row["hardware"]), provider=str(row["provider"]), offer=str(row["offer"]),
                    usd_per_gpu_hour=float(price), url=str(row["url"]), read_via=str(row["read_via"]),
                    notes=str(row.get("notes") or ""), **dates)


@functools.cache
def gpu_offer_table(fixtures_dir: Path) -> tuple[GpuOffer, ...]:
    """Every offer of the fixture in `fixtures_dir`, checked: FixtureError names a row missing a field."""
    path = fixtures_dir / GPU_PRICES_FIXTURE
    rows = (read_yaml(path) or {}).get("gpu_prices") or []
    return tuple(_offer(path, position, row) for position, row in enumerate(rows))


def gpu_offers(*, hardware: str) -> list[GpuOffer]:
    """The sourced on-demand offers for one GPU of `hardware`, cheapest first (none: no default price)."""
    offers = [offer for offer in gpu_offer_table(default_fixtures_dir()) if offer.hardware == hardware]
    return sorted(offers, key=lambda offer: (offer.usd_per_gpu_hour, offer.provider))


def costed_models() -> list[LanguageModel]:
    return list(LanguageModel.objects.order_by("position", "name"))


def costed_hardware() -> list[HardwareSpec]:
    return list(HardwareSpec.objects.order_by("position", "name"))


@dataclass
class SeriesView:
    """One line of a cost answer: a run's points in one mode, with who measured it and where it is shown."""

    series: Series
    cost_series: CostSeries
    hardware_count: int

    @property
    def measured_here(self) -> bool:
        return not self.series.is_published


@dataclass
class CostGroup:
    """One comparison (model, format, hardware and count, workload) in one load mode, costed."""

    title: str
    mode: str
    workload: str
    hardware_count: int
    evidence_url: str
    views: list[SeriesView]
    answer: CheapestAnswer
    input_per_output: float | None
    hosted: list[HostedCost] = field(default_factory=list)

    @property
    def mode_label(self) -> str:
        return MODE_LABELS.get(self.mode, self.mode)

    def view_of(self, series_key: str) -> SeriesView:
        return next(view for view in self.views if view.cost_series.key == series_key)

    @property
    def estimates(self) -> list[tuple[str, PointCost]]:
        """The interpolated estimates, each with the label of its series."""
        return [(self.view_of(estimate.series_key).series.label, estimate) for estimate in self.answer.estimates]


def _input_per_output(output_tps: float | None, total_tps: float | None) -> float | None:
    if not output_tps or total_tps is None or total_tps < output_tps:
        return None
    return (total_tps - output_tps) / output_tps


def _cost_series(series: Series, mode: str, workload: str) -> CostSeries:
    return CostSeries(
        key=f"run-{series.run_id}-{mode}", mode=mode, workload=workload,
        points=tuple(
            MeasuredPoint(load=point.load, level=point.level, output_tps_per_gpu=point.output_tps_per_gpu,
                          ttft_p50_ms=point.ttft_p50_ms, tokens_per_user=point.tps_per_user,
                          input_per_output=_input_per_output(point.output_tps, point.total_tps))
            for point in series.points if point.mode == mode
        ),
    )


def _views(series_list: list[Series], *, hardware_count: int, workload: str) -> dict[str, list[SeriesView]]:
    """The series split by load mode: a line joins points of one mode only."""
    by_mode: dict[str, list[SeriesView]] = {}
    for series in series_list:
        for mode in dict.fromkeys(point.mode for point in series.points):
            by_mode.setdefault(mode, []).append(
                SeriesView(series, _cost_series(series, mode, workload), hardware_count))
    return by_mode


def _lab_runs(*, model: str, hardware: str, gpu_count: int | None, known: set[int]) -> list[tuple[SweepRun, Series]]:
    """The lab's own sweeps (measured here or imported) of the model on the hardware that no published comparison
    holds: each is costed on its own, since nothing says another run shared its workload."""
    runs = (SweepRun.objects.lab().finished()
            .filter(kind=SweepRun.Kind.SWEEP, hardware__slug=hardware)
            .filter(Q(model__slug=model) | Q(model__isnull=True))
            .exclude(pk__in=known)
            .select_related("tool", "hardware", "model", "target")
            .prefetch_related(Prefetch("levels", queryset=SweepLevel.objects.figures().order_by("level")))
            .order_by("-queued_at", "-id"))
    if gpu_count:
        runs = runs.filter(hardware_count=gpu_count)
    found = []
    for run in runs:
        named = run.model.slug if run.model else model_slug(
            (run.card or {}).get("model_id") or (run.target.model_id if run.target else ""))
        if named == model:
            found.append((run, series_of(run)))
    return found


def _group_ratio(answer: CheapestAnswer) -> float | None:
    """The input:output mix the hosted prices are costed at: the answer point's, else the first point's stated."""
    if answer.cheapest and answer.cheapest.point.input_per_output is not None:
        return answer.cheapest.point.input_per_output
    return next((cost.point.input_per_output for cost in answer.costs if cost.point.input_per_output is not None),
                None)


def _hosted(*, model: str, ratio: float | None, slo: Slo) -> list[HostedCost]:
    if ratio is None:
        return []
    prices = token_prices(model=model)
    evidence = reported_latency_evidence(catalog_data(), tools=[price.tool for price in prices], model=model)
    costs = []
    for price in prices:
        found = evidence.get(price.tool)
        speed = None
        if found is not None:
            source = next(reason.external for reason in found.reasons if reason.external)
            speed = HostedSpeed(publisher=source.title, url=source.url, observed_on=source.observed_on,
                                output_speed_tps=found.output_speed_tps, latency_ms=found.latency_ms,
                                latency_label=found.latency_label)
        costs.append((price, hosted_cost(provider=price.tool_name, input_usd_per_mtok=price.input_usd_per_mtok,
                                         output_usd_per_mtok=price.output_usd_per_mtok, input_per_output=ratio,
                                         speed=speed, slo=slo, price_source=price.source,
                                         price_verified_on=price.verified_on)))
    return [cost for _, cost in sorted(costs, key=lambda pair: (pair[1].usd_per_million_output_tokens,
                                                                 pair[0].tool))]


def _title(hardware_count: int, hardware_name: str, weight_format: str, workload: str, mode: str) -> str:
    parts = [f"{hardware_count}× {hardware_name}", weight_format, workload, MODE_LABELS.get(mode, mode)]
    return " · ".join(part for part in parts if part)


def cost_groups(*, model: str, hardware: str, gpu_count: int | None, gpu_hour_usd: float,
                slo: Slo) -> list[CostGroup]:
    """Every comparison of the model on the hardware (at `gpu_count` GPUs, when given) in each load mode, costed
    at `gpu_hour_usd` per GPU-hour against `slo`; the lab's own runs outside them each on their own. Four queries
    (published runs and their levels, then the lab's runs and their levels) and the cached catalog snapshot."""
    groups: list[CostGroup] = []
    found: list[Comparison] = [one for one in comparisons(model=model, hardware=[hardware])
                               if gpu_count is None or one.hardware_count == gpu_count]
    evidence_url = reverse("lab:evidence-detail", args=[model, hardware])
    for comparison in found:
        for level_mode, views in _views(comparison.series, hardware_count=comparison.hardware_count,
                                        workload=comparison.workload).items():
            # The load mode the publisher's series states (stored with it); a level's own where none is stored.
            mode = comparison.mode or level_mode
            groups.append(_group(
                _title(comparison.hardware_count, comparison.hardware_name, comparison.weight_format,
                       comparison.workload, mode),
                mode, comparison.workload, comparison.hardware_count, evidence_url, views,
                model=model, gpu_hour_usd=gpu_hour_usd, slo=slo))
    known = {series.run_id for comparison in found for series in comparison.series}
    for run, series in _lab_runs(model=model, hardware=hardware, gpu_count=gpu_count, known=known):
        workload = run.workload_name or "workload of lab run"
        for mode, views in _views([series], hardware_count=run.hardware_count, workload=f"run-{run.pk}").items():
            groups.append(_group(
                _title(run.hardware_count, run.hardware.name, "", workload, mode) + f" · lab run {run.pk}",
                mode, workload, run.hardware_count, reverse("lab:sweep-detail", args=[run.pk]), views,
                model=model, gpu_hour_usd=gpu_hour_usd, slo=slo))
    # Comparisons with a point meeting the target first; otherwise in the evidence's order.
    return sorted((group for group in groups if group.answer.costs), key=lambda group: group.answer.cheapest is None)


def _group(title: str, mode: str, workload: str, hardware_count: int, evidence_url: str, views: list[SeriesView],
           *, model: str, gpu_hour_usd: float, slo: Slo) -> CostGroup:
    answer = cheapest_answer([view.cost_series for view in views], gpu_hour_usd=gpu_hour_usd,
                             gpu_count=hardware_count, slo=slo)
    ratio = _group_ratio(answer)
    return CostGroup(title=title, mode=mode, workload=workload, hardware_count=hardware_count,
                     evidence_url=evidence_url, views=views, answer=answer, input_per_output=ratio,
                     hosted=_hosted(model=model, ratio=ratio, slo=slo))




@dataclass(frozen=True)
class CostQuery:
    """A validated question: the model and hardware (catalog rows), the GPU count (None: every count the evidence
    has), the price per GPU-hour and what it comes from (an offer, or None for the asker's own figure), the SLO."""

    model: LanguageModel
    hardware: HardwareSpec
    gpu_count: int | None
    gpu_hour_usd: float
    offer: GpuOffer | None
    slo: Slo

    @property
    def link_params(self) -> dict[str, str]:
        """The query as the page's GET form spells it, for links that carry the same inputs."""
        params = {"model": self.model.slug, "hardware": self.hardware.slug, "gpu_hour_usd": f"{self.gpu_hour_usd:g}"}
        for name, value in (("gpu_count", self.gpu_count), ("max_ttft_ms", self.slo.max_ttft_ms),
                            ("min_tokens_per_user", self.slo.min_tokens_per_user)):
            if value is not None:
                params[name] = f"{value:g}"
        return params


def cost_query(*, model: str, hardware: str, gpu_count: int | None = None, gpu_hour_usd: float | None = None,
               max_ttft_ms: float | None = None, min_tokens_per_user: float | None = None) -> CostQuery:
    """The question checked against the catalog; InputError names each field it refuses. Left out, the price is
    the lowest sourced offer for the hardware; with none, the asker must give one."""
    errors: dict[str, str] = {}
    found_model = LanguageModel.objects.filter(slug=model).first()
    if found_model is None:
        errors["model"] = f'No model with the slug "{model}".'
    found_hardware = HardwareSpec.objects.filter(slug=hardware).first()
    if found_hardware is None:
        errors["hardware"] = f'No hardware spec with the slug "{hardware}".'
    if gpu_count is not None and (isinstance(gpu_count, bool) or gpu_count < 1):
        errors["gpu_count"] = "Must be a whole number of at least 1."
    offer = None
    if gpu_hour_usd is None and found_hardware is not None:
        offer = next(iter(gpu_offers(hardware=hardware)), None)
        if offer is None:
            errors["gpu_hour_usd"] = (f"No sourced on-demand price for {found_hardware.name}: "
                                      "give what one GPU costs you per hour.")
    elif gpu_hour_usd is not None and not (math.isfinite(gpu_hour_usd) and gpu_hour_usd > 0):
        errors["gpu_hour_usd"] = "Must be a positive number."
    try:
        slo = Slo(max_ttft_ms=max_ttft_ms, min_tokens_per_user=min_tokens_per_user)
    except InputError as exc:
        errors.update(exc.errors)
    if errors:
        raise InputError(errors)
    return CostQuery(model=found_model, hardware=found_hardware, gpu_count=gpu_count,
                     gpu_hour_usd=offer.usd_per_gpu_hour if offer else gpu_hour_usd, offer=offer, slo=slo)


def cost_link(query: CostQuery) -> str:
    return f"{reverse('recommend:cost')}?{urlencode(query.link_params)}"


def _series_source(view: SeriesView) -> dict:
    series = view.series
    return {
        "run_id": series.run_id, "engine": series.engine, "engine_version": series.engine_version,
        "label": series.label, "measured_here": view.measured_here,
        "publisher": series.publisher, "source_url": series.url if series.is_published else "",
        "observed_on": series.observed_on,
        "series_url": reverse("lab:sweep-detail", args=[series.run_id]) if view.measured_here else series.url,
    }


def _cost_row(group: CostGroup, cost: PointCost) -> dict:
    view = group.view_of(cost.series_key)
    point = cost.point
    return {
        **_series_source(view), "series_key": cost.series_key, "mode": group.mode, "workload": group.workload,
        "hardware_count": group.hardware_count, "point": point.load, "level": point.level,
        "output_tokens_per_second_per_gpu": point.output_tps_per_gpu, "ttft_p50_ms": point.ttft_p50_ms,
        "tokens_per_second_per_user": point.tokens_per_user, "input_tokens_per_output_token": point.input_per_output,
        "usd_per_million_output_tokens": cost.usd_per_million_output_tokens,
        "usd_per_million_total_tokens": cost.usd_per_million_total_tokens,
        "meets_slo": cost.meets_slo, "interpolated": cost.interpolated,
        "between": list(cost.between) if cost.between else [],
        "cheapest": cost is group.answer.cheapest,
    }


def _hosted_row(group: CostGroup, cost: HostedCost) -> dict:
    speed = cost.speed
    return {
        "provider": cost.provider, "mode": group.mode, "workload": group.workload,
        "input_tokens_per_output_token": group.input_per_output,
        "usd_per_million_output_tokens": cost.usd_per_million_output_tokens,
        "output_tokens_per_second": speed.output_speed_tps if speed else None,
        "latency_ms": speed.latency_ms if speed else None,
        "latency_metric": speed.latency_label if speed else "",
        "publisher": speed.publisher if speed else "", "publisher_url": speed.url if speed else "",
        "observed_on": speed.observed_on if speed else None,
        "meets_slo": cost.meets_slo,
        "price_source": cost.price_source, "price_verified_on": cost.price_verified_on,
    }


def cost_as_dict(query: CostQuery, groups: list[CostGroup]) -> dict:
    """The answer as the API gives it: `results` one row per costed point (the CSV rows), `answers` one per
    comparison and mode, `hosted` one row per provider and comparison."""
    offer = query.offer
    return {
        "model": query.model.slug, "hardware": query.hardware.slug, "gpu_count": query.gpu_count,
        "gpu_price": {
            "usd_per_gpu_hour": query.gpu_hour_usd, "provider": offer.provider if offer else "",
            "offer": offer.offer if offer else "", "url": offer.url if offer else "",
            "observed_on": offer.observed_on if offer else None, "user_supplied": offer is None,
        },
        "slo": {"max_ttft_ms": query.slo.max_ttft_ms, "min_tokens_per_user": query.slo.min_tokens_per_user},
        "answers": [
            {"title": group.title, "mode": group.mode, "workload": group.workload,
             "hardware_count": group.hardware_count,
             "cheapest": _cost_row(group, group.answer.cheapest) if group.answer.cheapest else None,
             "verdict": group.answer.verdict,
             "estimates": [_cost_row(group, estimate) for estimate in group.answer.estimates]}
            for group in groups
        ],
        "count": sum(len(group.answer.costs) for group in groups),
        "results": [_cost_row(group, cost) for group in groups for cost in group.answer.costs],
        "hosted": [_hosted_row(group, cost) for group in groups for cost in group.hosted],
    }


# The evidence charts' palette (static/js/evidence-charts.js), so a series keeps its look from page to page.
PALETTE = ("#1b6ac9", "#c2410c", "#15803d", "#7c3aed", "#b91c1c", "#0e7490", "#a16207", "#be185d")
HOSTED_COLOUR = "#475569"
CHART_WIDTH, CHART_HEIGHT = 800, 340
PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 64, 500, 24, 292


def _ticks(top: float, count: int = 5) -> list[float]:
    """Round steps from 0 past `top`: 1, 2, 2.5 or 5 times a power of ten."""
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= raw)
    return [step * index for index in range(math.ceil(top / step) + 1)]


@dataclass(frozen=True)
class ChartMark:
    x: float
    y: float
    title: str
    href: str


@dataclass(frozen=True)
class ChartLine:
    label: str
    colour: str
    dashed: bool
    path: str
    marks: tuple[ChartMark, ...]


@dataclass(frozen=True)
class HostedMark:
    y: float
    label: str


@dataclass(frozen=True)
class CostChart:
    """What the server draws as SVG: dollars per million output tokens (y) against tok/s per user (x)."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    lines: tuple[ChartLine, ...]
    hosted: tuple[HostedMark, ...]


def cost_chart(group: CostGroup) -> CostChart | None:
    """One line per series (points with both figures), the hosted providers marked in a strip beside the plot at
    their cost; None when no point states tok/s per user."""
    drawn = [cost for cost in group.answer.costs if cost.point.tokens_per_user is not None]
    if not drawn:
        return None
    x_top = max(cost.point.tokens_per_user for cost in drawn)
    y_top = max([cost.usd_per_million_output_tokens for cost in drawn]
                + [hosted.usd_per_million_output_tokens for hosted in group.hosted])
    x_ticks, y_ticks = _ticks(x_top), _ticks(y_top)

    def x_at(value: float) -> float:
        return round(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * value / x_ticks[-1], 1)

    def y_at(value: float) -> float:
        return round(PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * value / y_ticks[-1], 1)

    lines = []
    for index, view in enumerate(group.views):
        costs = sorted((cost for cost in drawn if cost.series_key == view.cost_series.key),
                       key=lambda cost: cost.point.tokens_per_user)
        if not costs:
            continue
        href = view.series.url if view.series.is_published and view.series.url else reverse(
            "lab:sweep-detail", args=[view.series.run_id])
        marks = tuple(ChartMark(x_at(cost.point.tokens_per_user), y_at(cost.usd_per_million_output_tokens),
                                f"{view.series.label}, {cost.point.load}: ${cost.usd_per_million_output_tokens:.2f} "
                                f"per million output tokens at {cost.point.tokens_per_user:.0f} tok/s per user", href)
                      for cost in costs)
        path = "M" + " L".join(f"{mark.x},{mark.y}" for mark in marks)
        label = view.series.label + (" (measured here)" if view.measured_here else "")
        lines.append(ChartLine(label, PALETTE[index % len(PALETTE)], view.measured_here, path, marks))
    # Providers at the same price share one mark, so their names never print over each other.
    by_price: dict[str, list[HostedCost]] = {}
    for cost in group.hosted:
        by_price.setdefault(f"{cost.usd_per_million_output_tokens:.2f}", []).append(cost)
    hosted = tuple(HostedMark(y_at(costs[0].usd_per_million_output_tokens),
                              f"{', '.join(cost.provider for cost in costs)} ${price}")
                   for price, costs in by_price.items())
    return CostChart(
        width=CHART_WIDTH, height=CHART_HEIGHT, left=PLOT_LEFT, right=PLOT_RIGHT, top=PLOT_TOP, bottom=PLOT_BOTTOM,
        x_ticks=tuple((x_at(tick), f"{tick:g}") for tick in x_ticks),
        y_ticks=tuple((y_at(tick), f"${tick:g}") for tick in y_ticks),
        lines=tuple(lines), hosted=hosted,
    )


# Modes that hold a steady load, as a day's traffic is: a burst or an offline batch says nothing about latency under it.
STEADY_MODES = ("concurrency", "request_rate", "rate")


@dataclass(frozen=True)
class Carrying:
    """Whether the hardware carries a break-even answer's volume at the target, from the evidence: the measured
    point meeting the target with the most output per GPU (steady modes only), against what the volume needs."""

    hardware_name: str
    gpu_count: int
    required_output_tps_per_gpu: float
    break_even_output_tps_per_gpu: float | None
    best: PointCost | None
    best_label: str
    best_group: str
    link: str

    @property
    def carries_volume(self) -> bool | None:
        return None if self.best is None else self.best.point.output_tps_per_gpu >= self.required_output_tps_per_gpu

    @property
    def carries_break_even(self) -> bool | None:
        if self.best is None or self.break_even_output_tps_per_gpu is None:
            return None
        return self.best.point.output_tps_per_gpu >= self.break_even_output_tps_per_gpu

    def as_dict(self) -> dict:
        best = self.best
        return {
            "hardware": self.hardware_name, "gpu_count": self.gpu_count,
            "required_output_tokens_per_second_per_gpu": self.required_output_tps_per_gpu,
            "break_even_output_tokens_per_second_per_gpu": self.break_even_output_tps_per_gpu,
            "best_point": {"series": self.best_label, "comparison": self.best_group, "point": best.point.load,
                           "output_tokens_per_second_per_gpu": best.point.output_tps_per_gpu,
                           "ttft_p50_ms": best.point.ttft_p50_ms} if best else None,
            "carries_volume": self.carries_volume, "carries_break_even_volume": self.carries_break_even,
            "verdict": "" if best else NO_POINT_MEETS, "cost_link": self.link,
        }


def break_even_carrying(*, model: str, hardware: str, gpu_count: int, gpu_hour_usd: float | None,
                        max_ttft_ms: float | None, min_tokens_per_user: float | None,
                        required_output_tps: float, break_even_output_tps: float | None) -> Carrying | None:
    """For a break-even answer: None when the model or hardware is unknown or no price is given or sourced."""
    try:
        query = cost_query(model=model, hardware=hardware, gpu_count=gpu_count, gpu_hour_usd=gpu_hour_usd,
                           max_ttft_ms=max_ttft_ms, min_tokens_per_user=min_tokens_per_user)
    except InputError:
        return None
    groups = [group for group in cost_groups(model=model, hardware=hardware, gpu_count=gpu_count,
                                             gpu_hour_usd=query.gpu_hour_usd, slo=query.slo)
              if group.mode in STEADY_MODES and group.answer.cheapest]
    best_group = max(groups, key=lambda group: group.answer.cheapest.point.output_tps_per_gpu, default=None)
    best = best_group.answer.cheapest if best_group else None
    return Carrying(
        hardware_name=query.hardware.name, gpu_count=gpu_count,
        required_output_tps_per_gpu=required_output_tps / gpu_count,
        break_even_output_tps_per_gpu=break_even_output_tps / gpu_count if break_even_output_tps else None,
        best=best, best_label=best_group.view_of(best.series_key).series.label if best else "",
        best_group=best_group.title if best_group else "", link=cost_link(query),
    )


def break_even_evidence(*, model: str, hardware: str, gpu_count: int, own_gpu_usd_per_hour: float | None,
                        max_ttft_ms: float | None, min_tokens_per_user: float | None, workload: Workload,
                        providers: list[ProviderCost]) -> Carrying | None:
    """The break-even answer's question put to the evidence: at the visitor's GPU price (else the lowest sourced
    offer for the hardware), the volume where the GPUs cost what the cheapest API does, and the visitor's own."""
    offer = next(iter(gpu_offers(hardware=hardware)), None)
    price = own_gpu_usd_per_hour or (offer.usd_per_gpu_hour if offer else None)
    break_even_output_tps = None
    if price and providers and providers[0].usd_per_day > 0:
        total = break_even_tokens_per_day(gpu_monthly_usd=price * HOURS_PER_MONTH * gpu_count, workload=workload,
                                          price=providers[0].price)
        share = workload.output_tokens_per_day / (workload.input_tokens_per_day + workload.output_tokens_per_day)
        break_even_output_tps = total * share / workload.busy_seconds_per_day if total else None
    return break_even_carrying(model=model, hardware=hardware, gpu_count=gpu_count, gpu_hour_usd=price,
                               max_ttft_ms=max_ttft_ms, min_tokens_per_user=min_tokens_per_user,
                               required_output_tps=workload.required_output_tps,
                               break_even_output_tps=break_even_output_tps)
