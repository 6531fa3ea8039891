"""Read models for the probe pages: /providers/, /engines/, /methodology/ and the measurements partial of a tool page.

Every figure comes from precomputed rows (MeasurementSummary, CompatStatus, ProbeRun.summary); no request
aggregates raw RequestMeasurement rows. Each selector runs a fixed number of queries, whatever the row count.
"""
from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

from celery.schedules import crontab
from celery.schedules import schedule as interval_schedule
from django.conf import settings
from django.db.models import F, Max, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from catalog.models import PriceItem, Tool
from probes.client import COMPAT_CHECKS, WORKLOADS
from probes.client import metrics as client_metrics
from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget

PROVIDERS = "providers"
ENGINES = "engines"
AUDIENCES = (PROVIDERS, ENGINES)

READY = "ready"
NOT_CONFIGURED = "not_configured"
DISABLED = "disabled"

HISTORY_WINDOW = dt.timedelta(days=7)
# Speed workloads run about every 3 hours and the parallel test daily: a figure older than a day (two days for a
# daily scenario) means at least several scheduled runs were missed.
STALE_AFTER_SINGLE_STREAM = dt.timedelta(hours=24)
STALE_AFTER_PARALLEL = dt.timedelta(hours=48)

# Blended price as secondary sources describe Artificial Analysis' convention: 3 parts input to 1 part output.
BLEND_INPUT_WEIGHT = 3
BLEND_OUTPUT_WEIGHT = 1

OUTCOME_SYMBOLS = {
    CompatOutcome.Outcome.SUPPORTED: "✓",
    CompatOutcome.Outcome.ACCEPTED: "○",
    CompatOutcome.Outcome.IGNORED: "⚠",
    CompatOutcome.Outcome.REJECTED: "✗",
    CompatOutcome.Outcome.ERROR: "!",
}
OUTCOME_MEANINGS = {
    CompatOutcome.Outcome.SUPPORTED: "accepted and the effect verified",
    CompatOutcome.Outcome.ACCEPTED: "accepted; the effect cannot be verified from the response",
    CompatOutcome.Outcome.IGNORED: "accepted, but the effect is verifiably absent",
    CompatOutcome.Outcome.REJECTED: "refused with a 4xx status that blames the request, with the provider's message",
    CompatOutcome.Outcome.ERROR: (
        "5xx, timeout or broken stream, or a status that says nothing about the parameter (401, 403, 404, 408, 429)"
    ),
}

# What each compat check sends and what counts as support, after docs/probes-measurement.md section 4.
CHECK_DESCRIPTIONS = {
    "stream_usage": ("a stream with stream_options.include_usage", "a usage object with completion_tokens arrives"),
    "logprobs": ("logprobs: true", "log-probabilities come back (OpenAI or Together shape)"),
    "top_logprobs": ("logprobs: true, top_logprobs: 3", "at least two alternatives per token"),
    "logit_bias": ("a +100 bias on one token, 5 tokens long", "the answer is one token repeated"),
    "n": ("n: 2", "two choices come back"),
    "tools": ("one get_weather tool, tool_choice: auto", "a get_weather call with JSON-object arguments"),
    "tool_choice_required": ("tool_choice: required with a prompt that needs no tool", "a tool call anyway"),
    "parallel_tool_calls": ("parallel_tool_calls: false with a question about two cities", "exactly one call"),
    "json_object": ("response_format: json_object", "the answer parses as a JSON object"),
    "json_schema": ("a strict json_schema", "the answer validates against the schema"),
    "tools_with_json_schema": ("tools and a json_schema in one request", "the answer validates against the schema"),
    "streaming_tool_calls": ("a stream with a tool", "the deltas assemble into a call with JSON arguments"),
    "seed": ("two samples at temperature 1.0 with the same seed", "identical answers"),
    "stop": ('a request to count from 1 to 10, with stop: ["5"]', "no “5” and finish_reason stop"),
    "max_completion_tokens": ("max_completion_tokens: 5 without max_tokens", "at most 5 tokens, finish_reason length"),
}


