"""Cost at a latency target: what a measured point of a throughput curve costs per million tokens on rented GPUs,
the cheapest point that meets a service-level objective, and a hosted API's bill for the same token mix.

A point's cost is the GPU bill for an hour over the tokens the GPUs produced in that hour:
``gpu_hour_usd × gpu_count / (tokens per second × 3600) × 1e6``. Per million output tokens the tokens are the
output ones; per million total tokens they are input and output together, at the ratio of input to output tokens
the workload itself had at that point (a hosted API is costed at the same ratio).

Only points of one load mode and one workload are ever compared: ``cheapest_answer`` refuses anything else. An
estimate between two measured points of one series (linear in every figure) is marked interpolated and names
both points; nothing is estimated beyond a series' last measured point or between series.

Plain Python: no Django, no database.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from scoring.errors import InputError

SECONDS_PER_HOUR = 3600
PER_MILLION = 1_000_000
NO_POINT_MEETS = "no measured point meets it"


def _positive(name: str, value: float | None, errors: dict[str, str]) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        errors[name] = "Must be a positive number."


@dataclass(frozen=True)
class Slo:
    """A service-level objective: TTFT p50 at most ``max_ttft_ms`` and tok/s per user at least
    ``min_tokens_per_user``; a target left out is not a constraint."""

    max_ttft_ms: float | None = None
    min_tokens_per_user: float | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        _positive("max_ttft_ms", self.max_ttft_ms, errors)
        _positive("min_tokens_per_user", self.min_tokens_per_user, errors)
        if errors:
            raise InputError(errors)

    @property
    def is_set(self) -> bool:
        return self.max_ttft_ms is not None or self.min_tokens_per_user is not None

    def met_by(self, *, ttft_ms: float | None, tokens_per_user: float | None) -> bool | None:
        """True or False, or None when a figure a target needs is unknown."""
        checks = []
        if self.max_ttft_ms is not None:
            checks.append(None if ttft_ms is None else ttft_ms <= self.max_ttft_ms)
        if self.min_tokens_per_user is not None:
            checks.append(None if tokens_per_user is None else tokens_per_user >= self.min_tokens_per_user)
        if False in checks:
            return False
        return None if None in checks else True


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured load of a series: its throughput per GPU and the latency a user saw there.
    ``input_per_output`` is the workload's input tokens per output token at that point (None: unknown)."""

    load: str
    level: float
    output_tps_per_gpu: float | None
    ttft_p50_ms: float | None
    tokens_per_user: float | None
    input_per_output: float | None = None


@dataclass(frozen=True)
class CostSeries:
    """The points of one run (one engine, version and configuration) in one load mode and one workload."""

    key: str
    mode: str
    workload: str
    points: tuple[MeasuredPoint, ...]


@dataclass(frozen=True)
class PointCost:
    series_key: str
    point: MeasuredPoint
    usd_per_million_output_tokens: float
    usd_per_million_total_tokens: float | None
    meets_slo: bool | None
    # An estimate between two measured points of the series (their loads, lower first), never a measurement.
    between: tuple[str, str] | None = None

    @property
    def interpolated(self) -> bool:
        return self.between is not None


def usd_per_million_tokens(*, gpu_hour_usd: float, gpu_count: int, tokens_per_second: float) -> float:
    """What a million tokens cost when ``gpu_count`` GPUs at ``gpu_hour_usd`` each produce ``tokens_per_second``."""
    return gpu_hour_usd * gpu_count / (tokens_per_second * SECONDS_PER_HOUR) * PER_MILLION


def _check_price(gpu_hour_usd: float, gpu_count: int) -> None:
    errors: dict[str, str] = {}
    _positive("gpu_hour_usd", gpu_hour_usd, errors)
    if not isinstance(gpu_count, int) or gpu_count < 1:
        errors["gpu_count"] = "Must be a whole number of at least 1."
    if errors:
        raise InputError(errors)


