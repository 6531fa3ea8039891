"""Summary maths against hand-computed values, the 72-hour and 30-day windows, and latest-wins compat cells."""
import datetime as dt

import pytest

from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun
from probes.services.summaries import compat_statuses_refresh, probe_summaries_refresh, rounded_percentiles
from tests.factories import (
    CompatOutcomeFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
    RequestMeasurementFactory,
)

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


def _request(run, *, hours_ago, ttft, ok=True, speed=100.0):
    return RequestMeasurementFactory(
        run=run,
        started_at=NOW - dt.timedelta(hours=hours_ago),
        ok=ok,
        ttft_ms=ttft,
        ttfat_ms=ttft,
        e2e_ms=ttft * 10 if ttft is not None else None,
        output_speed_tps=speed,
        tpot_ms=5.0,
    )


@pytest.fixture
def measured_target():
    target = ProbeTargetFactory()
    run = ProbeRunFactory(
        target=target,
        workload="in-100",
        concurrency=1,
        status=ProbeRun.Status.PARTIAL,
        started_at=NOW - dt.timedelta(hours=101),
        finished_at=NOW - dt.timedelta(minutes=50),
    )
    # Inside 72 h: 100, 200, 300 ms and one failure; inside 30 days but older than 72 h: 400, 500 ms.
    for ttft in (100.0, 200.0, 300.0):
        _request(run, hours_ago=1, ttft=ttft)
    _request(run, hours_ago=2, ttft=None, ok=False)
    for ttft in (400.0, 500.0):
        _request(run, hours_ago=100, ttft=ttft)
    # Older than the 30-day window: must not count anywhere.
    old_run = ProbeRunFactory(
        target=target, workload="in-100", status=ProbeRun.Status.SUCCEEDED,
        started_at=NOW - dt.timedelta(days=40), finished_at=NOW - dt.timedelta(days=40),
    )
    _request(old_run, hours_ago=24 * 40, ttft=10_000.0)
    return target, run


def test_percentiles_use_linear_interpolation():
    assert rounded_percentiles([100, 200, 300, 400, 500]) == {"p50": 300.0, "p95": 480.0, "p99": 496.0}
    assert rounded_percentiles([None, 7.0]) == {"p50": 7.0, "p95": 7.0, "p99": 7.0}
    assert rounded_percentiles([]) == {"p50": None, "p95": None, "p99": None}


def test_summary_matches_hand_computed_figures(measured_target):
    target, run = measured_target
    [summary] = probe_summaries_refresh(target=target, now=NOW)

    ttft = summary.metrics["ttft_ms"]
    # Successful requests in 30 days: 100..500 -> p50 300, p95 400 + 0.8 * 100, p99 400 + 0.96 * 100.
    assert (ttft["p50"], ttft["p95"], ttft["p99"]) == (300.0, 480.0, 496.0)
    # Only the 100/200/300 requests are inside 72 hours.
    assert ttft["median_72h"] == 200.0
    assert summary.metrics["e2e_ms"]["median_72h"] == 2000.0
    assert summary.samples == 5
    assert summary.samples_72h == 3
    assert summary.success_rate == pytest.approx(5 / 6, abs=1e-4)
    assert summary.success_rate_72h == pytest.approx(3 / 4, abs=1e-4)
    assert summary.last_run_id == run.pk
    assert set(summary.metrics) == {"ttft_ms", "ttfat_ms", "e2e_ms", "output_speed_tps", "tpot_ms"}


def test_refresh_is_an_idempotent_upsert(measured_target):
    target, _ = measured_target
    first = probe_summaries_refresh(target=target, now=NOW)[0].metrics
    second = probe_summaries_refresh(target=target, now=NOW)[0].metrics
    assert first == second
    assert MeasurementSummary.objects.filter(target=target).count() == 1


def test_a_group_without_recent_requests_shows_no_figures(measured_target):
    target, _ = measured_target
    [summary] = probe_summaries_refresh(target=target, now=NOW + dt.timedelta(days=60))
    assert summary.samples == 0
    assert summary.metrics == {}
    assert summary.success_rate is None


def test_groups_are_split_by_workload_and_concurrency():
    target = ProbeTargetFactory()
    for workload, concurrency, ttft in (("in-100", 1, 50.0), ("in-1k", 1, 150.0), ("in-1k", 10, 900.0)):
        run = ProbeRunFactory(
            target=target, workload=workload, concurrency=concurrency,
            started_at=NOW - dt.timedelta(hours=1), finished_at=NOW - dt.timedelta(hours=1),
        )
        _request(run, hours_ago=1, ttft=ttft)
    summaries = {(s.workload, s.concurrency): s for s in probe_summaries_refresh(target=target, now=NOW)}
    assert summaries[("in-100", 1)].metrics["ttft_ms"]["p50"] == 50.0
    assert summaries[("in-1k", 1)].metrics["ttft_ms"]["p50"] == 150.0
    assert summaries[("in-1k", 10)].metrics["ttft_ms"]["median_72h"] == 900.0


def test_compat_status_takes_the_latest_finished_run_per_check():
    target = ProbeTargetFactory()
    older = ProbeRunFactory(target=target, suite="compat", workload="", finished_at=NOW - dt.timedelta(days=2))
    newer = ProbeRunFactory(target=target, suite="compat", workload="", finished_at=NOW - dt.timedelta(hours=1))
    unfinished = ProbeRunFactory(target=target, suite="compat", workload="", status=ProbeRun.Status.RUNNING)
    CompatOutcomeFactory(run=older, check_name="logprobs", outcome="rejected", http_status=400, message="no")
    CompatOutcomeFactory(run=older, check_name="seed", outcome="accepted")
    CompatOutcomeFactory(run=newer, check_name="logprobs", outcome="supported")
    CompatOutcomeFactory(run=unfinished, check_name="logprobs", outcome="error")

    compat_statuses_refresh(target=target)
    compat_statuses_refresh(target=target)

    cells = {s.check_name: s for s in CompatStatus.objects.filter(target=target)}
    assert cells["logprobs"].outcome == CompatOutcome.Outcome.SUPPORTED
    assert cells["logprobs"].run_id == newer.pk
    assert cells["logprobs"].checked_at == newer.finished_at
    assert cells["seed"].outcome == CompatOutcome.Outcome.ACCEPTED  # only the older run ran it
    assert CompatStatus.objects.filter(target=target).count() == 2
