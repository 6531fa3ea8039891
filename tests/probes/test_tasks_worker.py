"""A real Celery worker on Redis runs scheduled probes end to end, and a worker killed mid-run loses nothing
and duplicates nothing. The worker is a subprocess that sees only committed rows of the test database."""
import datetime as dt
import os
import signal
import time

import pytest

from probes.models import MeasurementSummary, ProbeRun
from probes.services.runs.enqueue import probe_runs_enqueue
from probes.tasks import probe_run_task, probe_runs_recover_task, probe_schedule_speed_task
from tests.factories import ProbeTargetFactory
from tests.workers import Worker, pool_children, wait_for, worker_env
from tests.simulator import start_simulator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker, pytest.mark.slow]


@pytest.fixture
def start_worker(broker, tmp_path):
    workers: list[Worker] = []

    def start(name: str, concurrency: int = 1, **env: str) -> Worker:
        worker = Worker(name, tmp_path / f"{name}.log", worker_env(**env), concurrency=concurrency)
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()


def _finished(run_id):
    run = ProbeRun.objects.filter(pk=run_id).first()
    return run if run is not None and run.is_finished else None


def test_a_beat_scheduled_probe_runs_end_to_end_on_a_real_worker(start_worker, api_key):
    with start_simulator("cerebras", schedule={"ttft_ms": 20, "itl_ms": 2}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        ProbeTargetFactory(enabled=False)  # never scheduled
        worker = start_worker("alpha")

        probe_schedule_speed_task.delay()  # what beat sends every three hours

        run = wait_for(
            lambda: ProbeRun.objects.filter(target=target).first(), timeout=30, what="the scheduled run",
            logs=worker.logs,
        )
        run = wait_for(lambda: _finished(run.pk), timeout=60, what="the run to finish", logs=worker.logs)
        assert run.status == ProbeRun.Status.SUCCEEDED, (run.error_class, run.error_message, worker.logs()[-3000:])
        assert ProbeRun.objects.count() == 1
        assert (run.workload, run.concurrency, run.attempts) == ("in-100", 1, 1)
        assert run.worker.startswith("alpha@")
        assert run.measurements.count() == 3
        assert len(sim.chat_requests) == 3
        # Summaries are refreshed right after the run is recorded, in the same task.
        summary = wait_for(
            lambda: MeasurementSummary.objects.filter(target=target, workload="in-100", concurrency=1).first(),
            timeout=10, what="the summary row", logs=worker.logs,
        )
        assert summary.samples == 3


def test_a_worker_killed_mid_run_leaves_exactly_one_finished_run(start_worker, api_key):
    # Each request streams for about 2.5 s, so the run takes about 7.5 s: long enough to kill it midway.
    with start_simulator("groq", schedule={"ttft_ms": 100, "itl_ms": 200, "tokens": 12}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        first = start_worker("doomed")
        probe_schedule_speed_task.delay()

        run = wait_for(
            lambda: ProbeRun.objects.filter(target=target, status=ProbeRun.Status.RUNNING).first(),
            timeout=30, what="the run to start", logs=first.logs,
        )
        wait_for(lambda: len(sim.chat_requests) >= 2, timeout=30, what="the second request", logs=first.logs)
        first.kill()
        killed_at_requests = len(sim.chat_requests)
        run.refresh_from_db()
        assert run.status == ProbeRun.Status.RUNNING and run.attempts == 1

        # Nothing renews the lease any more; once it lapses the run belongs to whoever claims it next.
        wait_for(lambda: ProbeRun.objects.lease_expired().filter(pk=run.pk).exists(), timeout=15,
                 what="the dead worker's lease to lapse")
        second = start_worker("survivor")
        # Recovery re-sends the run; a duplicate stands for a second delivery of the same message (the broker
        # also restores the dead worker's unacknowledged message once its visibility timeout has passed).
        # The claim lets exactly one attempt run; every other delivery finds it busy or finished.
        probe_runs_recover_task.delay()
        probe_run_task.delay(run.pk)
        run = wait_for(lambda: _finished(run.pk), timeout=90, what="the re-run to finish", logs=second.logs)

        assert run.status == ProbeRun.Status.SUCCEEDED, (run.error_class, run.error_message)
        assert run.attempts == 2
        assert run.worker.startswith("survivor@")
        assert ProbeRun.objects.filter(target=target).count() == 1
        assert sorted(run.measurements.values_list("index", flat=True)) == [0, 1, 2]
        assert len(sim.chat_requests) == killed_at_requests + 3  # the dead attempt's requests were redone
        wait_for(lambda: "'already_finished'" in second.logs(), timeout=30,
                 what="the duplicate delivery to be ignored", logs=second.logs)
        assert second.logs().count("'finished'") == 1
        run.refresh_from_db()
        assert (run.status, run.attempts, run.measurements.count()) == ("succeeded", 2, 3)


def test_a_run_pinned_to_a_region_runs_only_on_that_regions_worker(start_worker, api_key):
    with start_simulator("openai", schedule={"ttft_ms": 10, "itl_ms": 1, "tokens": 8}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        plain = start_worker("plain")
        [run] = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"], region="eu-west")
        assert run.queue == "probes.eu-west"
        time.sleep(3)  # the plain worker would have taken it by now if it consumed that queue
        run.refresh_from_db()
        assert run.status == ProbeRun.Status.QUEUED, plain.logs()[-2000:]

        regional = start_worker("regional", PROBE_REGION="eu-west")
        run = wait_for(lambda: _finished(run.pk), timeout=60, what="the regional run", logs=regional.logs)
        assert run.status == ProbeRun.Status.SUCCEEDED
        assert run.region == "eu-west"
        assert run.worker.startswith("regional@")
        assert "probe_run_task[" not in plain.logs()


def test_a_run_past_its_soft_time_limit_is_stored_as_failed_and_the_worker_goes_on(start_worker, api_key):
    with start_simulator("openai", fault="stall_before_headers", fault_requests=1,
                         schedule={"ttft_ms": 10, "itl_ms": 1, "tokens": 8}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        worker = start_worker("limited", PROBE_RUN_SOFT_TIME_LIMIT="3")
        [stalled] = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"], requests=1)
        stalled = wait_for(lambda: _finished(stalled.pk), timeout=40, what="the stalled run", logs=worker.logs)
        assert stalled.status == ProbeRun.Status.FAILED
        assert stalled.error_class == "SoftTimeLimitExceeded"
        assert stalled.finished_at - stalled.started_at < dt.timedelta(seconds=10)

        [healthy] = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"], requests=1)
        healthy = wait_for(lambda: _finished(healthy.pk), timeout=40, what="the next run", logs=worker.logs)
        assert healthy.status == ProbeRun.Status.SUCCEEDED


def test_a_run_that_keeps_killing_its_worker_is_given_up_after_the_attempt_cap(start_worker, api_key):
    # Each attempt streams for about 5 s; the pool child is SIGKILLed during every attempt, as a poison
    # message would. reject_on_worker_lost redelivers the task; the attempt counter stops the loop.
    with start_simulator("openai", schedule={"ttft_ms": 100, "itl_ms": 400, "tokens": 12}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        worker = start_worker("poisoned")
        [run] = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"], requests=1)
        for attempt in (1, 2, 3):
            seen = len(sim.chat_requests)
            wait_for(
                lambda: ProbeRun.objects.filter(pk=run.pk, attempts=attempt, status="running").exists()
                and len(sim.chat_requests) > seen,
                timeout=40, what=f"attempt {attempt} to start streaming", logs=worker.logs,
            )
            for pid in pool_children(worker):
                os.kill(pid, signal.SIGKILL)
        run = wait_for(lambda: _finished(run.pk), timeout=60, what="the run to be given up", logs=worker.logs)
        assert (run.status, run.error_class, run.attempts) == ("failed", "WorkerLost", 3)
        assert not run.measurements.exists()
        assert worker.process.poll() is None  # the worker itself survived and goes on


def test_concurrent_deliveries_never_measure_one_target_twice_at_once(start_worker, api_key):
    # Two pool processes take messages in parallel: two runs of one target plus a duplicate of the first.
    with start_simulator("openai", schedule={"ttft_ms": 50, "itl_ms": 150, "tokens": 10}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, enabled=True)
        first, second = probe_runs_enqueue(
            target=target, suites=("speed",), workloads=["in-100", "in-1k"], requests=2
        )
        probe_run_task.delay(first.pk)
        worker = start_worker("pair", concurrency=2)
        runs = [
            wait_for(lambda pk=pk: _finished(pk), timeout=90, what=f"run {pk}", logs=worker.logs)
            for pk in (first.pk, second.pk)
        ]
        assert [run.status for run in runs] == ["succeeded", "succeeded"]
        assert [run.attempts for run in runs] == [1, 1]
        assert [run.measurements.count() for run in runs] == [2, 2]
        assert len(sim.chat_requests) == 4
        earlier, later = sorted(runs, key=lambda run: run.started_at)
        assert later.started_at >= earlier.finished_at  # one running run per target, enforced by the database
