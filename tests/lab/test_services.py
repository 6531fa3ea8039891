"""Sweep runs: creation with field-named errors, in-process execution against the simulator's engine model,
stop and resume per level, the retest rule, and imports of peer tools' results."""
import datetime as dt
import threading
import time

import pytest
from django.utils import timezone

from core.exceptions import ApplicationError
from lab.models import SweepLevel, SweepRun
from lab.services.imports import sweep_import_create
from lab.services.run import (
    sweep_run_create,
    sweep_run_execute,
    sweep_run_request_stop,
    sweep_run_resume,
    sweep_runs_recover,
)
from tests.factories import HardwareSpecFactory, ProbeTargetFactory, SweepRunFactory, ToolFactory
from tests.simulator import start_simulator

WORKLOAD = {"name": "short", "input": 120, "output": 12}
SCHEDULE = {"ttft_ms": 10, "itl_ms": 3, "precise": False, "reasoning_tokens": 0}


@pytest.fixture(scope="module")
def engine_sim():
    with start_simulator("openai", schedule=SCHEDULE, engine={"slots": 2, "itl_ms_per_active": 1}) as sim:
        yield sim


def engine_target(sim, **overrides):
    values = {"base_url": sim.base_url, "model_id": sim.model, "api_key_env": "", "tool__kind": "engine"}
    values.update(overrides)
    return ProbeTargetFactory(**values)


def level_import(level, **overrides):
    row = {
        "mode": "concurrency", "level": level, "requests": 10, "ok": 10, "duration_s": 5.0,
        "ttft_ms": {"p50": 50.0 * level, "p95": 60.0 * level, "p99": 70.0 * level},
        "tpot_ms": {"p50": 10.0, "p95": 12.0, "p99": 13.0}, "output_tps": 100.0 * level,
        "meets_slo": level <= 4,
    }
    row.update(overrides)
    return row


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"workload": {"input": 10}}, "workload.output"),
        ({"workload": {"input": {"kind": "fixed", "value": -1}, "output": 5}}, "workload.input.value"),
        ({"plan": {"levels": [1, 1000]}}, "plan.levels[1]"),
        ({"plan": {"levels": [1], "requests_per_level": 0}}, "plan.requests_per_level"),
        ({"hourly_price_usd": "cheap"}, "hourly_price_usd"),
        ({"kind": "prefix_cache", "plan": {"colour": 1}}, "plan.colour"),
        ({"kind": "prefix_cache", "plan": {"requests": 1}}, "plan.requests"),
        ({"kind": "prefill_decode", "plan": {"input_lengths": [128]}}, "plan.input_lengths"),
    ],
)
def test_bad_parameters_are_refused_naming_the_field(kwargs, field):
    target = ProbeTargetFactory()
    values = {"plan": {"levels": [1, 2]}, "workload": WORKLOAD}
    values.update(kwargs)
    with pytest.raises(ApplicationError) as error:
        sweep_run_create(target=target, **values)
    assert field in error.value.fields
    assert SweepRun.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_sweep_runs_level_by_level_and_records_its_card(engine_sim):
    engine_sim.reset()
    hardware = HardwareSpecFactory(slug="rtx-4090", name="RTX 4090")
    run = sweep_run_create(
        target=engine_target(engine_sim), workload=WORKLOAD, hardware=hardware, hardware_count=2,
        hourly_price_usd="0.80", flags="--parallel 2",
        plan={"levels": [1, 2, 4], "requests_per_level": 6, "slo": {"ttft_ms": 60, "tpot_ms": 20}},
    )
    assert sweep_run_execute(run_id=run.pk, worker="test") == "finished"
    run.refresh_from_db()
    assert run.status == SweepRun.Status.SUCCEEDED, (run.error_class, run.error_message)
    assert run.levels_done == run.levels_total == 3
    levels = list(run.levels.order_by("level"))
    assert [level.level for level in levels] == [1.0, 2.0, 4.0]
    assert all(level.ok == 6 for level in levels)
    assert all(level.cost_per_1m_output_usd == pytest.approx(0.8 / 3600 / level.output_tps * 1e6) for level in levels)
    # Two slots: at four streams half the requests wait a whole request, beyond the 60 ms TTFT objective.
    assert levels[0].meets_slo and levels[1].meets_slo and not levels[2].meets_slo
    assert run.results["knee"] == {"level": 4.0, "best": 2.0, "reason": run.results["knee"]["reason"]}
    card = run.card
    assert card["tool"] == "inference-atlas" and card["client_version"].startswith("inference-atlas-sweep/")
    assert card["served_model"] == engine_sim.model
    assert card["hardware"] == {"slug": "rtx-4090", "name": "RTX 4090", "count": 2}
    assert card["flags"] == "--parallel 2" and card["workload"]["name"] == "short"
    assert "models" in card["server_sources"]


