"""A real Celery worker runs a sweep level by level: progress is visible while it runs, a stop request ends it
with the finished levels kept, and a resumed sweep measures only what is missing."""
import pytest

from lab.models import SweepRun
from lab.services.run import sweep_run_enqueue, sweep_run_request_stop, sweep_run_resume
from tests.factories import ProbeTargetFactory
from tests.simulator import start_simulator
from tests.workers import Worker, wait_for, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker, pytest.mark.slow]

WORKLOAD = {"name": "short", "input": 120, "output": 12}


@pytest.fixture
def worker(broker, tmp_path):
    started = Worker("sweeper", tmp_path / "sweeper.log", worker_env())
    started.wait_ready()
    yield started
    started.stop()


def test_a_sweep_runs_on_a_real_worker_and_resumes_after_a_stop(worker):
    schedule = {"ttft_ms": 10, "itl_ms": 4, "precise": False, "reasoning_tokens": 0}
    with start_simulator("openai", schedule=schedule, engine={"slots": 2}) as sim:
        target = ProbeTargetFactory(base_url=sim.base_url, model_id=sim.model, api_key_env="", tool__kind="engine")
        run = sweep_run_enqueue(
            target=target, workload=WORKLOAD, plan={"levels": [1, 2, 4, 8], "requests_per_level": 40}
        )
        # Progress is visible while the sweep runs: the first level is stored before the last one starts.
        wait_for(
            lambda: SweepRun.objects.filter(pk=run.pk, status="running", levels_done__gte=1).exists(),
            timeout=60, what="the first stored level", logs=worker.logs,
        )
        assert sweep_run_request_stop(run=run)
        run = wait_for(
            lambda: SweepRun.objects.filter(pk=run.pk, status="stopped").first(), timeout=60,
            what="the sweep to stop", logs=worker.logs,
        )
        kept = set(run.levels.values_list("level", flat=True))
        assert 1.0 in kept and len(kept) < 4
        assert run.worker.startswith("sweeper@")

        sim.reset()
        assert sweep_run_resume(run=run)
        run = wait_for(
            lambda: SweepRun.objects.filter(pk=run.pk, status="succeeded").first(), timeout=90,
            what="the resumed sweep to finish", logs=worker.logs,
        )
        assert set(run.levels.values_list("level", flat=True)) == {1.0, 2.0, 4.0, 8.0}
        measured = [r for r in sim.chat_requests if "-settle." not in r["body"]["messages"][0]["content"]]
        assert len(measured) == 40 * (4 - len(kept))
        assert run.results["knee"]["reason"]
