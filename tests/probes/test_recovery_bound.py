"""A worker killed with SIGKILL mid-run: its probe run, or its lab sweep, is claimed again within two leases of the
kill, by the beat-driven recovery alone. The broker keeps the dead worker's message for its visibility timeout (an
hour, as in production), so nothing else brings the run back in that time."""
import time

import pytest

from lab.models import SweepRun
from lab.services.run import sweep_run_enqueue
from probes.models import ProbeRun
from probes.services.runs.enqueue import probe_runs_enqueue
from tests.factories import ProbeTargetFactory
from tests.simulator import start_simulator
from tests.workers import Worker, wait_for, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker, pytest.mark.slow]

LEASE_SECONDS = 5
# Time for the rescuing worker to take the recovery task and then the re-sent run off an idle queue.
PICKUP_SECONDS = 5


@pytest.fixture
def start_worker(broker, tmp_path):
    workers: list[Worker] = []

    def start(name: str, *, beat: bool = False) -> Worker:
        env = worker_env(PROBE_RUN_LEASE_SECONDS=str(LEASE_SECONDS), CELERY_VISIBILITY_TIMEOUT="3600",
                         PROBE_MAX_OUTPUT_TOKENS="40")
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
