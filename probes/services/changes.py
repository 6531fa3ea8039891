"""Measured changes: a probe target whose figures moved beyond their own run-to-run spread, or whose compat
outcome flipped, written to the change record (catalog.models.Change) as a measured regression or recovery.

The rule (docs/changes.md): a series is one target × workload × concurrency × figure (TTFT p50, output speed
p50, error rate). Its reference is the median of its last BASELINE_RUNS finished speed runs, at least
MIN_BASELINE_RUNS of them, each with at least MIN_REQUESTS requests, all finished after the series' last change;
its spread is the largest distance of one of those runs from the reference. A new run of at least MIN_REQUESTS
requests that is worse than the reference by more than max(SPREAD_FACTOR × spread, the figure's floor) is a
regression. A regressed series recovers when a run of enough requests is back within that band of the reference
it regressed from. One entry per crossing: a series that stays regressed writes nothing more.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from django.db import transaction
from django.urls import reverse

from catalog.changes import changes_save, model_for
from catalog.models import Change
from probes.models import CompatOutcome, ProbeRun
from probes.services.summaries import MEASURED_STATUSES
from scoring.vocabulary import MEASURED_OUTCOME_BY_VALUE, OUTPUT_SPEED, TTFT

BASELINE_RUNS = 5
MIN_BASELINE_RUNS = 3
MIN_REQUESTS = 5
SPREAD_FACTOR = 2.0
# Outcomes under which a check works for the user; a flip across this line is a measured change.
WORKING_OUTCOMES = frozenset({"supported", "accepted"})


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    higher_is_worse: bool
    # The least move that counts, however steady the series: relative to the reference, or absolute.
    relative_floor: float = 0.0
    absolute_floor: float = 0.0

    def value(self, summary: dict) -> float | None:
        if (summary.get("requests") or 0) < MIN_REQUESTS:
            return None
        if self.key == "error_rate":
            rate = summary.get("success_rate")
            return None if rate is None else round(1 - rate, 4)
        if (summary.get("succeeded") or 0) < MIN_REQUESTS:
            return None
        return (summary.get(self.key) or {}).get("p50")

    def text(self, value: float) -> str:
        return f"{value:.0%}" if self.key == "error_rate" else f"{value:,.{0 if self.unit == 'ms' else 1}f} {self.unit}"


FIGURES = (
    Figure(TTFT.key, "TTFT p50", TTFT.unit, higher_is_worse=True, relative_floor=0.25),
    Figure(OUTPUT_SPEED.key, "output speed p50", OUTPUT_SPEED.unit, higher_is_worse=False, relative_floor=0.25),
    Figure("error_rate", "error rate", "", higher_is_worse=True, absolute_floor=0.10),
)


def _band(figure: Figure, values: list[float]) -> dict[str, float]:
    reference = statistics.median(values)
    spread = max(abs(value - reference) for value in values)
    threshold = max(SPREAD_FACTOR * spread, figure.relative_floor * abs(reference), figure.absolute_floor)
    return {"reference": round(reference, 4), "spread": round(spread, 4), "threshold": round(threshold, 4)}


def _worse_by(figure: Figure, value: float, reference: float) -> float:
    return value - reference if figure.higher_is_worse else reference - value


def _series(run: ProbeRun, figure: Figure) -> str:
    return f"probe:{run.target_id}:{run.workload}:{run.concurrency}:{figure.key}"


def _where(run: ProbeRun) -> str:
    return f"{run.target.name}, {run.workload or 'default workload'} at concurrency {run.concurrency}"


def _change(run: ProbeRun, *, kind: str, title: str, series: str, subject: str, before: dict, after: dict) -> Change:
    target = run.target
    return Change(
        kind=kind, title=title[:300], subject=subject[:200], series=series, before=before, after=after,
        tool=target.tool, model=model_for(tool=target.tool, model_id=target.model_id),
        effective_on=(run.finished_at or run.queued_at).date(),
        url=reverse("api:probe-run-detail", kwargs={"pk": run.pk}),
    )


@transaction.atomic
def measured_changes_record(*, run: ProbeRun) -> list[Change]:
    """The regressions and recoveries a finished speed run shows against its own series (docs/changes.md)."""
    if run.status not in MEASURED_STATUSES or run.suite != ProbeRun.Suite.SPEED:
        return []
    found = []
    for figure in FIGURES:
        value = figure.value(run.summary or {})
        if value is None:
            continue
        series = _series(run, figure)
        last = Change.objects.filter(series=series).order_by("-recorded_at", "-id").first()
        if last is not None and last.kind == Change.Kind.REGRESSION:
            band = last.before
            if _worse_by(figure, value, band["reference"]) <= band["threshold"]:
                found.append(_change(
                    run, kind=Change.Kind.RECOVERY, series=series, subject=figure.label, before=band,
                    after={"value": value, "run": run.pk},
                    title=f"{_where(run)}: {figure.label} back to {figure.text(value)} "
                          f"(reference {figure.text(band['reference'])})",
                ))
            continue
        previous = ProbeRun.objects.filter(
            target_id=run.target_id, suite=ProbeRun.Suite.SPEED, workload=run.workload, concurrency=run.concurrency,
            status__in=MEASURED_STATUSES, finished_at__lt=run.finished_at,
        )
        if last is not None:
            previous = previous.filter(finished_at__gt=last.recorded_at)
        summaries = previous.order_by("-finished_at", "-id").values_list("summary", flat=True)[:BASELINE_RUNS]
        values = [v for v in (figure.value(summary or {}) for summary in summaries) if v is not None]
        if len(values) < MIN_BASELINE_RUNS:
            continue
        band = _band(figure, values)
        if _worse_by(figure, value, band["reference"]) > band["threshold"]:
            found.append(_change(
                run, kind=Change.Kind.REGRESSION, series=series, subject=figure.label,
                before={**band, "runs": len(values)}, after={"value": value, "run": run.pk},
                title=f"{_where(run)}: {figure.label} {figure.text(band['reference'])} → {figure.text(value)}",
            ))
    return changes_save(found)


def _outcome(value: str) -> str:
    return MEASURED_OUTCOME_BY_VALUE[value].label.lower()


@transaction.atomic
def compat_changes_record(*, run: ProbeRun) -> list[Change]:
    """Checks whose outcome crossed between working (supported, accepted) and not, against the target's previous
    finished compat run: a regression or a recovery each."""
    if run.status not in MEASURED_STATUSES or run.suite != ProbeRun.Suite.COMPAT:
        return []
    previous = ProbeRun.objects.filter(
        target_id=run.target_id, suite=ProbeRun.Suite.COMPAT, status__in=MEASURED_STATUSES,
        finished_at__lt=run.finished_at,
    ).order_by("-finished_at", "-id").first()
    if previous is None:
        return []
    outcomes = {
        (run_id, check): outcome
        for run_id, check, outcome in CompatOutcome.objects.filter(run__in=[run, previous]).values_list(
            "run_id", "check_name", "outcome")
    }
    found = []
    for (run_id, check), outcome in sorted(outcomes.items()):
        old = outcomes.get((previous.pk, check))
        if run_id != run.pk or old is None or (old in WORKING_OUTCOMES) == (outcome in WORKING_OUTCOMES):
            continue
        kind = Change.Kind.RECOVERY if outcome in WORKING_OUTCOMES else Change.Kind.REGRESSION
        found.append(_change(
            run, kind=kind, series=f"compat:{run.target_id}:{check}", subject=check,
            before={"outcome": old, "run": previous.pk}, after={"outcome": outcome, "run": run.pk},
            title=f"{run.target.name}: {check} {_outcome(old)} → {_outcome(outcome)}",
        ))
    return changes_save(found)
