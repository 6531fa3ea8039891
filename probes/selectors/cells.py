"""The cells of the probe pages' read models: a stored summary's figures rounded half-up in their metric's unit,
a workload option, a compat cell with an excerpt of the provider's message, and how old a figure may be before a
page calls it stale. No queries. Metric labels and units and the outcomes' symbols come from the vocabulary
(scoring.vocabulary).
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from probes.models import CompatStatus
from scoring.vocabulary import MEASURED_OUTCOME_BY_VALUE, PERCENTILES, Metric, workload_input_tokens

# Speed workloads run about every 3 hours and the parallel test daily: a figure older than a day (two days for a
# daily scenario) means at least several scheduled runs were missed.
STALE_AFTER_SINGLE_STREAM = dt.timedelta(hours=24)
STALE_AFTER_PARALLEL = dt.timedelta(hours=48)

def finite_number(value: object) -> float | None:
    """A finite number from summary JSON, or None for anything else (missing, null, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class FigureValue:
    """One number ready for a table cell: rounded half-up like Django's floatformat, with its unit."""

    value: float | None
    decimals: int
    unit: str

    @property
    def text(self) -> str:
        if self.value is None:
            return ""
        step = Decimal(1).scaleb(-self.decimals)
        return f"{Decimal(repr(self.value)).quantize(step, rounding=ROUND_HALF_UP):f}"

    @property
    def attr(self) -> str:
        return "" if self.value is None else f"{self.value:.15g}"


@dataclass(frozen=True)
class MetricFigures:
    """One metric's cell group, read from a ``TargetFigures`` entry of MeasurementSummary.metrics."""

    metric: Metric
    median_72h: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None

    @classmethod
    def from_json(cls, metric: Metric, figures: object) -> MetricFigures:
        if not isinstance(figures, Mapping):
            return cls(metric)
        return cls(
            metric,
            median_72h=finite_number(figures.get("median_72h")),
            p50=finite_number(figures.get("p50")),
            p95=finite_number(figures.get("p95")),
            p99=finite_number(figures.get("p99")),
        )

    def _value(self, value: float | None) -> FigureValue:
        return FigureValue(value, self.metric.decimals, self.metric.unit)

    @property
    def median(self) -> FigureValue:
        return self._value(self.median_72h)

    @property
    def percentile_values(self) -> list[FigureValue]:
        return [self._value(getattr(self, name)) for name in PERCENTILES]


def stale_after(concurrency: int) -> dt.timedelta:
    return STALE_AFTER_SINGLE_STREAM if concurrency <= 1 else STALE_AFTER_PARALLEL


def age_since(moment: dt.datetime | None, now: dt.datetime) -> dt.timedelta | None:
    return None if moment is None else max(now - moment, dt.timedelta(0))


@dataclass(frozen=True)
class WorkloadOption:
    workload: str
    concurrency: int
    targets_measured: int = 0

    @property
    def input_tokens(self) -> int | None:
        return workload_input_tokens(self.workload)

    @property
    def label(self) -> str:
        size = f"≈{self.input_tokens:,} input tokens" if self.input_tokens else self.workload
        streams = "single stream" if self.concurrency == 1 else f"{self.concurrency} parallel requests"
        return f"{size}, {streams}"

    @property
    def sort_key(self) -> tuple:
        return (self.concurrency, self.input_tokens or 0, self.workload)


# Provider messages can be whole HTML error pages from a proxy; cells show the start of them.
HOVER_CHARS = 300
MESSAGE_CHARS = 600


def excerpt(text: str, limit: int) -> str:
    """The text cut to at most `limit` characters, ending with an ellipsis when cut (plain slicing: the matrix has
    hundreds of cells, and Django's truncatechars filter costs a translation lookup per call)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class CompatCell:
    check_name: str
    target_slug: str
    status: CompatStatus | None

    @property
    def outcome(self) -> str:
        return self.status.outcome if self.status else ""

    @property
    def symbol(self) -> str:
        outcome = MEASURED_OUTCOME_BY_VALUE.get(self.outcome)
        return outcome.symbol if outcome else "–"

    @property
    def label(self) -> str:
        return self.status.get_outcome_display() if self.status else "Not checked"

    @property
    def hover_text(self) -> str:
        if self.status is None:
            return f"{self.check_name}: not checked yet"
        parts = [f"{self.check_name}: {self.label}"]
        if self.status.http_status:
            parts.append(f"HTTP {self.status.http_status}")
        if self.status.message:
            parts.append(self.status.message)
        elif self.status.detail:
            parts.append(self.status.detail)
        return excerpt(" — ".join(parts), HOVER_CHARS)

    @property
    def message(self) -> str:
        return excerpt(self.status.message, MESSAGE_CHARS) if self.status else ""

    @property
    def detail(self) -> str:
        return excerpt(self.status.detail, MESSAGE_CHARS) if self.status else ""

    @property
    def checked_at_iso(self) -> str:
        return self.status.checked_at.isoformat() if self.status else ""

    @property
    def checked_at_text(self) -> str:
        return f"{self.status.checked_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC" if self.status else ""

