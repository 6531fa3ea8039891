"""Lab runs measured here: create and enqueue, stop and resume, and execute one level by level.

A sweep run moves queued -> running -> succeeded | partial | failed, or -> stopped when an operator asks it to
stop (then ``sweep_run_resume`` queues it again and only the levels not yet stored are measured). The claim and
the lease are core.leases', as for probe runs; one running sweep per target is enforced by a partial unique
index.

Execution keeps the database and the measurement apart: the sweep runs in its own thread with its own event
loop, and this thread (the worker's) stores each level as it arrives, renews the lease and polls for a stop
request, so the ORM is never called from inside the event loop and no query delays a timed stream.

The command line (``manage.py sweep``) uses the same code: ``sweep_run_create`` + ``sweep_run_execute`` with the
endpoint's config to save a run (a run without a target is possible there), ``sweep_measure`` to measure one
and store nothing.
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.db import transaction
from django.utils import timezone

from catalog.models import HardwareSpec, Tool
from core.cache import generation_bump
from core.leases import RunExecution, lease_claim, lease_holder, lease_renew, runs_recover
from core.models import AuditEntry
from core.services import audit_record
from lab.models import SweepLevel, SweepRun
from lab.services.card import card_merged_reads, sweep_card, sweep_changes
from lab.services.plan import valid_hardware_count, valid_hourly_price, valid_plan, workload_key
from lab.services.record import sweep_level_record
from probe_client import EndpointConfig
from probe_client.secrets import MAX_TEXT, scrub, secret_value
from probe_client.sweep import (
    LevelResult,
    SuiteError,
    SweepLimitError,
    SweepPlan,
    Workload,
    WorkloadError,
    fetch_server_facts,
    find_knee,
    model_fingerprint,
    run_prefill_decode,
    run_prefix_cache,
    run_structured_output,
    run_sweep,
)
from probes.models import ProbeTarget

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
# Why a sweep ended early, in words, by the runner's stopped_reason.
STOPPED_REASONS = {"interrupted": "stopped by an operator", "max_duration": "duration limit reached",
                   "fatal": "every request of a level failed"}


def _run_instance(
    *,
    target: ProbeTarget | None,
    tool: Tool | None = None,
    kind: str,
    plan: dict | None,
    workload: dict | None,
    hardware: HardwareSpec | None,
    hardware_count: int,
    hourly_price_usd: Any,
    flags: str,
) -> SweepRun:
    """A checked, unsaved run; bad parameters raise ApplicationError naming the field."""
    stored_plan, stored_workload = valid_plan(kind, plan, workload)
    price = valid_hourly_price(hourly_price_usd)
    if kind == SweepRun.Kind.SWEEP and price is not None:
        stored_plan["hourly_price_usd"] = float(price)
    return SweepRun(
        target=target,
        tool=target.tool if target else tool,
        kind=kind,
        plan=stored_plan,
        workload=stored_workload,
        workload_name=str(stored_workload.get("name", ""))[:80],
        workload_key=workload_key(stored_workload) if stored_workload else "",
        hardware=hardware,
        hardware_count=valid_hardware_count(hardware_count),
        hourly_price_usd=price,
        flags=(flags or "")[:MAX_TEXT],
        levels_total=len(stored_plan.get("levels", [])) if kind == SweepRun.Kind.SWEEP else 1,
        task_id=str(uuid.uuid4()),
    )


def sweep_run_create(
    *,
    target: ProbeTarget | None,
    tool: Tool | None = None,
    kind: str = SweepRun.Kind.SWEEP,
    plan: dict | None = None,
    workload: dict | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
) -> SweepRun:
    """A queued run (nothing is sent anywhere); bad parameters raise ApplicationError naming the field.

    A run without a target is measured only in-process (``sweep_run_execute`` with the endpoint's config, as
    ``manage.py sweep --save`` does): no worker can measure or resume it. ``tool`` names its engine (a target's
    run is its target's tool's)."""
    run = _run_instance(
        target=target, tool=tool, kind=kind, plan=plan, workload=workload, hardware=hardware,
        hardware_count=hardware_count, hourly_price_usd=hourly_price_usd, flags=flags,
    )
    run.save()
    generation_bump()
    return run


def sweep_runs_send(runs: list[SweepRun]) -> None:
    for run in runs:
        try:
            current_app.send_task("lab.tasks.sweep_run_task", args=[run.pk], task_id=run.task_id or None, retry=True)
        except Exception:
            # The run stays queued; sweep_runs_recover sends it again within two leases.
            logger.exception("Could not send sweep run %s to the broker; recovery will retry", run.pk)


@transaction.atomic
def sweep_run_enqueue(**kwargs) -> SweepRun:
    """Create a queued run (sweep_run_create's arguments) and send its id, never a key, to Celery once the
    transaction commits."""
    run = sweep_run_create(**kwargs)
    transaction.on_commit(lambda: sweep_runs_send([run]))
    return run


def sweep_run_request(*, actor: Any, target: ProbeTarget, **options) -> SweepRun:
    """Queue a sweep or suite on someone's request, and record who asked for it."""
    run = sweep_run_enqueue(target=target, **options)
    audit_record(
        actor=actor, action=AuditEntry.Action.TRIGGER, instance=target,
        changes={"sweep_runs": {"old": None, "new": [run.pk]}},
    )
    return run


def sweep_run_request_stop(*, run: SweepRun) -> bool:
    """Ask a queued or running sweep to stop after the request in flight; a queued one stops at once."""
    now = timezone.now()
    stopped_queued = SweepRun.objects.filter(pk=run.pk, status=SweepRun.Status.QUEUED).update(
        status=SweepRun.Status.STOPPED, stopped_reason="stopped before it started", updated_at=now
    )
    asked = SweepRun.objects.filter(pk=run.pk, status=SweepRun.Status.RUNNING).update(
        stop_requested=True, updated_at=now
    )
    if stopped_queued:
        generation_bump()
    return bool(stopped_queued or asked)


@transaction.atomic
def sweep_run_resume(*, run: SweepRun) -> bool:
    """Queue a stopped sweep again; the levels already stored are kept and not measured twice."""
    task_id = str(uuid.uuid4())
    # A run without a target was measured from the command line; no worker knows its endpoint.
    resumed = SweepRun.objects.filter(pk=run.pk, status=SweepRun.Status.STOPPED, target__isnull=False).update(
        status=SweepRun.Status.QUEUED, stop_requested=False, stopped_reason="", attempts=0, task_id=task_id,
        lease_expires_at=None, updated_at=timezone.now(),
    )
    if resumed:
        generation_bump()
        run.task_id = task_id
        transaction.on_commit(lambda: sweep_runs_send([run]))
    return bool(resumed)


def sweep_runs_recover(*, limit: int = 100) -> dict[str, int]:
    """Re-send sweeps whose worker died or whose message was lost (the next claim measures only the levels not yet
    stored); give up on hopeless ones, expire stale ones. A run without a target was the command line's."""
    return runs_recover(SweepRun.objects.filter(target__isnull=False), send=sweep_runs_send, limit=limit)


def _measure_in_thread(coroutine_factory, *, on_level, stop_event: threading.Event, keep_alive) -> Any:
    """Run the measurement in its own thread and event loop; meanwhile this thread stores each finished level,
    renews the lease and polls for a stop request (``keep_alive`` returns False once the run is not ours)."""
    levels: queue.Queue = queue.Queue()
    box: dict = {}

    def measure() -> None:
        try:
            box["result"] = asyncio.run(coroutine_factory(levels.put))
        except BaseException as error:  # noqa: BLE001 - handed to the calling thread below
            box["error"] = error
        finally:
            levels.put(None)

    thread = threading.Thread(target=measure, name="sweep-measure", daemon=True)
    thread.start()
    last_poll = 0.0
    try:
        while True:
            try:
                item = levels.get(timeout=POLL_SECONDS)
            except queue.Empty:
                item = ...
            if item is None:
                break
            if item is not ...:
                if not on_level(item):
                    stop_event.set()
            now = timezone.now().timestamp()
            if now - last_poll >= POLL_SECONDS:
                last_poll = now
                if not keep_alive():
                    stop_event.set()
    except BaseException:
        stop_event.set()  # a soft time limit in this thread stops the measurement too
        thread.join(timeout=60)
        raise
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def sweep_run_execute(
    *,
    run_id: int,
    worker: str,
    config: EndpointConfig | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_level_done: Callable[[LevelResult], None] | None = None,
    on_request_done: Callable[[float, int, int], None] | None = None,
) -> RunExecution:
    """Claim one run, measure, store level by level, and finish it. Safe to call again for the same run.

    A worker measures the run's target. The command line passes the endpoint's ``config`` (a run without a
    target has no other), ``should_stop`` (polled before each request: Ctrl-C ends the run as an operator's stop
    would), ``on_level_done`` (called in this thread once a level is stored) and ``on_request_done`` (the
    runner's, called in the measuring thread as each request ends; for a progress bar)."""
    run = SweepRun.objects.select_related("target__tool", "hardware").filter(pk=run_id).first()
    if run is None:
        return RunExecution.MISSING
    if run.is_finished or run.status == SweepRun.Status.STOPPED:
        return RunExecution.ALREADY_FINISHED
    if run.target is None and config is None:
        return RunExecution.MISSING
    claim = lease_claim(SweepRun, pk=run_id, worker=worker)
    if claim.outcome is not None:
        return claim.outcome
    run.refresh_from_db()
    target = run.target
    config = config or target.endpoint_config()
    secret = secret_value(config.api_key_env)
    if config.key_missing():
        _finish(run, claim.attempt, status=SweepRun.Status.FAILED, error_class="auth_missing",
                error_message=f"The environment variable {config.api_key_env} is not set where this sweep ran.")
        return RunExecution.FINISHED
    stop_event = threading.Event()

    def keep_alive() -> bool:
        renewed = lease_renew(SweepRun, pk=run_id, attempt=claim.attempt)
        if renewed and SweepRun.objects.filter(pk=run_id, stop_requested=True).exists():
            stop_event.set()
        return bool(renewed)

    def on_level(level: LevelResult) -> bool:
        stored = sweep_level_record(run_id=run_id, attempt=claim.attempt, level=level, secret=secret)
        if stored and on_level_done is not None:
            on_level_done(level)
        return stored

    done = set(run.levels.values_list("level", flat=True))
    measured = _measure(run, config, on_level=on_level, stop_event=stop_event, keep_alive=keep_alive,
                        skip_levels=done, stored_before=bool(done), on_request_done=on_request_done,
                        should_stop=should_stop)
    if not _finish(run, claim.attempt, card=scrub(measured.card, secret), engine_version=measured.engine_version,
                   model_fingerprint=measured.model_fingerprint, secret=secret, **measured.outcome):
        logger.warning("Sweep run %s attempt %s lost its lease; its ending was discarded", run_id, claim.attempt)
        return RunExecution.LOST_LEASE
    return RunExecution.FINISHED


@dataclass
class Measured:
    """What one measurement of a run gave, before (or without) it is stored: the levels in the order they
    finished, the run's ending (status, reason, error, results), its card and what identifies the server."""

    levels: list[LevelResult]
    outcome: dict
    card: dict
    engine_version: str
    model_fingerprint: str


def _measure(
    run: SweepRun, config: EndpointConfig, *, on_level, stop_event: threading.Event, keep_alive,
    skip_levels: set = frozenset(), stored_before: bool = False, on_request_done=None, should_stop=None,
) -> Measured:
    facts = asyncio.run(fetch_server_facts(config))
    levels: list[LevelResult] = []

    def stopping() -> bool:
        # The caller's own signal (Ctrl-C) is seen at the next request, not at the next lease poll.
        if should_stop is not None and should_stop():
            stop_event.set()
        return stop_event.is_set()

    def collect(level: LevelResult) -> bool:
        levels.append(level)
        return on_level(level)

    try:
        if run.kind == SweepRun.Kind.SWEEP:
            plan = SweepPlan.from_dict(run.plan)
            workload = Workload.from_dict(run.workload)
            result = _measure_in_thread(
                lambda put: run_sweep(
                    config, plan=plan, workload=workload, on_level_done=put,
                    should_stop=stopping, skip_levels=skip_levels, on_request_done=on_request_done,
                ),
                on_level=collect, stop_event=stop_event, keep_alive=keep_alive,
            )
            outcome = _sweep_outcome(result, stop_event, stored_before=stored_before)
            server_info = result.server_info
        else:
            suite = {
                SweepRun.Kind.PREFILL_DECODE: run_prefill_decode,
                SweepRun.Kind.PREFIX_CACHE: run_prefix_cache,
                SweepRun.Kind.STRUCTURED_OUTPUT: run_structured_output,
            }[run.kind]
            parameters = {k: tuple(v) if isinstance(v, list) else v for k, v in run.plan.items()}
            result = _measure_in_thread(
                lambda put: suite(config, **parameters), on_level=collect, stop_event=stop_event,
                keep_alive=keep_alive,
            )
            document = result.to_dict()
            failed = bool(result.error_class)
            outcome = {
                "status": SweepRun.Status.FAILED if failed else SweepRun.Status.SUCCEEDED,
                "results": document, "error_class": result.error_class, "error_message": result.error_message,
            }
            server_info = {}
    except (SuiteError, SweepLimitError, WorkloadError) as error:
        outcome = {"status": SweepRun.Status.FAILED, "error_class": "invalid_plan", "error_message": str(error)}
        server_info = {}
    fingerprint = model_fingerprint(facts) or str(server_info.get("model") or "")
    return Measured(
        levels=levels,
        outcome=outcome,
        card=sweep_card(run=run, facts=facts, server_info=server_info, requested_model=config.model),
        engine_version=str(facts.get("engine_version") or ""),
        model_fingerprint=fingerprint,
    )


def sweep_measure(
    *,
    config: EndpointConfig,
    tool: Tool | None = None,
    kind: str = SweepRun.Kind.SWEEP,
    plan: dict | None = None,
    workload: dict | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
    should_stop: Callable[[], bool] | None = None,
    on_level_done: Callable[[LevelResult], None] | None = None,
    on_request_done: Callable[[float, int, int], None] | None = None,
) -> tuple[SweepRun, Measured]:
    """Measure a sweep or suite now and store nothing: the unsaved run (plan, workload, card fields as
    ``sweep_run_create`` checks them) and what was measured, with the knee as a stored sweep would have it."""
    run = _run_instance(
        target=None, tool=tool, kind=kind, plan=plan, workload=workload, hardware=hardware,
        hardware_count=hardware_count, hourly_price_usd=hourly_price_usd, flags=flags,
    )
    stop_event = threading.Event()

    def on_level(level: LevelResult) -> bool:
        if on_level_done is not None:
            on_level_done(level)
        return True

    measured = _measure(
        run, config, on_level=on_level, stop_event=stop_event, keep_alive=lambda: True,
        on_request_done=on_request_done, should_stop=should_stop,
    )
    secret = secret_value(config.api_key_env)
    measured.card = scrub(measured.card, secret)
    measured.outcome = scrub(measured.outcome, secret)
    measured.engine_version = scrub(measured.engine_version, secret)[:120]
    measured.model_fingerprint = scrub(measured.model_fingerprint, secret)[:300]
    if kind == SweepRun.Kind.SWEEP:
        measured.card["merged_reads"] = card_merged_reads([level.to_dict() for level in measured.levels])
        measured.outcome["results"] = {
            **measured.outcome.get("results", {}),
            "knee": find_knee([level.to_dict() for level in measured.levels]).to_dict(),
        }
    return run, measured


def _sweep_outcome(result, stop_event: threading.Event, *, stored_before: bool) -> dict:
    if result.stopped_reason == "interrupted" or (stop_event.is_set() and result.stopped_reason == ""):
        status = SweepRun.Status.STOPPED
    elif result.error_class and not result.levels and not stored_before:
        status = SweepRun.Status.FAILED
    elif result.stopped_reason in ("max_duration", "fatal"):
        status = SweepRun.Status.PARTIAL
    else:
        status = SweepRun.Status.SUCCEEDED
    return {
        "status": status,
        "stopped_reason": STOPPED_REASONS.get(result.stopped_reason, ""),
        "error_class": result.error_class,
        "error_message": result.error_message,
        "results": {"settle": result.settle},
    }


def _finish(run: SweepRun, attempt: int, *, status: str, secret: str = "", **values) -> bool:
    now = timezone.now()
    with transaction.atomic():
        generation_bump()
        locked = lease_holder(SweepRun, pk=run.pk, attempt=attempt).select_for_update().first()
        if locked is None:
            return False
        for name, value in values.items():
            value = scrub(value, secret) if name != "card" else value
            # Cut to the column after the key is removed, never before: a cut key could leave a short piece.
            if isinstance(value, str) and getattr(SweepRun._meta.get_field(name), "max_length", None):
                value = value[:SweepRun._meta.get_field(name).max_length]
            setattr(locked, name, value)
        locked.status = status
        locked.lease_expires_at = None
        locked.levels_done = locked.levels.count()
        if locked.kind == SweepRun.Kind.SWEEP:
            levels = [_stored_level_dict(level) for level in locked.levels.figures()]
            locked.results = {**(locked.results or {}), "knee": find_knee(levels).to_dict()}
            if locked.card:
                locked.card = {**locked.card, "merged_reads": card_merged_reads(levels)}
        if status != SweepRun.Status.STOPPED:
            locked.finished_at = now
            locked.changes = sweep_changes(run=locked)
        locked.save()
    return True


def _stored_level_dict(level: SweepLevel) -> dict:
    return {"level": level.level, "meets_slo": level.meets_slo, "ttft_ms": level.ttft_ms, "itl_ms": level.itl_ms}
