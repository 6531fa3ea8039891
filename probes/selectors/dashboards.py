"""Read model of the /providers/ and /engines/ pages: one workload and concurrency side by side, the compat
matrix and seven days of history for the charts.

Every figure comes from precomputed rows (MeasurementSummary, CompatStatus, ProbeRun.summary); no request
aggregates raw RequestMeasurement rows. The selector runs a fixed number of queries, whatever the row count.
"""
from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from catalog.models import PriceItem, Tool
from probe_client.compat import CHECKS, CompatCheck
from probes.models import CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget
from probes.selectors.cells import (
    CompatCell,
    MetricFigures,
    WorkloadOption,
    age_since,
    excerpt,
    finite_number,
    stale_after,
)
from probes.selectors.prices import PriceQuote, match_price
from scoring.vocabulary import COMPAT_CHECKS, HEADLINE_METRICS, PAGE_METRICS, workload_input_tokens

PROVIDERS = "providers"
ENGINES = "engines"
AUDIENCES = (PROVIDERS, ENGINES)

HISTORY_WINDOW = dt.timedelta(days=7)


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
    def success_percent(self) -> float | None:
        """The 72-hour success rate in percent, matching the 72-hour medians beside it (None without recent
        requests)."""
        rate = None if self.summary is None else self.summary.success_rate_72h
        return None if rate is None else rate * 100

    def figure(self, key: str) -> float | None:
        for figures in self.all_figures:
            if figures.metric.key == key:
                return figures.median_72h
        return None


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
    def lines(self) -> list[tuple[str, CompatCheck | None, list[CompatCell]]]:
        """The matrix transposed for a table with checks as rows: one line per check, with the suite's registration
        of the check (what it sends and when it counts as supported; None for a check found in stored cells that
        the suite no longer runs) and one cell per target."""
        return [(name, CHECKS.get(name), [row.cells[position] for row in self.rows])
                for position, name in enumerate(self.checks)]


def _compat_matrix(targets: list[ProbeTarget], statuses: Iterable[CompatStatus]) -> CompatMatrix:
    by_target: dict[int, dict[str, CompatStatus]] = defaultdict(dict)
    for status in statuses:
        by_target[status.target_id][status.check_name] = status
    checks = list(COMPAT_CHECKS)
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
    def not_configured_targets(self) -> list[ProbeTarget]:
        return [target for target in self.targets if target.configuration == ProbeTarget.NOT_CONFIGURED]

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


HISTORY_FIELDS = tuple(f"summary__{metric.key}__p50" for metric in PAGE_METRICS) + ("summary__success_rate",)


def _history_series(targets: list[ProbeTarget], runs: Iterable[tuple]) -> list[dict]:
    """Per-target chart series from (target_id, moment, p50 of each metric..., success_rate) tuples."""
    points: dict[int, list[dict]] = defaultdict(list)
    for target_id, moment, *values in runs:
        *metric_values, success_rate = values
        point = {"t": int(moment.timestamp() * 1000), "at": moment, "success_rate": finite_number(success_rate)}
        for metric, value in zip(PAGE_METRICS, metric_values, strict=True):
            point[metric.key] = finite_number(value)
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
        all_figures = [MetricFigures.from_json(metric, metrics.get(metric.key)) for metric in PAGE_METRICS]
        age = age_since(summary.last_run_at, now) if summary else None
        rows.append(
            DashboardRow(
                target=target,
                configuration=target.configuration,
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
        percentile_window_days=settings.PROBE_SUMMARY_WINDOW_DAYS,
    )
