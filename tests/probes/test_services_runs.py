"""Run services: enqueue after commit, the claim, not-configured targets, recording, recovery, scheduling."""
import datetime as dt
import socket

import pytest
from django.conf import settings
from django.utils import timezone

from core.exceptions import ApplicationError
from core.leases import RunExecution
from probes.models import CompatStatus, MeasurementSummary, ProbeRun, RequestMeasurement
from probes.services.runs.enqueue import probe_runs_enqueue, probe_schedule_daily, probe_schedule_speed
from probes.services.runs.execute import (
    SuiteOutcome,
    probe_run_claim,
    probe_run_execute,
    probe_run_record,
    probe_target_run_now,
)
from probes.services.runs.recover import probe_runs_recover
from scoring.vocabulary import COMPAT_CHECKS
from tests.factories import ProbeRunFactory, ProbeTargetFactory, RequestMeasurementFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def silent_port():
    """A listening socket that records whether anyone connected: proof that no request was made."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    yield server
    server.close()


def _connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except TimeoutError:
            return count
        conn.close()
        count += 1


# --- enqueue ---


def test_enqueue_sends_run_ids_only_after_commit(published, django_capture_on_commit_callbacks):
    target = ProbeTargetFactory()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        runs = probe_runs_enqueue(target=target, suites=("speed", "compat"), workloads=["in-100", "in-1k"])
        assert published == []
    assert [(r.suite, r.workload, r.status) for r in runs] == [
        ("speed", "in-100", "queued"),
        ("speed", "in-1k", "queued"),
        ("compat", "", "queued"),
    ]
    assert published == []  # still nothing: the transaction had not committed
    assert len(callbacks) == 2  # the page cache's generation, and the send
    for callback in callbacks:
        callback()
    assert [list(m["args"]) for m in published] == [[run.pk] for run in runs]
    assert {m["task"] for m in published} == {"probes.tasks.probe_run_task"}
    assert all(m["kwargs"] == {} for m in published)
    assert all(m["routing_key"] == "celery" for m in published)
    assert all(m["headers"]["expires"] for m in published)
    # Time limits are left to the worker's own settings, not frozen into the message by the sender.
    assert all(list(m["headers"]["timelimit"]) == [None, None] for m in published)
    assert [m["headers"]["id"] for m in published] == [run.task_id for run in runs]


def test_enqueue_for_a_region_uses_that_regions_queue(published, django_capture_on_commit_callbacks):
    target = ProbeTargetFactory()
    with django_capture_on_commit_callbacks(execute=True):
        [run] = probe_runs_enqueue(target=target, suites=("compat",), region="eu-west")
    assert run.queue == "probes.eu-west"
    assert published[0]["routing_key"] == "probes.eu-west"


def test_speed_runs_take_workload_sizes_and_request_counts():
    target = ProbeTargetFactory()
    single, = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-1k"])
    parallel, = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-1k"], concurrency=10)
    assert (single.input_tokens, single.max_output_tokens) == (1000, settings.PROBE_WORKLOAD_MAX_TOKENS["in-1k"])
    assert single.request_count == settings.PROBE_SPEED_REQUESTS
    assert (parallel.concurrency, parallel.request_count) == (10, 10)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"suites": ("latency",)}, "suites"),
        ({"suites": ()}, "suites"),
        ({"workloads": ["in-7"]}, "workloads"),
        ({"concurrency": 0}, "concurrency"),
        ({"requests": 0}, "requests"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_bad_enqueue_arguments_name_the_field(kwargs, field):
    target = ProbeTargetFactory()
    with pytest.raises(ApplicationError) as error:
        probe_runs_enqueue(target=target, **kwargs)
    assert field in error.value.fields
    assert not ProbeRun.objects.exists()


# --- claim ---


def test_a_queued_run_is_claimed_once():
    run = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    first = probe_run_claim(run_id=run.pk, worker="w1")
    second = probe_run_claim(run_id=run.pk, worker="w2")
    assert (first.outcome, first.attempt) == (None, 1)
    assert second.outcome is RunExecution.BUSY
    run.refresh_from_db()
    assert (run.status, run.worker, run.attempts) == ("running", "w1", 1)
    assert run.lease_expires_at > timezone.now()


def test_a_run_left_by_a_dead_worker_is_reclaimed_and_its_partial_data_dropped():
    run = ProbeRunFactory(
        status=ProbeRun.Status.RUNNING, attempts=1, lease_expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    RequestMeasurementFactory(run=run, index=0)
    claim = probe_run_claim(run_id=run.pk, worker="w2")
    assert (claim.outcome, claim.attempt) == (None, 2)
    assert not RequestMeasurement.objects.filter(run=run).exists()


def test_one_running_run_per_target():
    target = ProbeTargetFactory()
    busy = ProbeRunFactory(target=target, status=ProbeRun.Status.QUEUED)
    waiting = ProbeRunFactory(target=target, status=ProbeRun.Status.QUEUED)
    other_target = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    assert probe_run_claim(run_id=busy.pk, worker="w1").outcome is None
    assert probe_run_claim(run_id=waiting.pk, worker="w2").outcome is RunExecution.BUSY
    assert probe_run_claim(run_id=other_target.pk, worker="w2").outcome is None
    waiting.refresh_from_db()
    assert (waiting.status, waiting.attempts) == ("queued", 0)


def test_finished_runs_are_not_claimed_and_hopeless_ones_are_given_up():
    done = ProbeRunFactory(status=ProbeRun.Status.SUCCEEDED)
    assert probe_run_claim(run_id=done.pk, worker="w").outcome is RunExecution.ALREADY_FINISHED
    dying = ProbeRunFactory(
        status=ProbeRun.Status.RUNNING,
        attempts=settings.RUN_MAX_ATTEMPTS,
        lease_expires_at=timezone.now() - dt.timedelta(seconds=1),
    )
    assert probe_run_claim(run_id=dying.pk, worker="w").outcome is RunExecution.GAVE_UP
    dying.refresh_from_db()
    assert (dying.status, dying.error_class) == ("failed", "WorkerLost")
    assert probe_run_claim(run_id=10**9, worker="w").outcome is RunExecution.MISSING


def test_an_attempt_that_lost_its_lease_cannot_record():
    run = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    stale = probe_run_claim(run_id=run.pk, worker="w1")
    ProbeRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - dt.timedelta(seconds=1))
    fresh = probe_run_claim(run_id=run.pk, worker="w2")
    outcome = SuiteOutcome(status=ProbeRun.Status.SUCCEEDED, measurements=[
        RequestMeasurement(index=0, started_at=timezone.now(), ttft_ms=1.0)
    ])
    assert probe_run_record(run_id=run.pk, attempt=stale.attempt, outcome=outcome, snapshot={}) is False
    assert not RequestMeasurement.objects.filter(run=run).exists()
    assert probe_run_record(run_id=run.pk, attempt=fresh.attempt, outcome=outcome, snapshot={}) is True
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert RequestMeasurement.objects.filter(run=run).count() == 1


# --- not configured ---


def test_enabled_target_without_its_key_is_recorded_not_configured_and_not_contacted(silent_port, monkeypatch):
    monkeypatch.delenv("ATLAS_MISSING_API_KEY", raising=False)
    port = silent_port.getsockname()[1]
    target = ProbeTargetFactory(base_url=f"http://127.0.0.1:{port}/v1", api_key_env="ATLAS_MISSING_API_KEY")
    assert not target.is_configured
    [run] = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"])
    assert probe_run_execute(run_id=run.pk, worker="w") is RunExecution.NOT_CONFIGURED
    run.refresh_from_db()
    assert run.status == ProbeRun.Status.NOT_CONFIGURED
    assert "ATLAS_MISSING_API_KEY" in run.error_message
    assert run.target_snapshot["api_key_set"] is False
    assert _connections(silent_port) == 0
    assert not run.measurements.exists()


def test_scheduling_skips_disabled_and_not_configured_targets(api_key, monkeypatch):
    monkeypatch.delenv("ATLAS_MISSING_API_KEY", raising=False)
    due = ProbeTargetFactory(enabled=True)
    keyless = ProbeTargetFactory(enabled=True, api_key_env="")
    ProbeTargetFactory(enabled=False)
    ProbeTargetFactory(enabled=True, api_key_env="ATLAS_MISSING_API_KEY")

    runs = probe_schedule_speed()
    assert {(r.target_id, r.workload) for r in runs} == {
        (t.pk, w) for t in (due, keyless) for w in settings.PROBE_SCHEDULED_WORKLOADS
    }
    assert all(r.concurrency == 1 for r in runs)
    assert probe_schedule_speed() == []  # the same runs are still queued: no pile-up

    daily = probe_schedule_daily()
    assert sorted((r.suite, r.concurrency) for r in daily if r.target_id == due.pk) == [
        ("compat", 1), ("speed", settings.PROBE_PARALLEL_CONCURRENCY)]


# --- recovery ---


def test_recovery_resends_dead_and_forgotten_runs_and_gives_up_on_hopeless_ones(
    published, django_capture_on_commit_callbacks
):
    now = timezone.now()
    past = now - dt.timedelta(seconds=1)
    dead = ProbeRunFactory(status=ProbeRun.Status.RUNNING, attempts=1, lease_expires_at=past)
    hopeless = ProbeRunFactory(
        status=ProbeRun.Status.RUNNING, attempts=settings.RUN_MAX_ATTEMPTS, lease_expires_at=past
    )
    alive = ProbeRunFactory(status=ProbeRun.Status.RUNNING, attempts=1, lease_expires_at=now + dt.timedelta(minutes=1))
    forgotten = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    ancient = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    fresh = ProbeRunFactory(status=ProbeRun.Status.QUEUED)
    stale = now - dt.timedelta(seconds=settings.RUN_LEASE_SECONDS + 5)
    ProbeRun.objects.filter(pk=forgotten.pk).update(updated_at=stale)
    ProbeRun.objects.filter(pk=ancient.pk).update(
        updated_at=stale, queued_at=now - dt.timedelta(seconds=settings.RUN_MAX_AGE_SECONDS + 5)
    )

    with django_capture_on_commit_callbacks(execute=True):
        counts = probe_runs_recover(now=now)

    assert counts == {"requeued": 2, "gave_up": 1, "expired": 1}
    assert sorted(m["args"][0] for m in published) == sorted([dead.pk, forgotten.pk])
    statuses = dict(ProbeRun.objects.values_list("pk", "status"))
    assert statuses[hopeless.pk] == "failed"
    assert statuses[ancient.pk] == "failed"
    assert statuses[alive.pk] == statuses[dead.pk] == "running"
    assert statuses[fresh.pk] == "queued"
    with django_capture_on_commit_callbacks(execute=True):
        # The forgotten run was just re-sent; the dead one is sent again until some worker claims it.
        assert probe_runs_recover(now=now)["requeued"] == 1


# --- against the simulator ---


@pytest.fixture
def simulator():
    from tests.simulator import start_simulator

    with start_simulator("groq", schedule={"ttft_ms": 30, "itl_ms": 2, "tokens": 12}) as sim:
        yield sim


def test_a_stored_target_run_records_every_request_and_refreshes_summaries(simulator, api_key):
    target = ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model)
    speed, compat = probe_target_run_now(
        target=target, suites=("speed", "compat"), workloads=["in-100"], requests=4, concurrency=2, max_tokens=12
    )

    assert speed.status == ProbeRun.Status.SUCCEEDED, (speed.error_class, speed.error_message)
    measurements = list(speed.measurements.order_by("index"))
    assert [m.index for m in measurements] == [0, 1, 2, 3]
    assert all(m.ok and m.ttft_ms > 0 and m.e2e_ms >= m.ttft_ms for m in measurements)
    assert all(m.output_tokens_source == "usage" for m in measurements)
    assert len(simulator.chat_requests) >= 4 + len(compat.compat_outcomes.all())
    assert speed.target_snapshot["api_key_env"] == "ATLAS_TEST_API_KEY"
    assert speed.target_snapshot["api_key_set"] is True
    assert speed.request_params["requests"] == 4 and speed.request_params["concurrency"] == 2
    assert speed.client_info["python"] and speed.client_info["host"]
    assert speed.summary["requests"] == 4 and speed.summary["ttft_ms"]["p50"] > 0
    assert speed.attempts == 1 and speed.lease_expires_at is None

    [summary] = MeasurementSummary.objects.filter(target=target)
    assert (summary.workload, summary.concurrency, summary.samples) == ("in-100", 2, 4)
    assert summary.metrics["ttft_ms"]["median_72h"] > 0

    assert compat.status in (ProbeRun.Status.SUCCEEDED, ProbeRun.Status.PARTIAL)
    outcomes = dict(compat.compat_outcomes.values_list("check_name", "outcome"))
    assert len(outcomes) == len(COMPAT_CHECKS)
    cells = dict(CompatStatus.objects.filter(target=target).values_list("check_name", "outcome"))
    assert cells == outcomes


def test_an_unreachable_endpoint_is_a_stored_failure(silent_port, api_key):
    port = silent_port.getsockname()[1]
    silent_port.close()  # nothing listens any more: connection refused
    target = ProbeTargetFactory(base_url=f"http://127.0.0.1:{port}/v1")
    [run] = probe_target_run_now(target=target, suites=("speed",), workloads=["in-100"], requests=2)
    assert run.status == ProbeRun.Status.FAILED
    assert run.error_class
    assert run.finished_at is not None


# --- schedule and limits configuration ---


def test_beat_schedule_names_real_tasks_and_drops_stale_copies():
    from celery.schedules import crontab

    from config.celery_app import app

    app.loader.import_default_modules()
    schedule = settings.CELERY_BEAT_SCHEDULE
    names = ("probes-speed-every-3h", "probes-parallel-and-compat-daily", "probes-recover-runs", "lab-recover-sweeps")
    for name in names:
        entry = schedule[name]
        assert entry["task"] in app.tasks, name
        assert entry["options"]["expires"] > 0
    speed = schedule["probes-speed-every-3h"]["schedule"]
    assert isinstance(speed, crontab) and speed.hour == set(range(0, 24, 3))
    for name in ("probes-recover-runs", "lab-recover-sweeps"):
        # Once per lease: an abandoned run is re-sent within two leases (docs/operations.md).
        assert schedule[name]["schedule"] == settings.RUN_LEASE_SECONDS
        assert schedule[name]["options"]["expires"] < schedule[name]["schedule"]


def test_time_limits_fit_inside_the_broker_visibility_timeout():
    from probes.tasks import probe_run_task

    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert probe_run_task.acks_late and probe_run_task.reject_on_worker_lost
    assert probe_run_task.soft_time_limit < probe_run_task.time_limit < visibility
    assert settings.RUN_BUSY_RETRY_SECONDS + 2 < visibility