def point_cost(point: MeasuredPoint, *, series_key: str, gpu_hour_usd: float, gpu_count: int, slo: Slo,
               between: tuple[str, str] | None = None) -> PointCost | None:
    """The point's cost, or None when it states no output throughput to cost."""
    _check_price(gpu_hour_usd, gpu_count)
    if not point.output_tps_per_gpu or point.output_tps_per_gpu <= 0:
        return None
    output_tps = point.output_tps_per_gpu * gpu_count
    total = None
    if point.input_per_output is not None and point.input_per_output >= 0:
        total = usd_per_million_tokens(gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count,
                                       tokens_per_second=output_tps * (1 + point.input_per_output))
    return PointCost(
        series_key=series_key, point=point,
        usd_per_million_output_tokens=usd_per_million_tokens(gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count,
                                                             tokens_per_second=output_tps),
        usd_per_million_total_tokens=total,
        meets_slo=slo.met_by(ttft_ms=point.ttft_p50_ms, tokens_per_user=point.tokens_per_user),
        between=between,
    )


def series_costs(series: CostSeries, *, gpu_hour_usd: float, gpu_count: int, slo: Slo) -> list[PointCost]:
    """Every measured point of the series that states a throughput, costed, in the series' order."""
    costs = (point_cost(point, series_key=series.key, gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count, slo=slo)
             for point in series.points)
    return [cost for cost in costs if cost is not None]


def _lerp(low: float | None, high: float | None, share: float) -> float | None:
    if low is None or high is None:
        return None
    return low + (high - low) * share


def _boundary_share(low: MeasuredPoint, high: MeasuredPoint, slo: Slo) -> float | None:
    """How far from ``low`` to ``high`` (0..1) the figures may go, linearly, before a target is missed."""
    shares = []
    if slo.max_ttft_ms is not None and high.ttft_p50_ms > slo.max_ttft_ms:
        shares.append((slo.max_ttft_ms - low.ttft_p50_ms) / (high.ttft_p50_ms - low.ttft_p50_ms))
    if slo.min_tokens_per_user is not None and high.tokens_per_user < slo.min_tokens_per_user:
        shares.append((low.tokens_per_user - slo.min_tokens_per_user) / (low.tokens_per_user - high.tokens_per_user))
    return min(shares) if shares else None


def interpolated_cost(series: CostSeries, *, gpu_hour_usd: float, gpu_count: int, slo: Slo) -> PointCost | None:
    """Where the SLO is crossed between two adjacent measured points of the series (the lower load meets it, the
    next misses it and produces more per GPU), the estimate at the crossing: every figure linear between the two.
    None when the SLO sets no target, no such pair exists or a figure it needs is missing."""
    if not slo.is_set:
        return None
    points = sorted(series.points, key=lambda point: point.level)
    for low, high in zip(points, points[1:]):
        if slo.met_by(ttft_ms=low.ttft_p50_ms, tokens_per_user=low.tokens_per_user) is not True:
            continue
        if slo.met_by(ttft_ms=high.ttft_p50_ms, tokens_per_user=high.tokens_per_user) is not False:
            continue
        if not (low.output_tps_per_gpu and high.output_tps_per_gpu
                and high.output_tps_per_gpu > low.output_tps_per_gpu):
            continue
        if (slo.max_ttft_ms is not None and high.ttft_p50_ms is None) or (
                slo.min_tokens_per_user is not None and high.tokens_per_user is None):
            continue
        share = _boundary_share(low, high, slo)
        if share is None or not 0 < share < 1:
            continue
        estimate = MeasuredPoint(
            load=f"between {low.load} and {high.load}", level=_lerp(low.level, high.level, share),
            output_tps_per_gpu=_lerp(low.output_tps_per_gpu, high.output_tps_per_gpu, share),
            ttft_p50_ms=_lerp(low.ttft_p50_ms, high.ttft_p50_ms, share),
            tokens_per_user=_lerp(low.tokens_per_user, high.tokens_per_user, share),
            input_per_output=_lerp(low.input_per_output, high.input_per_output, share),
        )
        cost = point_cost(estimate, series_key=series.key, gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count, slo=slo,
                          between=(low.load, high.load))
        # Rounding at the crossing may leave a figure a hair past a target: the estimate is at the target.
        return replace(cost, meets_slo=True) if cost else None
    return None