@pytest.mark.django_db(transaction=True)
def test_a_stopped_sweep_resumes_without_measuring_stored_levels_twice(engine_sim):
    engine_sim.reset()
    run = sweep_run_create(
        target=engine_target(engine_sim), workload=WORKLOAD, plan={"levels": [1, 2, 4], "requests_per_level": 30}
    )

    def stop_after_first_level():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not SweepLevel.objects.filter(run_id=run.pk).exists():
            time.sleep(0.05)
        sweep_run_request_stop(run=SweepRun.objects.get(pk=run.pk))

    stopper = threading.Thread(target=stop_after_first_level)
    stopper.start()
    sweep_run_execute(run_id=run.pk, worker="test")
    stopper.join()
    run.refresh_from_db()
    assert run.status == SweepRun.Status.STOPPED
    assert run.stopped_reason == "stopped by an operator"
    stored = set(run.levels.values_list("level", flat=True))
    assert 1.0 in stored and stored != {1.0, 2.0, 4.0}
    assert sweep_run_execute(run_id=run.pk, worker="test") == "already_finished"  # a stopped run waits

    engine_sim.reset()
    assert sweep_run_resume(run=run)
    assert sweep_run_execute(run_id=run.pk, worker="test") == "finished"
    run.refresh_from_db()
    assert run.status == SweepRun.Status.SUCCEEDED
    assert set(run.levels.values_list("level", flat=True)) == {1.0, 2.0, 4.0}
    measured = [r for r in engine_sim.chat_requests if "-settle." not in r["body"]["messages"][0]["content"]]
    assert len(measured) == 30 * (3 - len(stored))  # only the missing levels were measured again


@pytest.mark.django_db(transaction=True)
def test_suites_store_their_results(engine_sim):
    engine_sim.reset()
    target = engine_target(engine_sim)
    run = sweep_run_create(target=target, kind="structured_output", plan={"requests": 2})
    sweep_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert run.status == SweepRun.Status.SUCCEEDED
    assert run.results["variants"]["json_schema"]["valid"] == 2
    run = sweep_run_create(target=target, kind="prefill_decode", plan={"input_lengths": [128, 512], "requests_per_length": 1})
    sweep_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert run.status == SweepRun.Status.SUCCEEDED and run.results["fit"]["points"] == 2


@pytest.mark.django_db(transaction=True)
def test_a_dead_endpoint_fails_the_sweep_with_its_error_class():
    target = ProbeTargetFactory(base_url="http://127.0.0.1:9/v1", api_key_env="")
    run = sweep_run_create(target=target, workload=WORKLOAD, plan={"levels": [1]})
    sweep_run_execute(run_id=run.pk, worker="test")
    run.refresh_from_db()
    assert (run.status, run.error_class) == (SweepRun.Status.FAILED, "connect_error")


@pytest.mark.django_db
def test_import_stores_levels_knee_cost_and_the_producing_tool():
    tool = ToolFactory(slug="vllm", kind="engine")
    hardware = HardwareSpecFactory()
    run = sweep_import_create(
        source_tool="guidellm", tool=tool, hardware=hardware, hourly_price_usd=3.6,
        card={"model_id": "Qwen/Qwen3-8B", "engine_version": "0.11.0"},
        workload={"name": "synthetic", "input": 1000, "output": 200},
        levels=[level_import(1), level_import(2), level_import(4), level_import(8)],
    )
    assert run.status == SweepRun.Status.IMPORTED and run.is_imported
    assert run.card["tool"] == "guidellm" and run.card["tool_label"] == "GuideLLM"
    assert run.results["knee"]["level"] == 8.0 and run.results["knee"]["best"] == 4.0
    level = run.levels.get(level=2)
    assert level.cost_per_1m_output_usd == pytest.approx(3.6 / 3600 / 200 * 1e6)
    assert run.engine_version == "0.11.0" and run.model_fingerprint == "Qwen/Qwen3-8B"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"source_tool": "llmperf"}, "source_tool"),
        ({"levels": []}, "levels"),
        ({"levels": [level_import(1), level_import(1)]}, "levels"),
        ({"levels": [level_import(1, ttft_ms={"p99": -3})]}, "levels.0.ttft_ms.p99"),
        ({"levels": [level_import(1), {**level_import(2), "level": 0}]}, "levels.1.level"),
        ({"levels": [level_import(1, ok=11)]}, "levels.0.ok"),
        ({"levels": [level_import(1, speed=3)]}, "levels.0.speed"),
        ({"workload": {"input": "long", "output": 1}}, "workload.input"),
    ],
)
def test_bad_imports_name_the_field_and_store_nothing(kwargs, field):
    values = {"source_tool": "aiperf", "card": {}, "workload": WORKLOAD, "levels": [level_import(1)]}
    values.update(kwargs)
    with pytest.raises(ApplicationError) as error:
        sweep_import_create(**values)
    assert field in error.value.fields
    assert SweepRun.objects.count() == 0 and SweepLevel.objects.count() == 0