def outcome_legend() -> list[tuple[str, str, str, str]]:
    """(outcome, symbol, label, meaning) for every compat outcome, so no cell relies on colour alone."""
    return [
        (outcome, OUTCOME_SYMBOLS[outcome], label, OUTCOME_MEANINGS[outcome])
        for outcome, label in CompatOutcome.Outcome.choices
    ]


@dataclass(frozen=True)
class MetricDefinition:
    key: str
    label: str
    short_label: str
    unit: str
    decimals: int
    higher_is_better: bool


METRICS = (
    MetricDefinition("ttft_ms", "Time to first token", "TTFT", "ms", 0, False),
    MetricDefinition("ttfat_ms", "Time to first answer token", "TTFAT", "ms", 0, False),
    MetricDefinition("output_speed_tps", "Output speed", "Output speed", "tok/s", 1, True),
    MetricDefinition("e2e_ms", "End-to-end latency", "E2E", "ms", 0, False),
    MetricDefinition("tpot_ms", "Time per output token", "TPOT", "ms", 1, False),
)
HEADLINE_METRICS = METRICS[:4]


def _number(value: object) -> float | None:
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
    metric: MetricDefinition
    median_72h: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None

    @classmethod
    def from_json(cls, metric: MetricDefinition, figures: object) -> MetricFigures:
        if not isinstance(figures, Mapping):
            return cls(metric)
        return cls(
            metric,
            median_72h=_number(figures.get("median_72h")),
            p50=_number(figures.get("p50")),
            p95=_number(figures.get("p95")),
            p99=_number(figures.get("p99")),
        )

    def _value(self, value: float | None) -> FigureValue:
        return FigureValue(value, self.metric.decimals, self.metric.unit)

    @property
    def median(self) -> FigureValue:
        return self._value(self.median_72h)

    @property
    def percentile_values(self) -> list[FigureValue]:
        return [self._value(self.p50), self._value(self.p95), self._value(self.p99)]


def target_configuration(target: ProbeTarget) -> str:
    """Whether the target is probed: an enabled target whose key variable is unset is 'not configured'.

    Only the presence of the variable is checked; its value is never read into the page.
    """
    if not target.enabled:
        return DISABLED
    return READY if target.is_configured else NOT_CONFIGURED


def percentile_window_days() -> int | None:
    """How many days of requests the summaries' p50/p95/p99 cover, as the summary service is configured."""
    return getattr(settings, "PROBE_SUMMARY_WINDOW_DAYS", None)


def stale_after(concurrency: int) -> dt.timedelta:
    return STALE_AFTER_SINGLE_STREAM if concurrency <= 1 else STALE_AFTER_PARALLEL


def _age(moment: dt.datetime | None, now: dt.datetime) -> dt.timedelta | None:
    return None if moment is None else max(now - moment, dt.timedelta(0))


_WORKLOAD_TOKENS = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)", re.IGNORECASE)


def workload_input_tokens(workload: str) -> int | None:
    """The approximate input size a workload name states ('in-1k' -> 1000), or None when it states none."""
    match = _WORKLOAD_TOKENS.search(workload)
    if not match:
        return None
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    return int(float(match.group(1)) * scale)


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


@dataclass(frozen=True)
class PriceQuote:
    item: PriceItem

    @property
    def input_usd(self) -> Decimal:
        return self.item.input_usd_per_mtok

    @property
    def output_usd(self) -> Decimal:
        return self.item.output_usd_per_mtok

    @property
    def blended_usd(self) -> Decimal:
        weights = BLEND_INPUT_WEIGHT + BLEND_OUTPUT_WEIGHT
        return (BLEND_INPUT_WEIGHT * self.input_usd + BLEND_OUTPUT_WEIGHT * self.output_usd) / weights

    @property
    def input_text(self) -> str:
        return usd_text(self.input_usd)

    @property
    def output_text(self) -> str:
        return usd_text(self.output_usd)


def usd_text(amount: Decimal) -> str:
    """A price as the source states it, at least to the cent: 0.1500 -> '0.15', 0.0750 -> '0.075', 2 -> '2.00'."""
    text = f"{amount.normalize():f}"
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents.ljust(2, '0')}"


def _model_key(text: str) -> str:
    last_segment = text.strip().rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9]", "", last_segment.lower())


