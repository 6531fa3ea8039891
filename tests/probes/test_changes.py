"""Measured changes: a series that moves beyond its own run-to-run spread is one regression, and one recovery when it
comes back; a compat check that stops or starts working is one of each too (rule and thresholds: docs/changes.md)."""
import datetime as dt

import pytest
from django.utils import timezone

from catalog.models import Change
from probes.models import ProbeRun
from probes.services.changes import compat_changes_record, measured_changes_record
from probes.services.runs.execute import probe_target_run_now
from tests.factories import (
    CompatOutcomeFactory,
    LanguageModelFactory,
    ModelOfferingFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
)

pytestmark = pytest.mark.django_db

REQUESTS = 5
BASE_TTFT_MS = 150


@pytest.fixture
def simulator():
    from tests.simulator import start_simulator

    with start_simulator("groq", schedule={"ttft_ms": BASE_TTFT_MS, "itl_ms": 2, "tokens": 12}) as sim:
        yield sim


def _speed_run(target) -> ProbeRun:
    [run] = probe_target_run_now(target=target, suites=("speed",), workloads=["in-100"], requests=REQUESTS,
                                 max_tokens=12)
    assert run.status == ProbeRun.Status.SUCCEEDED, (run.error_class, run.error_message)
    return run


def test_a_provider_whose_ttft_doubles_is_one_regression_and_one_recovery_when_it_returns(simulator, api_key):
    model = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    target = ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model, tool__name="Groq")
    ModelOfferingFactory(tool=target.tool, model=model, api_model_id=simulator.model)
    for _ in range(3):
        _speed_run(target)
    assert not Change.objects.exists()

    simulator.set_options(schedule={"ttft_ms": 2 * BASE_TTFT_MS, "itl_ms": 2, "tokens": 12})
    slow = _speed_run(target)
    _speed_run(target)

    [regression] = Change.objects.all()
    assert regression.kind == Change.Kind.REGRESSION and regression.subject == "TTFT p50"
    assert regression.tool == target.tool and regression.model == model
    assert regression.after == {"value": slow.summary["ttft_ms"]["p50"], "run": slow.pk}
    assert regression.before["runs"] == 3
    assert regression.after["value"] - regression.before["reference"] > regression.before["threshold"]
    assert regression.url == f"/api/v1/probes/runs/{slow.pk}/"

    simulator.set_options(schedule={"ttft_ms": BASE_TTFT_MS, "itl_ms": 2, "tokens": 12})
    back = _speed_run(target)
    _speed_run(target)

    recovery = Change.objects.exclude(pk=regression.pk).get()
    assert recovery.kind == Change.Kind.RECOVERY and recovery.series == regression.series
    assert recovery.after["run"] == back.pk and recovery.before == regression.before


def _run_with(target, *, finished_at, ttft=100.0, speed=200.0, requests=REQUESTS, succeeded=None):
    succeeded = requests if succeeded is None else succeeded
    return ProbeRunFactory(
        target=target, finished_at=finished_at, request_count=requests,
        summary={"ttft_ms": {"p50": ttft}, "output_speed_tps": {"p50": speed}, "requests": requests,
                 "succeeded": succeeded, "success_rate": round(succeeded / requests, 4)},
    )


def test_an_error_rate_beyond_its_floor_is_a_regression_and_a_slower_ttft_within_the_spread_is_not():
    target = ProbeTargetFactory()
    start = timezone.now() - dt.timedelta(hours=5)
    for hour, ttft in enumerate((100.0, 140.0, 60.0)):
        _run_with(target, finished_at=start + dt.timedelta(hours=hour), ttft=ttft)
    # 170 ms is 70 above the median, within twice the 40 ms the earlier runs spread over.
    run = _run_with(target, finished_at=start + dt.timedelta(hours=4), ttft=170.0, requests=10, succeeded=7)

    [change] = measured_changes_record(run=run)

    assert change.kind == Change.Kind.REGRESSION and change.subject == "error rate"
    assert change.before == {"reference": 0.0, "spread": 0.0, "threshold": 0.1, "runs": 3}
    assert change.after["value"] == 0.3


def test_too_few_requests_on_either_side_decide_nothing():
    target = ProbeTargetFactory()
    start = timezone.now() - dt.timedelta(hours=5)
    for hour in range(3):
        _run_with(target, finished_at=start + dt.timedelta(hours=hour), requests=REQUESTS - 1)
    run = _run_with(target, finished_at=start + dt.timedelta(hours=4), ttft=1000.0)
    assert measured_changes_record(run=run) == []
    few = _run_with(target, finished_at=start + dt.timedelta(hours=4, minutes=30), ttft=1000.0, requests=2)
    assert measured_changes_record(run=few) == []


def test_a_series_that_stays_regressed_writes_no_second_entry_and_output_speed_counts_downwards():
    target = ProbeTargetFactory()
    start = timezone.now() - dt.timedelta(hours=6)
    for hour in range(3):
        _run_with(target, finished_at=start + dt.timedelta(hours=hour), speed=200.0)
    first = _run_with(target, finished_at=start + dt.timedelta(hours=4), speed=90.0)
    second = _run_with(target, finished_at=start + dt.timedelta(hours=5), speed=95.0)

    [change] = measured_changes_record(run=first)
    assert measured_changes_record(run=second) == []
    assert change.subject == "output speed p50" and "200.0 tok/s → 90.0 tok/s" in change.title


def test_a_compat_check_that_stops_working_is_a_regression_and_one_that_works_again_a_recovery():
    target = ProbeTargetFactory(name="Provider")
    start = timezone.now() - dt.timedelta(hours=3)
    runs = [ProbeRunFactory(target=target, suite=ProbeRun.Suite.COMPAT, workload="",
                            finished_at=start + dt.timedelta(hours=hour)) for hour in range(3)]
    for run, logprobs, seed in zip(runs, ("supported", "rejected", "supported"), ("accepted", "supported", "accepted"),
                                   strict=True):
        CompatOutcomeFactory(run=run, check_name="logprobs", outcome=logprobs)
        CompatOutcomeFactory(run=run, check_name="seed", outcome=seed)

    assert compat_changes_record(run=runs[0]) == []
    [regression] = compat_changes_record(run=runs[1])
    [recovery] = compat_changes_record(run=runs[2])

    assert regression.kind == Change.Kind.REGRESSION and regression.subject == "logprobs"
    assert regression.title == "Provider: logprobs supported → rejected"
    assert regression.before == {"outcome": "supported", "run": runs[0].pk}
    assert recovery.kind == Change.Kind.RECOVERY and recovery.after == {"outcome": "supported", "run": runs[2].pk}