@pytest.mark.django_db
def test_a_changed_engine_version_splits_the_history():
    target = ProbeTargetFactory(tool__kind="engine", api_key_env="")
    common = {"source_tool": "vllm-bench-serve", "target": target, "workload": WORKLOAD, "levels": [level_import(1)]}
    first = sweep_import_create(card={"engine_version": "0.10.1", "model_id": "m"}, **common)
    same = sweep_import_create(card={"engine_version": "0.10.1", "model_id": "m"}, **common)
    upgraded = sweep_import_create(card={"engine_version": "0.11.0", "model_id": "m"}, **common)
    new_model = sweep_import_create(card={"engine_version": "0.11.0", "model_id": "m-v2"}, **common)
    assert first.changes == {} and same.changes == {}
    assert upgraded.changes == {"engine_version": {"old": "0.10.1", "new": "0.11.0", "previous_run": same.pk}}
    assert set(new_model.changes) == {"model"}


@pytest.mark.django_db(transaction=True)
def test_a_new_engine_version_reported_by_the_server_splits_the_history(client):
    """The retest rule on measured runs: the simulator answers GET /version as vLLM does; after an "upgrade"
    (a restarted server reporting another version) the next run records the change and its page says so."""
    target = ProbeTargetFactory(api_key_env="", tool__kind="engine")
    runs = []
    for version in ("0.10.1", "0.10.1", "0.11.0"):
        with start_simulator("openai", schedule=SCHEDULE, engine={"slots": 2}, engine_version=version) as sim:
            target.base_url, target.model_id = sim.base_url, sim.model
            target.save()
            run = sweep_run_create(target=target, workload=WORKLOAD, plan={"levels": [1], "requests_per_level": 2})
            assert sweep_run_execute(run_id=run.pk, worker="test") == "finished"
        run.refresh_from_db()
        runs.append(run)
    first, same, upgraded = runs
    assert [run.engine_version for run in runs] == ["0.10.1", "0.10.1", "0.11.0"]
    assert "version" in upgraded.card["server_sources"] and upgraded.card["engine_version_source"] == "server"
    assert first.changes == {} and same.changes == {}
    assert upgraded.changes == {"engine_version": {"old": "0.10.1", "new": "0.11.0", "previous_run": same.pk}}
    html = client.get(f"/engines/lab/{upgraded.pk}/").content.decode()
    assert "0.10.1 → 0.11.0" in html and f"changed on {upgraded.queued_at:%Y-%m-%d}, re-measured" in html


@pytest.mark.django_db(transaction=True)
def test_recovery_resends_lapsed_and_unclaimed_sweeps_and_gives_up_after_the_attempt_cap(published, settings):
    lapsed = timezone.now() - dt.timedelta(seconds=1)
    retried = SweepRunFactory(status=SweepRun.Status.RUNNING, attempts=1, lease_expires_at=lapsed, task_id="t-1")
    hopeless = SweepRunFactory(status=SweepRun.Status.RUNNING, attempts=settings.RUN_MAX_ATTEMPTS,
                               lease_expires_at=lapsed)
    alive = SweepRunFactory(status=SweepRun.Status.RUNNING, attempts=1,
                            lease_expires_at=timezone.now() + dt.timedelta(seconds=60))
    unclaimed = SweepRunFactory(status=SweepRun.Status.QUEUED, task_id="t-2")  # its message was lost
    fresh = SweepRunFactory(status=SweepRun.Status.QUEUED)
    from_the_command_line = SweepRunFactory(status=SweepRun.Status.QUEUED, target=None)
    a_lease_ago = timezone.now() - dt.timedelta(seconds=settings.RUN_LEASE_SECONDS + 1)
    SweepRun.objects.filter(pk__in=[unclaimed.pk, from_the_command_line.pk]).update(updated_at=a_lease_ago)

    assert sweep_runs_recover() == {"requeued": 2, "gave_up": 1, "expired": 0}

    assert sorted((m["task"], m["args"], m["headers"]["id"]) for m in published) == [
        ("lab.tasks.sweep_run_task", [retried.pk], "t-1"), ("lab.tasks.sweep_run_task", [unclaimed.pk], "t-2"),
    ]
    assert SweepRun.objects.get(pk=fresh.pk).status == SweepRun.Status.QUEUED
    hopeless.refresh_from_db()
    assert (hopeless.status, hopeless.error_class) == (SweepRun.Status.FAILED, "WorkerLost")
    alive.refresh_from_db()
    assert alive.status == SweepRun.Status.RUNNING
