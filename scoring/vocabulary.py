"""The project's vocabulary: every word the probe client, scoring, the catalog, the probes and the lab must read
the same way, each defined once, here.

- compat checks: the suite's check names in the order it runs them, each with the need a user can require;
- compat outcomes: what a check measured, and what a tool's documentation states;
- metrics: every figure measured (key, label, unit, direction), the summaries that hold them, and the figures
  publishers report with the unit they report them in;
- percentiles: one definition, linear interpolation between closest ranks;
- model names: one rule for the model that a catalog name, a price item or a provider's model id names;
- the blended price, and the input size that a workload name states.

Plain Python importing nothing of Django or of the project, so the Django-free probe client imports it too.
tests/scoring/test_vocabulary.py fails when another module lists check names, outcomes or metric keys.

A summary lists its metrics in its own order because the outputs do: the pages put output speed before
end-to-end latency, and the lab's level columns put TPOT and ITL before it. A summary's order is the order of
its JSON keys and of its CSV columns, so it is part of what API clients read.
"""
from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple, TypedDict, TypeVar

# --- compat checks ---------------------------------------------------------------------------------------------

# The compat suite's checks in the order it runs them (probe_client.compat registers each under its name), each
# with what a user who requires it to work asks for.
COMPAT_CHECK_CHOICES: tuple[tuple[str, str], ...] = (
    ("stream_usage", "Token counts at the end of a streamed answer"),
    ("logprobs", "Probabilities of the generated tokens"),
    ("top_logprobs", "The most likely alternatives for each token"),
    ("logit_bias", "Boosting or banning chosen tokens"),
    ("n", "Several answers to one request"),
    ("tools", "Tool (function) calling"),
    ("tool_choice_required", "Forcing the model to call a tool"),
    ("parallel_tool_calls", "Several tool calls in one answer"),
    ("strict_tools", "Tool arguments that always follow the function's schema (strict: true)"),
    ("json_object", "Answers that are always valid JSON"),
    ("json_schema", "Answers that follow your JSON schema"),
    ("tools_with_json_schema", "Tool calls and a JSON schema together"),
    ("streaming_tool_calls", "Tool calls streamed as they are written"),
    ("seed", "Repeatable sampling with a seed"),
    ("stop", "Stop sequences that end the answer"),
    ("max_completion_tokens", "A cap on answer length (max_completion_tokens)"),
)
COMPAT_CHECKS: tuple[str, ...] = tuple(name for name, _ in COMPAT_CHECK_CHOICES)


# --- compat outcomes -------------------------------------------------------------------------------------------


class Outcome(NamedTuple):
    value: str
    label: str
    symbol: str = ""
    meaning: str = ""


# The outcomes a check can have, by name (MEASURED_OUTCOMES says what each means).
SUPPORTED, ACCEPTED, IGNORED, REJECTED, ERROR = "supported", "accepted", "ignored", "rejected", "error"
# What one check found when it was measured (the rules of each check: probe_client.compat). A cell shows the
# symbol beside the label, so none relies on colour alone.
MEASURED_OUTCOMES: tuple[Outcome, ...] = (
    Outcome(SUPPORTED, "Supported", "✓", "accepted and the effect verified"),
    Outcome(ACCEPTED, "Accepted", "○", "accepted; the effect cannot be verified from the response"),
    Outcome(IGNORED, "Ignored", "⚠", "accepted, but the effect is verifiably absent"),
    Outcome(
        REJECTED, "Rejected", "✗", "refused with a 4xx status that blames the request, with the provider's message"
    ),
    Outcome(
        ERROR, "Error", "!",
        "5xx, timeout or broken stream, or a status that says nothing about the parameter (401, 403, 404, 408, 429)",
    ),
)
MEASURED_OUTCOME_BY_VALUE: Mapping[str, Outcome] = {outcome.value: outcome for outcome in MEASURED_OUTCOMES}
# What a tool's documentation or code states happens to one request parameter.
DOCUMENTED_OUTCOMES: tuple[Outcome, ...] = (
    Outcome("supported", "Supported"),
    Outcome("partial", "Partly supported"),
    Outcome("ignored", "Silently ignored"),
    Outcome("unsupported", "Documented as unsupported"),
    Outcome("rejected", "Rejected with an error"),
)
# A required check with one of these outcomes does not work for the user (scoring rules a tool out on them).
MEASURED_FAILURES = frozenset({"rejected", "ignored"})
DOCUMENTED_FAILURES = frozenset({"rejected", "ignored", "unsupported"})
# Outcomes a page lists as a problem of the target or a gap of the tool: anything short of working.
MEASURED_PROBLEMS = frozenset({"ignored", "rejected", "error"})
DOCUMENTED_GAPS = frozenset({"partial", "ignored", "unsupported", "rejected"})


