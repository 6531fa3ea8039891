"""The metric registry: every figure the probes summarise, declared once with its label, unit and direction,
and every summary that holds such figures, declared once as the metrics it lists and the shape of their figures.

The probe client, the summary services, the CLI, the API serializers and the pages take metric names, labels,
units and summary shapes from here; definitions of what each metric measures are in docs/probes-measurement.md.

Placement: this module sits in the probes package so that every layer finds it under one obvious name, and it
is plain Python: it imports only the standard library (no Django, nothing else of the project), so the
Django-free probe client (``probe_client``) imports it too. Importing ``probes.metrics`` runs
``probes/__init__.py``, which is empty, and this module, never ``probes.models``; tests/test_layers.py holds
both the client and this module to that, by their imports and by importing them with Django unconfigured.

Each summary lists its metrics in its own order because today's outputs do: the pages put output speed before
end-to-end latency, and the benchmark lab's level columns put TPOT and ITL before it. A summary's order is the
order of its JSON keys and of its CSV columns, so it is part of what API clients read.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict


class Direction(enum.Enum):
    LOWER = "lower"
    HIGHER = "higher"


class Percentiles(TypedDict):
    """One metric of a run's summary (``ProbeRun.summary``, the CLI's and the client's summaries). None when no
    successful request produced the metric."""

    p50: float | None
    p95: float | None
    p99: float | None


class TargetFigures(Percentiles):
    """One metric of ``MeasurementSummary.metrics``: the percentiles over the summary window and the median of
    the last 72 hours."""

    median_72h: float | None


class LevelFigures(Percentiles):
    """One metric of a benchmark-lab level (``SweepLevel.ttft_ms`` and its siblings)."""

    mean: float | None


# Percentile name -> the percentile, read off the TypedDict so the names are written once: {"p50": 50, ...}.
PERCENTILES: Mapping[str, int] = {name: int(name.removeprefix("p")) for name in Percentiles.__annotations__}

# Converts a figure stated in another unit (a publisher's seconds) into the unit of the metric.
UNIT_FACTORS = {("s", "ms"): 1000.0}


@dataclass(frozen=True)
class Metric:
    """One measured figure. ``key`` is its name in stored rows, summaries, the API and the CSV; ``decimals`` is
    how many a table cell shows; ``reported_as`` is the catalog's name of the figure publishers report for the
    same question (``catalog.models.ReportedFigure.Metric``), empty when none does."""

    key: str
    label: str
    short_label: str
    unit: str
    decimals: int
    direction: Direction
    reported_as: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.direction is Direction.HIGHER

    def percentile_field(self, percentile: str) -> str:
        """The flat name of one percentile of this metric: ``ttft_ms`` and ``p50`` give ``ttft_p50_ms``."""
        stem, _, unit = self.key.rpartition("_")
        return f"{stem}_{percentile}_{unit}"

    def converted(self, value: float, *, unit: str) -> float:
        """A figure stated in ``unit``, in this metric's unit. KeyError for a unit with no known conversion."""
        return value if unit == self.unit else value * UNIT_FACTORS[(unit, self.unit)]


TTFT = Metric("ttft_ms", "Time to first token", "TTFT", "ms", 0, Direction.LOWER, reported_as="ttft")
TTFAT = Metric(
    "ttfat_ms", "Time to first answer token", "TTFAT", "ms", 0, Direction.LOWER,
    reported_as="time_to_first_answer_token",
)
E2E = Metric("e2e_ms", "End-to-end latency", "E2E", "ms", 0, Direction.LOWER, reported_as="e2e")
OUTPUT_SPEED = Metric(
    "output_speed_tps", "Output speed", "Output speed", "tok/s", 1, Direction.HIGHER, reported_as="output_speed"
)
TPOT = Metric("tpot_ms", "Time per output token", "TPOT", "ms", 1, Direction.LOWER)
HEADERS = Metric("headers_ms", "Time to response headers", "Headers", "ms", 0, Direction.LOWER)
ITL = Metric("itl_ms", "Inter-token latency", "ITL", "ms", 1, Direction.LOWER)

METRICS: tuple[Metric, ...] = (TTFT, TTFAT, E2E, OUTPUT_SPEED, TPOT, HEADERS, ITL)
METRIC_BY_KEY: Mapping[str, Metric] = {metric.key: metric for metric in METRICS}
# The measured metric a publisher's reported figure stands in for, by the catalog's name of that figure.
METRIC_BY_REPORTED: Mapping[str, Metric] = {metric.reported_as: metric for metric in METRICS if metric.reported_as}

# Run summaries: ProbeRun.summary and MeasurementSummary.metrics (stored), a saved CLI run's summary, and the
# measured figures the pages and the API show. {key: Percentiles} per run, {key: TargetFigures} per target.
RUN_SUMMARY_METRICS: tuple[Metric, ...] = (TTFT, TTFAT, E2E, OUTPUT_SPEED, TPOT)
# The probe client's own summary of an ad-hoc run (SpeedResult.summary(), the CLI's JSON): {key: Percentiles}.
CLIENT_SUMMARY_METRICS: tuple[Metric, ...] = (*RUN_SUMMARY_METRICS, HEADERS)
# The run-summary metrics in the order the pages' tables show them; the headline ones are the dashboards'
# main columns and a tool page's figures.
PAGE_METRICS: tuple[Metric, ...] = (TTFT, TTFAT, OUTPUT_SPEED, E2E, TPOT)
HEADLINE_METRICS: tuple[Metric, ...] = PAGE_METRICS[:4]
# A benchmark-lab level: one JSON column of LevelFigures per metric, flattened by the API to
# ``<stem>_<percentile>_<unit>`` fields in this order.
LEVEL_METRICS: tuple[Metric, ...] = (TTFT, TPOT, ITL, E2E)


def run_summary_keys() -> tuple[str, ...]:
    """The metric keys of a run summary, in its order: the stored columns its percentiles are computed from."""
    return tuple(metric.key for metric in RUN_SUMMARY_METRICS)


def level_percentile_fields() -> tuple[str, ...]:
    """The flat percentile fields of a benchmark-lab level, in the API's order (``ttft_p50_ms``, ...)."""
    return tuple(metric.percentile_field(name) for metric in LEVEL_METRICS for name in PERCENTILES)