def match_price(target: ProbeTarget, prices: Iterable[PriceItem]) -> PriceQuote | None:
    """The catalog's per-1M-token price of the target's model at the target's tool, on-demand tier first.

    Model ids carry provider prefixes ('accounts/fireworks/models/gpt-oss-120b', 'openai/gpt-oss-120b') that price
    lists do not, so both sides are compared by their last path segment with punctuation removed.
    """
    wanted = _model_key(target.model_id)
    if not wanted:
        return None
    candidates = [
        price
        for price in prices
        if price.tool_id == target.tool_id
        and price.input_usd_per_mtok is not None
        and price.output_usd_per_mtok is not None
    ]
    # Only the same model: a near name ("llama-3-70b" inside "llama-3-70b-versatile") may be priced differently.
    exact = [price for price in candidates if _model_key(price.item) == wanted]
    if not exact:
        return None
    exact.sort(key=lambda price: (price.tier != PriceItem.Tier.ON_DEMAND, price.position, price.pk))
    return PriceQuote(exact[0])


@dataclass
class DashboardRow:
    target: ProbeTarget
    configuration: str
    summary: MeasurementSummary | None
    figures: list[MetricFigures]
    all_figures: list[MetricFigures]
    price: PriceQuote | None
    age: dt.timedelta | None
    stale: bool
    measured_elsewhere: bool = False

    @property
    def success_rate(self) -> float | None:
        """The 72-hour success rate, matching the 72-hour medians beside it (None without recent requests)."""
        return None if self.summary is None else self.summary.success_rate_72h

    @property
    def success_percent(self) -> float | None:
        rate = self.success_rate
        return None if rate is None else rate * 100

    def figure(self, key: str) -> float | None:
        for figures in self.all_figures:
            if figures.metric.key == key:
                return figures.median_72h
        return None


@dataclass(frozen=True)
class CheckDescription:
    name: str
    request: str
    supported_when: str


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
        return OUTCOME_SYMBOLS.get(self.outcome, "–")

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


@dataclass
class CompatRow:
    target: ProbeTarget
    cells: list[CompatCell]
    last_checked_at: dt.datetime | None


@dataclass
class CompatMatrix:
    checks: list[str]
    rows: list[CompatRow]

    @property
    def has_data(self) -> bool:
        return bool(self.rows)

    @property
    def by_check(self) -> list[tuple[str, list[CompatCell]]]:
        """The matrix transposed: one line per check, one cell per target, for a table with checks as rows."""
        return [(check, [row.cells[position] for row in self.rows]) for position, check in enumerate(self.checks)]

    @property
    def lines(self) -> list[tuple[CheckDescription, list[CompatCell]]]:
        """by_check with what each check sends and when it counts as supported."""
        return [
            (CheckDescription(check, *CHECK_DESCRIPTIONS.get(check, ("", ""))), cells)
            for check, cells in self.by_check
        ]


def compat_check_names() -> list[str]:
    """The suite's check names in the order the probe client runs them."""
    return list(COMPAT_CHECKS)


def compat_check_descriptions() -> list[CheckDescription]:
    """Every check the client runs with what it sends and what counts as supported."""
    return [
        CheckDescription(name, *CHECK_DESCRIPTIONS.get(name, ("", ""))) for name in compat_check_names()
    ]


def _compat_matrix(targets: list[ProbeTarget], statuses: Iterable[CompatStatus]) -> CompatMatrix:
    by_target: dict[int, dict[str, CompatStatus]] = defaultdict(dict)
    for status in statuses:
        by_target[status.target_id][status.check_name] = status
    checks = compat_check_names()
    extra = sorted({name for cells in by_target.values() for name in cells} - set(checks))
    checks += extra
    rows = []
    for target in targets:
        cells = by_target.get(target.pk)
        if not cells:
            continue
        rows.append(
            CompatRow(
                target=target,
                cells=[CompatCell(name, target.slug, cells.get(name)) for name in checks],
                last_checked_at=max(status.checked_at for status in cells.values()),
            )
        )
    return CompatMatrix(checks=checks, rows=rows)


