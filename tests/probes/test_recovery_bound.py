"""Recovery (core.leases.runs_recover) of probe runs and lab sweeps, by the beat-driven recovery alone. A worker
killed with SIGKILL mid-run: its run is claimed again within two leases of the kill (the broker keeps the dead
worker's message for its visibility timeout, an hour as in production, so nothing else brings it back). A broker
that could not take a message, or restarted without persistence and forgot its queue: every queued run and sweep
is sent again and claimed within two leases."""
import subprocess
import sys
import time

import pytest
from redis import Redis

from lab.models import SweepRun
from lab.services.run import sweep_run_enqueue
from probes.models import ProbeRun
from probes.services.runs.enqueue import probe_runs_enqueue
from tests.factories import ProbeTargetFactory
from tests.simulator import start_simulator
from tests.workers import ROOT, ThrowawayRedis, Worker, wait_for, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker, pytest.mark.slow]

LEASE_SECONDS = 5
# Time for the rescuing worker to take the recovery task and then the re-sent run off an idle queue.
PICKUP_SECONDS = 5


@pytest.fixture
def start_worker(broker, tmp_path):
    workers: list[Worker] = []

    def start(name: str, *, beat: bool = False, **env_overrides: str) -> Worker:
        env = worker_env(RUN_LEASE_SECONDS=str(LEASE_SECONDS), CELERY_VISIBILITY_TIMEOUT="3600",
                         PROBE_MAX_OUTPUT_TOKENS="40", **env_overrides)
        worker = Worker(name, tmp_path / f"{name}.log", env, beat_schedule=tmp_path / "beat-schedule" if beat else None)
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()


def _kill_mid_run_and_time_the_reclaim(model, run_id: int, doomed: Worker, start_worker) -> tuple[float, Worker]:
    wait_for(lambda: model.objects.filter(pk=run_id, status="running", attempts=1).exists(), timeout=60,
             what="the first attempt to start", logs=doomed.logs)
    rescuer = start_worker("rescuer", beat=True)
    assert model.objects.filter(pk=run_id, status="running", attempts=1).exists(), "the run ended before the kill"
    doomed.kill()
    killed_at = time.monotonic()
    wait_for(lambda: model.objects.filter(pk=run_id, attempts=2).exists(), timeout=2 * LEASE_SECONDS + 30,
             what="the run to be claimed again", logs=rescuer.logs)
    elapsed = time.monotonic() - killed_at
    print(f"\n{model.__name__} claimed again {elapsed:.1f} s after the kill (lease {LEASE_SECONDS} s)")
    return elapsed, rescuer


def test_a_probe_run_of_a_killed_worker_is_claimed_again_within_two_leases(start_worker, api_key):
    # Three requests of about 8 s each: the run is still measuring when the rescuing worker is ready.
    with start_simulator("groq", schedule={"ttft_ms": 50, "itl_ms": 200, "tokens": 40}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model)
        doomed = start_worker("doomed")
        (run,) = probe_runs_enqueue(target=target, suites=("speed",), workloads=["in-100"], max_tokens=40)

        elapsed, rescuer = _kill_mid_run_and_time_the_reclaim(ProbeRun, run.pk, doomed, start_worker)

        assert elapsed <= 2 * LEASE_SECONDS + PICKUP_SECONDS, f"claimed again {elapsed:.1f} s after the kill"
        run = wait_for(lambda: ProbeRun.objects.filter(pk=run.pk, status="succeeded").first(), timeout=90,
                       what="the re-run to finish", logs=rescuer.logs)
        assert run.worker.startswith("rescuer@") and run.attempts == 2
        assert sorted(run.measurements.values_list("index", flat=True)) == [0, 1, 2]