@dataclass(frozen=True)
class CheapestAnswer:
    """The costs of every series of one mode and workload, the cheapest measured point meeting the SLO (None: no
    measured point meets it) and, per series, the estimate where the SLO is crossed between two measured points."""

    mode: str
    workload: str
    costs: tuple[PointCost, ...]
    cheapest: PointCost | None
    estimates: tuple[PointCost, ...]

    @property
    def verdict(self) -> str:
        return "" if self.cheapest else NO_POINT_MEETS


def cheapest_answer(series: Sequence[CostSeries], *, gpu_hour_usd: float, gpu_count: int,
                    slo: Slo) -> CheapestAnswer:
    """The answer for series that all share one load mode and one workload (a ValueError otherwise)."""
    if not series:
        raise ValueError("No series to cost.")
    if len({(one.mode, one.workload) for one in series}) != 1:
        raise ValueError("Series of different load modes or workloads are never costed together.")
    costs = [cost for one in series for cost in series_costs(one, gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count,
                                                            slo=slo)]
    estimates = [estimate for one in series
                 if (estimate := interpolated_cost(one, gpu_hour_usd=gpu_hour_usd, gpu_count=gpu_count, slo=slo))]
    return CheapestAnswer(mode=series[0].mode, workload=series[0].workload, costs=tuple(costs),
                          cheapest=cheapest_meeting(costs), estimates=tuple(estimates))


def cheapest_meeting(costs: Iterable[PointCost]) -> PointCost | None:
    """The cheapest measured point (never an estimate) that meets the SLO for certain."""
    meeting = [cost for cost in costs if cost.meets_slo is True and not cost.interpolated]
    return min(meeting, key=lambda cost: (cost.usd_per_million_output_tokens, cost.series_key), default=None)


@dataclass(frozen=True)
class HostedSpeed:
    """A hosted provider's speed and latency for the model, as one named publisher reported them."""

    publisher: str
    url: str
    observed_on: str
    output_speed_tps: float | None
    latency_ms: float | None
    latency_label: str


@dataclass(frozen=True)
class HostedCost:
    provider: str
    usd_per_million_output_tokens: float
    speed: HostedSpeed | None
    meets_slo: bool | None
    # Where the per-token price comes from, and the day it was checked.
    price_source: str = ""
    price_verified_on: str | None = None


def hosted_usd_per_million_output(*, input_usd_per_mtok: float, output_usd_per_mtok: float,
                                  input_per_output: float) -> float:
    """A per-token price as dollars per million output tokens with the input that came with them included."""
    return output_usd_per_mtok + input_usd_per_mtok * input_per_output


def hosted_cost(*, provider: str, input_usd_per_mtok: float, output_usd_per_mtok: float, input_per_output: float,
                speed: HostedSpeed | None, slo: Slo, price_source: str = "",
                price_verified_on: str | None = None) -> HostedCost:
    """The provider's bill at the workload's mix, and whether its reported figures meet the SLO (None: a figure
    a target needs was not reported; the provider's single-stream output speed stands for tok/s per user)."""
    meets = slo.met_by(ttft_ms=speed.latency_ms if speed else None,
                       tokens_per_user=speed.output_speed_tps if speed else None)
    return HostedCost(
        provider=provider,
        usd_per_million_output_tokens=hosted_usd_per_million_output(
            input_usd_per_mtok=input_usd_per_mtok, output_usd_per_mtok=output_usd_per_mtok,
            input_per_output=input_per_output),
        speed=speed, meets_slo=meets, price_source=price_source, price_verified_on=price_verified_on,
    )