@dataclass
class Dashboard:
    audience: str
    targets: list[ProbeTarget]
    rows: list[DashboardRow]
    options: list[WorkloadOption]
    selected: WorkloadOption | None
    notices: list[str]
    compat: CompatMatrix
    chart_data: dict
    now: dt.datetime
    percentile_window_days: int | None = None

    @property
    def disabled_targets(self) -> list[ProbeTarget]:
        return [target for target in self.targets if not target.enabled]

    @property
    def not_configured_targets(self) -> list[ProbeTarget]:
        return [target for target in self.targets if target_configuration(target) == NOT_CONFIGURED]

    @property
    def has_measurements(self) -> bool:
        return bool(self.options)

    @property
    def measured_rows(self) -> list[DashboardRow]:
        return [row for row in self.rows if row.summary is not None]

    @property
    def shows_prices(self) -> bool:
        return self.audience == PROVIDERS

    @property
    def stale_after_hours(self) -> int | None:
        if self.selected is None:
            return None
        return int(stale_after(self.selected.concurrency).total_seconds() // 3600)


def _audience_filter(audience: str, prefix: str = "") -> Q:
    provider = Q(**{f"{prefix}tool__kind": Tool.Kind.PROVIDER})
    return provider if audience == PROVIDERS else ~provider


HISTORY_FIELDS = tuple(f"summary__{metric.key}__p50" for metric in METRICS) + ("summary__success_rate",)


def _history_series(targets: list[ProbeTarget], runs: Iterable[tuple]) -> list[dict]:
    """Per-target chart series from (target_id, moment, p50 of each metric..., success_rate) tuples."""
    points: dict[int, list[dict]] = defaultdict(list)
    for target_id, moment, *values in runs:
        *metric_values, success_rate = values
        point = {"t": int(moment.timestamp() * 1000), "success_rate": _number(success_rate)}
        for metric, value in zip(METRICS, metric_values, strict=True):
            point[metric.key] = _number(value)
        points[target_id].append(point)
    return [
        {"slug": target.slug, "name": target.name, "points": sorted(points[target.pk], key=lambda p: p["t"])}
        for target in targets
        if points.get(target.pk)
    ]


def _chart_data(rows: list[DashboardRow], history: list[dict], selected: WorkloadOption, now: dt.datetime) -> dict:
    points = []
    for row in rows:
        if row.summary is None:
            continue
        price = row.price
        points.append(
            {
                "slug": row.target.slug,
                "name": row.target.name,
                "hardware": row.target.hardware,
                "ttft_ms": row.figure("ttft_ms"),
                "output_speed_tps": row.figure("output_speed_tps"),
                "e2e_ms": row.figure("e2e_ms"),
                "input_usd": float(price.input_usd) if price else None,
                "output_usd": float(price.output_usd) if price else None,
                "blended_usd": float(price.blended_usd) if price else None,
            }
        )
    # The history axis always spans the whole window, so one run does not stretch it over months.
    window = {"from": int((now - HISTORY_WINDOW).timestamp() * 1000), "to": int(now.timestamp() * 1000)}
    return {
        "workload": selected.workload,
        "concurrency": selected.concurrency,
        "points": points,
        "history": history,
        "history_window": window,
    }


def _quoted(text: str, limit: int) -> str:
    """A query value fit to quote back in a notice: printable characters only, cut to `limit`."""
    return excerpt("".join(character for character in text if character.isprintable()), limit)


def _choose_option(
    options: list[WorkloadOption], requested_workload: str | None, requested_concurrency: str | None
) -> tuple[WorkloadOption | None, list[str]]:
    notices: list[str] = []
    if not options:
        if requested_workload or requested_concurrency:
            notices.append("Nothing has been measured yet, so the workload and concurrency choices were ignored.")
        return None, notices
    # The default is the single-stream workload measured for the most targets (the smallest input on a tie).
    default = min(options, key=lambda option: (option.concurrency != 1, -option.targets_measured, option.sort_key))
    workloads = sorted(
        {option.workload for option in options}, key=lambda name: (workload_input_tokens(name) or 0, name)
    )

    workload = default.workload
    if requested_workload:
        if requested_workload in workloads:
            workload = requested_workload
        else:
            notices.append(
                f"Unknown workload “{_quoted(requested_workload, 60)}”: choose one of {', '.join(workloads)}. "
                f"Showing {workload} instead."
            )
    for_workload = [option for option in options if option.workload == workload]
    concurrency_default = min(for_workload, key=lambda option: (option.concurrency != 1, option.concurrency))
    chosen = concurrency_default
    if requested_concurrency:
        value = requested_concurrency.strip()
        number = int(value) if re.fullmatch(r"[0-9]{1,6}", value) else None
        matching = [option for option in for_workload if option.concurrency == number]
        if matching:
            chosen = matching[0]
        else:
            allowed = ", ".join(str(option.concurrency) for option in for_workload)
            notices.append(
                f"Invalid concurrency “{_quoted(value, 20)}” for workload {workload}: choose one of {allowed}. "
                f"Showing {chosen.concurrency} instead."
            )
    return chosen, notices


def dashboard_for(
    *,
    audience: str,
    requested_workload: str | None = None,
    requested_concurrency: str | None = None,
    now: dt.datetime | None = None,
) -> Dashboard:
    """The side-by-side page of hosted providers or self-hosted engines for one workload and concurrency.

    Five queries for providers (targets, summaries, prices, compat statuses, 7-day run history), four for engines.
    """
    if audience not in AUDIENCES:
        raise ValueError(f"audience must be one of {AUDIENCES}, not {audience!r}")
    now = now or timezone.now()
    all_targets = list(ProbeTarget.objects.filter(_audience_filter(audience)).select_related("tool"))
    # The region the last run came from, without loading the run's JSON snapshots.
    summaries = list(
        MeasurementSummary.objects.filter(_audience_filter(audience, "target__")).annotate(
            last_run_region=F("last_run__region")
        )
    )

    measured_per_option: dict[tuple[str, int], int] = defaultdict(int)
    for summary in summaries:
        measured_per_option[(summary.workload, summary.concurrency)] += 1
    options = sorted(
        (
            WorkloadOption(workload, concurrency, count)
            for (workload, concurrency), count in measured_per_option.items()
        ),
        key=lambda option: option.sort_key,
    )
    selected, notices = _choose_option(options, requested_workload, requested_concurrency)

    selected_summaries = {
        summary.target_id: summary
        for summary in summaries
        if selected and (summary.workload, summary.concurrency) == (selected.workload, selected.concurrency)
    }
    # Disabled targets are templates until an operator enables them; they are listed only with past figures.
    shown_targets = [target for target in all_targets if target.enabled or target.pk in selected_summaries]
    measured_target_ids = {summary.target_id for summary in summaries}
    if audience == ENGINES:
        # Figures are comparable only on the same hardware, so rows of one machine stay together.
        shown_targets.sort(key=lambda target: (target.hardware.lower() or "~", target.name.lower()))

    prices: list[PriceItem] = []
    if audience == PROVIDERS and shown_targets:
        prices = list(
            PriceItem.objects.filter(
                tool_id__in={target.tool_id for target in shown_targets}, unit=PriceItem.Unit.PER_MTOK
            ).select_related("source")
        )

    rows = []
    for target in shown_targets:
        summary = selected_summaries.get(target.pk)
        metrics = summary.metrics if summary and isinstance(summary.metrics, Mapping) else {}
        all_figures = [MetricFigures.from_json(metric, metrics.get(metric.key)) for metric in METRICS]
        age = _age(summary.last_run_at, now) if summary else None
        rows.append(
            DashboardRow(
                target=target,
                configuration=target_configuration(target),
                summary=summary,
                figures=all_figures[: len(HEADLINE_METRICS)],
                all_figures=all_figures,
                price=match_price(target, prices) if audience == PROVIDERS else None,
                age=age,
                stale=age is not None and age > stale_after(summary.concurrency),
                measured_elsewhere=summary is None and target.pk in measured_target_ids,
            )
        )

    statuses = (
        CompatStatus.objects.filter(_audience_filter(audience, "target__"))
        .only("target_id", "check_name", "outcome", "http_status", "message", "detail", "checked_at")
        .order_by()
    )
    compat = _compat_matrix(shown_targets, statuses)

    history: list[dict] = []
    if selected is not None:
        runs = (
            ProbeRun.objects.filter(
                _audience_filter(audience, "target__"),
                suite=ProbeRun.Suite.SPEED,
                workload=selected.workload,
                concurrency=selected.concurrency,
                queued_at__gte=now - HISTORY_WINDOW,
                status__in=[ProbeRun.Status.SUCCEEDED, ProbeRun.Status.PARTIAL],
            )
            .annotate(moment=Coalesce("started_at", "queued_at"))
            .values_list("target_id", "moment", *HISTORY_FIELDS)
            .order_by()
        )
        history = _history_series(shown_targets, runs)

    return Dashboard(
        audience=audience,
        targets=all_targets,
        rows=rows,
        options=options,
        selected=selected,
        notices=notices,
        compat=compat,
        chart_data=_chart_data(rows, history, selected, now) if selected else {},
        now=now,
        percentile_window_days=percentile_window_days(),
    )


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
        age = _age(summary.last_run_at, now)
        speed.append(
            FreshnessRow(
                target=summary.target,
                configuration=target_configuration(summary.target),
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
        age = _age(entry["last_checked_at"], now)
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


def _describe_crontab(minute: str, hour: str, day_of_month: str, month: str, day_of_week: str) -> str:
    expression = f"cron “{minute} {hour} {day_of_month} {month} {day_of_week}” ({settings.CELERY_TIMEZONE})"
    if (day_of_month, month, day_of_week) != ("*", "*", "*") or not minute.isdigit():
        return expression
    if hour.startswith("*/") and hour[2:].isdigit():
        return f"every {hour[2:]} hours at minute {minute} — {expression}"
    if hour.isdigit():
        return f"daily at {int(hour):02d}:{int(minute):02d} — {expression}"
    return expression


def _describe_schedule(schedule: object) -> str:
    if isinstance(schedule, crontab):
        # crontab keeps the expression as written only in its _orig_* attributes; the public ones are expanded sets.
        return _describe_crontab(
            *(
                str(getattr(schedule, attribute))
                for attribute in (
                    "_orig_minute", "_orig_hour", "_orig_day_of_month", "_orig_month_of_year", "_orig_day_of_week"
                )
            )
        )
    if isinstance(schedule, interval_schedule):
        schedule = schedule.run_every
    if isinstance(schedule, int | float):
        schedule = dt.timedelta(seconds=schedule)
    if isinstance(schedule, dt.timedelta):
        seconds = schedule.total_seconds()
        if seconds >= 3600 and seconds % 3600 == 0:
            hours = int(seconds // 3600)
            return f"every {hours} hour{'s' if hours != 1 else ''}"
        if seconds >= 60 and seconds % 60 == 0:
            return f"every {int(seconds // 60)} minutes"
        return f"every {seconds:g} seconds"
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
        entries.append(ScheduleEntry(name, task, _describe_schedule(entry.get("schedule")), _describe_arguments(entry)))
    return entries


@dataclass(frozen=True)
class BufferedStreamRule:
    share_percent: float


def buffered_stream_rule() -> BufferedStreamRule:
    """The threshold the probe client flags a buffered stream with, for the methodology page to quote."""
    return BufferedStreamRule(share_percent=client_metrics.BUFFERED_SHARE * 100)


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
    metrics: tuple[MetricDefinition, ...] = field(default=HEADLINE_METRICS)

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
            age = _age(summary.last_run_at, now)
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
        for outcome, label in CompatOutcome.Outcome.choices:
            count = sum(1 for status in target_statuses if status.outcome == outcome)
            if count:
                counts.append((outcome, f"{OUTCOME_SYMBOLS[outcome]} {label}", count))
        problems = [
            status
            for status in target_statuses
            if status.outcome
            in (CompatOutcome.Outcome.IGNORED, CompatOutcome.Outcome.REJECTED, CompatOutcome.Outcome.ERROR)
        ]
        entries.append(ToolTargetMeasurements(target, target_configuration(target), workloads, counts, problems))
    url_name = "probes:providers" if tool.kind == Tool.Kind.PROVIDER else "probes:engines"
    return ToolMeasurements(tool=tool, targets=entries, dashboard_url_name=url_name, now=now)