def test_a_sweep_of_a_killed_worker_is_claimed_again_within_two_leases(start_worker):
    schedule = {"ttft_ms": 10, "itl_ms": 20, "precise": False, "reasoning_tokens": 0}
    with start_simulator("openai", schedule=schedule) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, api_key_env="", tool__kind="engine")
        doomed = start_worker("doomed")
        # About 0.25 s a request, 120 a level: the first level alone outlasts the rescuer's start.
        run = sweep_run_enqueue(target=target, workload={"name": "short", "input": 120, "output": 12},
                                plan={"levels": [1, 2], "requests_per_level": 120})

        elapsed, rescuer = _kill_mid_run_and_time_the_reclaim(SweepRun, run.pk, doomed, start_worker)

        assert elapsed <= 2 * LEASE_SECONDS + PICKUP_SECONDS, f"claimed again {elapsed:.1f} s after the kill"
        run = wait_for(lambda: SweepRun.objects.filter(pk=run.pk, status="succeeded").first(), timeout=120,
                       what="the resumed sweep to finish", logs=rescuer.logs)
        assert run.worker.startswith("rescuer@") and run.attempts == 2
        assert sorted(run.levels.values_list("level", flat=True)) == [1.0, 2.0]


# What the web process does when someone asks for a probe run and a sweep: create them queued and send their ids.
ENQUEUE = """
from lab.services.run import sweep_run_enqueue
from probes.models import ProbeTarget
from probes.services.runs.enqueue import probe_runs_enqueue
(run,) = probe_runs_enqueue(target=ProbeTarget.objects.get(pk={provider}), suites=("speed",), workloads=["in-100"],
                            max_tokens=12)
sweep = sweep_run_enqueue(target=ProbeTarget.objects.get(pk={engine}), plan={{"levels": [1], "requests_per_level": 2}},
                          workload={{"name": "short", "input": 40, "output": 8}})
print(run.pk, sweep.pk)
"""


def _enqueue_through(broker: ThrowawayRedis, *, provider: int, engine: int) -> tuple[int, int]:
    env = worker_env(REDIS_URL=broker.url, CELERY_BROKER_URL=broker.url)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c",
                           ENQUEUE.format(provider=provider, engine=engine)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    run_id, sweep_id = done.stdout.split()[-2:]
    return int(run_id), int(sweep_id)


def test_queued_runs_and_sweeps_are_sent_again_within_two_leases_after_the_broker_lost_them(start_worker, api_key):
    broker = ThrowawayRedis()
    fast = {"ttft_ms": 5, "itl_ms": 1, "tokens": 8}
    with start_simulator("groq", schedule=fast) as provider_sim, start_simulator("openai", schedule=fast) as engine_sim:
        def targets() -> dict[str, int]:
            provider = ProbeTargetFactory(base_url=provider_sim.base_url, model_id=provider_sim.model)
            engine = ProbeTargetFactory(base_url=engine_sim.base_url, model_id=engine_sim.model, api_key_env="",
                                        tool__kind="engine")
            return {"provider": provider.pk, "engine": engine.pk}

        try:
            never_sent = _enqueue_through(broker, **targets())  # the broker does not answer: both sends fail
            broker.start()
            forgotten = _enqueue_through(broker, **targets())
            assert Redis.from_url(broker.url).llen("celery") == 2
            broker.kill()
            broker.start()  # nothing kept on disk: the two messages are gone
            assert Redis.from_url(broker.url).llen("celery") == 0
            worker = start_worker("after-the-loss", beat=True, REDIS_URL=broker.url, CELERY_BROKER_URL=broker.url)
            ready_at = time.monotonic()
            queued = [(ProbeRun, never_sent[0]), (SweepRun, never_sent[1]), (ProbeRun, forgotten[0]),
                      (SweepRun, forgotten[1])]
            for model, pk in queued:
                wait_for(lambda model=model, pk=pk: model.objects.filter(pk=pk, attempts__gte=1).exists(),
                         timeout=2 * LEASE_SECONDS + 60, what=f"{model.__name__} {pk} to be claimed",
                         logs=worker.logs)
            elapsed = time.monotonic() - ready_at
        finally:
            broker.kill()
    print(f"\nevery queued run and sweep claimed {elapsed:.1f} s after recovery started (lease {LEASE_SECONDS} s)")
    assert elapsed <= 2 * LEASE_SECONDS + PICKUP_SECONDS, f"claimed {elapsed:.1f} s after recovery started"