# --- metrics ---------------------------------------------------------------------------------------------------


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
    how many a table cell shows; ``reported_as`` is the name of the figure publishers report for the same
    question (REPORTED_METRICS), empty when none does."""

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
# The measured metric a publisher's reported figure stands in for, by the name of that figure.
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


class ReportedMetric(NamedTuple):
    value: str
    label: str
    unit: str


# Figures third parties publish (catalog.models.ReportedFigure), with the unit they are stored in.
REPORTED_METRICS: tuple[ReportedMetric, ...] = (
    ReportedMetric("output_speed", "Output speed", "tok/s"),
    ReportedMetric("ttft", "Time to first token", "s"),
    ReportedMetric("time_to_first_answer_token", "Time to first answer token", "s"),
    ReportedMetric("e2e", "End-to-end response time", "s"),
    ReportedMetric("blended_price", "Blended price", "USD per 1M tokens"),
    ReportedMetric("throughput", "Total throughput", "tok/s"),
)


def percentile(values: Iterable[float | None], q: float) -> float | None:
    """The q-th percentile by linear interpolation between closest ranks (numpy's and pandas' default, the
    method vLLM's and SGLang's benchmark scripts report with); missing and NaN values are left out, and None
    when nothing is left."""
    data = sorted(v for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    position = (len(data) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(data) - 1)
    return data[lower] + (data[upper] - data[lower]) * (position - lower)


def percentiles(values: Iterable[float | None]) -> Percentiles:
    data = list(values)
    return Percentiles(**{name: percentile(data, q) for name, q in PERCENTILES.items()})


# --- model names, prices, workloads ----------------------------------------------------------------------------


def model_slug(name: str) -> str:
    """The model a catalog name, a price item or a provider's model id names, spelled as catalog slugs are:
    the last path segment (provider prefixes are path segments), lower case, each run of other characters than
    letters and digits one hyphen. 'GPT OSS 120B', 'gpt_oss.120B' and 'accounts/fireworks/models/gpt-oss-120b'
    all give 'gpt-oss-120b'."""
    tail = name.strip().rstrip("/").lower().rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9]+", "-", tail).strip("-")


# Blended price as secondary sources describe Artificial Analysis' convention: three parts input to one
# part output.
BLEND_INPUT_WEIGHT = 3
BLEND_OUTPUT_WEIGHT = 1

Price = TypeVar("Price", float, Decimal)


def blended_price(input_usd: Price, output_usd: Price) -> Price:
    """The blended price per 1M tokens of an input and an output price."""
    return (BLEND_INPUT_WEIGHT * input_usd + BLEND_OUTPUT_WEIGHT * output_usd) / (
        BLEND_INPUT_WEIGHT + BLEND_OUTPUT_WEIGHT
    )


_WORKLOAD_TOKENS = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)", re.IGNORECASE)


def workload_input_tokens(workload: str) -> int | None:
    """The approximate input size a workload name states ('in-1k' -> 1000), or None when it states none."""
    match = _WORKLOAD_TOKENS.search(workload)
    if not match:
        return None
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    return int(float(match.group(1)) * scale)
