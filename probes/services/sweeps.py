"""Benchmark-lab runs: create and enqueue, claim and lease, execute level by level, stop and resume, import.

A sweep run moves queued -> running -> succeeded | partial | failed, or -> stopped when an operator asks it to
stop (then ``sweep_run_resume`` queues it again and only the levels not yet stored are measured). Celery
delivers at least once, so, as for probe runs: the claim is one conditional UPDATE (queued, or running with a
lapsed lease), one running sweep per target is enforced by a partial unique index, and every write of a
result re-checks "still running, still my attempt".

Execution keeps the database and the measurement apart: the sweep runs in its own thread with its own event
loop, and this thread (the worker's) stores each level as it arrives, renews the lease and polls for a stop
request, so the ORM is never called from inside the event loop and no query delays a timed stream.

``sweep_import_create`` stores a sweep measured elsewhere (vLLM ``bench serve``, GuideLLM, AIPerf), labelled
with the tool that produced it; it validates everything first and stores nothing on a bad input.
``sweep_import_file`` does the same from the tool's own result file (read by ``probe_client.sweep.imports``).
"""
from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import math
import queue
import threading
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from catalog.models import HardwareSpec, Tool
from core.exceptions import ApplicationError
from probe_client import EndpointConfig
from probe_client.secrets import MAX_TEXT, scrub, secret_value
from probe_client.sweep import (
    CLIENT_VERSION,
    ResultFileError,
    LevelResult,
    SweepLimitError,
    SweepPlan,
    SuiteError,
    Workload,
    WorkloadError,
    cost_per_million,
    fetch_server_facts,
    find_knee,
    model_fingerprint,
    parse_result_file,
    run_prefill_decode,
    run_prefix_cache,
    run_structured_output,
    run_sweep,
)
from probes.models import ProbeTarget, SweepLevel, SweepRun
from scoring.vocabulary import LEVEL_METRICS

logger = logging.getLogger(__name__)

IMPORT_TOOLS = {"vllm-bench-serve": "vLLM bench serve", "guidellm": "GuideLLM", "aiperf": "NVIDIA AIPerf"}
TOOL_LABELS = {SweepRun.OWN_TOOL: "Inference Atlas", **IMPORT_TOOLS}
SUITE_PARAMETERS = {
    SweepRun.Kind.PREFILL_DECODE: ("input_lengths", "requests_per_length", "output_tokens"),
    SweepRun.Kind.PREFIX_CACHE: ("prefix_tokens", "suffix_tokens", "requests", "output_tokens"),
    SweepRun.Kind.STRUCTURED_OUTPUT: ("requests", "input_tokens", "output_tokens", "variants"),
}
PERCENTILE_FIELDS = tuple(metric.key for metric in LEVEL_METRICS)
NUMBER_FIELDS = (
    "duration_s", "output_tps", "total_tps", "request_rate", "goodput_rps", "slo_attainment", "cost_per_1m_output_usd"
)
POLL_SECONDS = 0.5


def workload_key(workload: dict) -> str:
    """Runs with the same key measured the same workload (name and seed aside): their curves may share a chart."""
    shape = {k: v for k, v in workload.items() if k not in ("name", "seed", "basis")}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:32]


def _field_error(error: ValueError, *, prefix: str = "") -> ApplicationError:
    message = str(error)
    name = message.split(":", 1)[0].strip() if ":" in message else "non_field_errors"
    name = f"{prefix}{name}" if prefix else name
    return ApplicationError(message, fields={name: [message]})


def _price(value) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        raise ApplicationError(
            "hourly_price_usd must be a number.", fields={"hourly_price_usd": ["A number of dollars per hour."]}
        ) from None
    if not price.is_finite() or price < 0 or price > Decimal("100000"):
        raise ApplicationError(
            "hourly_price_usd must be between 0 and 100000.", fields={"hourly_price_usd": ["0 to 100000."]}
        )
    return price.quantize(Decimal("0.0001"))


def _hardware_count(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise ApplicationError("hardware_count must be between 1 and 4096.", fields={"hardware_count": ["1 to 4096."]})
    return value


# --- creating and enqueuing --------------------------------------------------------------------------------


def _validated_plan(kind: str, plan: dict | None, workload: dict | None) -> tuple[dict, dict]:
    """The stored plan and workload, checked by the client's own rules (errors name the field)."""
    plan = dict(plan or {})
    if kind == SweepRun.Kind.SWEEP:
        if workload is None:
            raise ApplicationError("A sweep needs a workload.", fields={"workload": ["Required for a sweep."]})
        try:
            parsed_workload = Workload.from_dict(workload)
        except WorkloadError as error:
            raise _field_error(error, prefix="workload.") from None
        try:
            parsed = SweepPlan.from_dict(plan)
            parsed.check_workload(parsed_workload)
        except SweepLimitError as error:
            raise _field_error(error, prefix="plan.") from None
        return parsed.to_dict(), parsed_workload.to_dict()
    allowed = SUITE_PARAMETERS.get(kind)
    if allowed is None:
        raise ApplicationError(f"Unknown kind {kind!r}.", fields={"kind": [f"One of {', '.join(SweepRun.Kind.values)}."]})
    unknown = sorted(set(plan) - set(allowed))
    if unknown:
        raise ApplicationError(
            f"{unknown[0]} is not a parameter of this suite.", fields={f"plan.{unknown[0]}": [f"Known: {', '.join(allowed)}."]}
        )
    return plan, (dict(workload) if workload else {})


def sweep_run_create(
    *,
    target: ProbeTarget,
    kind: str = SweepRun.Kind.SWEEP,
    plan: dict | None = None,
    workload: dict | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
) -> SweepRun:
    """A queued run (nothing is sent anywhere); bad parameters raise ApplicationError naming the field."""
    stored_plan, stored_workload = _validated_plan(kind, plan, workload)
    price = _price(hourly_price_usd)
    if kind == SweepRun.Kind.SWEEP and price is not None:
        stored_plan["hourly_price_usd"] = float(price)
    run = SweepRun(
        target=target,
        tool=target.tool,
        kind=kind,
        plan=stored_plan,
        workload=stored_workload,
        workload_name=str(stored_workload.get("name", ""))[:80],
        workload_key=workload_key(stored_workload) if stored_workload else "",
        hardware=hardware,
        hardware_count=_hardware_count(hardware_count),
        hourly_price_usd=price,
        flags=(flags or "")[:MAX_TEXT],
        levels_total=len(stored_plan.get("levels", [])) if kind == SweepRun.Kind.SWEEP else 1,
        task_id=str(uuid.uuid4()),
    )
    run.save()
    return run


def _send(run_id: int, task_id: str) -> None:
    from probes.tasks import sweep_run_task

    try:
        sweep_run_task.apply_async((run_id,), task_id=task_id or None, retry=True)
    except Exception:
        logger.exception("Could not send sweep run %s to the broker; it stays queued", run_id)


@transaction.atomic
def sweep_run_enqueue(**kwargs) -> SweepRun:
    """Create a queued run and send its id (never a key) to Celery once the transaction commits."""
    run = sweep_run_create(**kwargs)
    transaction.on_commit(lambda: _send(run.pk, run.task_id))
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
    return bool(stopped_queued or asked)


@transaction.atomic
def sweep_run_resume(*, run: SweepRun) -> bool:
    """Queue a stopped sweep again; the levels already stored are kept and not measured twice."""
    task_id = str(uuid.uuid4())
    resumed = SweepRun.objects.filter(pk=run.pk, status=SweepRun.Status.STOPPED).update(
        status=SweepRun.Status.QUEUED, stop_requested=False, stopped_reason="", attempts=0, task_id=task_id,
        lease_expires_at=None, updated_at=timezone.now(),
    )
    if resumed:
        transaction.on_commit(lambda: _send(run.pk, task_id))
    return bool(resumed)


# --- claiming ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepClaim:
    outcome: str | None  # None: claimed
    attempt: int = 0


def sweep_run_claim(*, run_id: int, worker: str) -> SweepClaim:
    now = timezone.now()
    claimable = Q(status=SweepRun.Status.QUEUED) | Q(status=SweepRun.Status.RUNNING, lease_expires_at__lt=now)
    try:
        with transaction.atomic():
            won = SweepRun.objects.filter(
                claimable, pk=run_id, attempts__lt=settings.PROBE_RUN_MAX_ATTEMPTS
            ).update(
                status=SweepRun.Status.RUNNING,
                attempts=F("attempts") + 1,
                lease_expires_at=now + dt.timedelta(seconds=settings.PROBE_RUN_LEASE_SECONDS),
                started_at=now,
                worker=worker[:200],
                error_class="",
                error_message="",
                updated_at=now,
            )
    except IntegrityError:
        return SweepClaim("busy")
    if won:
        return SweepClaim(None, SweepRun.objects.values_list("attempts", flat=True).get(pk=run_id))
    run = SweepRun.objects.filter(pk=run_id).only("status", "attempts").first()
    if run is None:
        return SweepClaim("missing")
    if run.is_finished or run.status == SweepRun.Status.STOPPED:
        return SweepClaim("already_finished")
    if run.status == SweepRun.Status.QUEUED and run.attempts >= settings.PROBE_RUN_MAX_ATTEMPTS:
        SweepRun.objects.filter(pk=run_id, status=SweepRun.Status.QUEUED).update(
            status=SweepRun.Status.FAILED, error_class="WorkerLost", finished_at=now,
            error_message="Workers died or stopped renewing the lease too many times; the sweep was given up.",
        )
        return SweepClaim("gave_up")
    return SweepClaim("busy")


def _mine(run_id: int, attempt: int):
    return SweepRun.objects.filter(pk=run_id, status=SweepRun.Status.RUNNING, attempts=attempt)


# --- executing ---------------------------------------------------------------------------------------------


def _level_fields(level: dict) -> dict:
    return {
        "mode": level.get("mode") or "concurrency",
        "level": float(level["level"]),
        "requests": int(level.get("requests") or 0),
        "ok": int(level.get("ok") or 0),
        **{name: level.get(name) for name in NUMBER_FIELDS},
        **{name: level.get(name) or {} for name in PERCENTILE_FIELDS},
        "meets_slo": level.get("meets_slo"),
        "errors": level.get("errors") or {},
        "output_tokens_source": str(level.get("output_tokens_source") or "")[:20],
        "truncated": bool(level.get("truncated")),
        "schedule_lag_ms": level.get("schedule_lag_ms"),
    }


def sweep_level_record(*, run_id: int, attempt: int, level: LevelResult, secret: str = "") -> bool:
    """Store one finished level, unless this attempt lost the run meanwhile."""
    with transaction.atomic():
        run = _mine(run_id, attempt).select_for_update().first()
        if run is None:
            return False
        fields = scrub(_level_fields(level.to_dict()), secret)
        SweepLevel.objects.update_or_create(run=run, level=fields.pop("level"), defaults=fields)
        SweepRun.objects.filter(pk=run_id).update(levels_done=run.levels.count(), updated_at=timezone.now())
    return True


def sweep_card(*, run: SweepRun, facts: dict, server_info: dict | None = None) -> dict:
    """The benchmark card of a run measured here: the server's word where it gives one, the operator's where
    it does not (each field says which), the workload, and the client."""
    target = run.target
    server_info = server_info or {}
    reported_version = facts.get("engine_version")
    return {
        "tool": SweepRun.OWN_TOOL,
        "client_version": CLIENT_VERSION,
        "engine": target.tool.name if target else "",
        "engine_reported": facts.get("engine"),
        "engine_version": reported_version or (target.engine_version if target else "") or None,
        "engine_version_source": ("server" if reported_version else ("operator" if target and target.engine_version else None)),
        "model_id": target.model_id if target else "",
        "served_model": facts.get("model_id") or server_info.get("model"),
        "weights": facts.get("weights"),
        "weights_format": facts.get("weights_format") or (target.quantization if target else "") or None,
        "weights_format_source": (
            "server" if facts.get("weights_format") else ("operator" if target and target.quantization else None)
        ),
        "context_length": facts.get("context_length"),
        "parallel_slots": facts.get("parallel_slots"),
        "server_sources": facts.get("sources", []),
        "server_headers": {k: v for k, v in server_info.items() if k in ("server", "x-powered-by", "via")},
        "hardware": (
            {"slug": run.hardware.slug, "name": run.hardware.name, "count": run.hardware_count} if run.hardware else None
        ),
        "hardware_source": "operator" if run.hardware else None,
        "flags": run.flags,
        "workload": run.workload,
    }


def _changes_since_previous(run: SweepRun) -> dict:
    """The retest rule: compare the server-reported engine version and model with the target's (or, for an
    import without target, the same tool and hardware's) previous finished run of the same kind."""
    previous = SweepRun.objects.finished().filter(kind=run.kind).exclude(pk=run.pk)
    if run.target_id:
        previous = previous.filter(target_id=run.target_id)
    else:
        previous = previous.filter(target__isnull=True, tool_id=run.tool_id, hardware_id=run.hardware_id)
    previous = previous.filter(queued_at__lt=run.queued_at).order_by("-queued_at", "-id").first()
    if previous is None:
        return {}
    changes = {}
    for name, old, new in (
        ("engine_version", previous.engine_version, run.engine_version),
        ("model", previous.model_fingerprint, run.model_fingerprint),
    ):
        if old and new and old != new:
            changes[name] = {"old": old, "new": new, "previous_run": previous.pk}
    return changes


def _config_for(target: ProbeTarget) -> EndpointConfig:
    return EndpointConfig(base_url=target.base_url, model=target.model_id, api_key_env=target.api_key_env or None)


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


def sweep_run_execute(*, run_id: int, worker: str) -> str:
    """Claim one run, measure, store level by level, and finish it. Safe to call again for the same run."""
    run = SweepRun.objects.select_related("target__tool", "hardware").filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.is_finished or run.status == SweepRun.Status.STOPPED:
        return "already_finished"
    if run.target is None:
        return "missing"
    claim = sweep_run_claim(run_id=run_id, worker=worker)
    if claim.outcome is not None:
        return claim.outcome
    run.refresh_from_db()
    target = run.target
    secret = secret_value(target.api_key_env)
    if target.api_key_env and not target.is_configured:
        _finish(run, claim.attempt, status=SweepRun.Status.FAILED, error_class="auth_missing",
                error_message=f"The environment variable {target.api_key_env} is not set where this sweep ran.")
        return "finished"
    config = _config_for(target)
    facts = asyncio.run(fetch_server_facts(config))
    stop_event = threading.Event()

    def keep_alive() -> bool:
        now = timezone.now()
        renewed = _mine(run_id, claim.attempt).update(
            lease_expires_at=now + dt.timedelta(seconds=settings.PROBE_RUN_LEASE_SECONDS)
        )
        if renewed and SweepRun.objects.filter(pk=run_id, stop_requested=True).exists():
            stop_event.set()
        return bool(renewed)

    def on_level(level: LevelResult) -> bool:
        return sweep_level_record(run_id=run_id, attempt=claim.attempt, level=level, secret=secret)

    outcome: dict = {}
    try:
        if run.kind == SweepRun.Kind.SWEEP:
            plan = SweepPlan.from_dict(run.plan)
            workload = Workload.from_dict(run.workload)
            done = set(run.levels.values_list("level", flat=True))
            result = _measure_in_thread(
                lambda put: run_sweep(
                    config, plan=plan, workload=workload, on_level_done=put,
                    should_stop=stop_event.is_set, skip_levels=done,
                ),
                on_level=on_level, stop_event=stop_event, keep_alive=keep_alive,
            )
            outcome = _sweep_outcome(run, result, stop_event)
            server_info = result.server_info
        else:
            suite = {
                SweepRun.Kind.PREFILL_DECODE: run_prefill_decode,
                SweepRun.Kind.PREFIX_CACHE: run_prefix_cache,
                SweepRun.Kind.STRUCTURED_OUTPUT: run_structured_output,
            }[run.kind]
            parameters = {k: tuple(v) if isinstance(v, list) else v for k, v in run.plan.items()}
            result = _measure_in_thread(
                lambda put: suite(config, **parameters), on_level=on_level, stop_event=stop_event,
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
    card = sweep_card(run=run, facts=facts, server_info=server_info)
    fingerprint = model_fingerprint(facts) or str(server_info.get("model") or "")
    if not _finish(run, claim.attempt, card=scrub(card, secret), engine_version=str(facts.get("engine_version") or "")[:120],
                   model_fingerprint=fingerprint[:300], secret=secret, **outcome):
        logger.warning("Sweep run %s attempt %s lost its lease; its ending was discarded", run_id, claim.attempt)
        return "lost_lease"
    return "finished"


def _sweep_outcome(run: SweepRun, result, stop_event: threading.Event) -> dict:
    if result.stopped_reason == "interrupted" or (stop_event.is_set() and result.stopped_reason == ""):
        status = SweepRun.Status.STOPPED
    elif result.error_class and not result.levels and not run.levels.exists():
        status = SweepRun.Status.FAILED
    elif result.stopped_reason in ("max_duration", "fatal"):
        status = SweepRun.Status.PARTIAL
    else:
        status = SweepRun.Status.SUCCEEDED
    return {
        "status": status,
        "stopped_reason": {"interrupted": "stopped by an operator", "max_duration": "duration limit reached",
                           "fatal": "every request of a level failed"}.get(result.stopped_reason, ""),
        "error_class": result.error_class,
        "error_message": result.error_message,
    }


def _finish(run: SweepRun, attempt: int, *, status: str, secret: str = "", **values) -> bool:
    now = timezone.now()
    with transaction.atomic():
        locked = _mine(run.pk, attempt).select_for_update().first()
        if locked is None:
            return False
        for name, value in values.items():
            setattr(locked, name, scrub(value, secret) if name != "card" else value)
        locked.status = status
        locked.lease_expires_at = None
        locked.levels_done = locked.levels.count()
        if locked.kind == SweepRun.Kind.SWEEP:
            levels = [_stored_level_dict(level) for level in locked.levels.all()]
            locked.results = {"knee": find_knee(levels).to_dict()}
        if status != SweepRun.Status.STOPPED:
            locked.finished_at = now
            locked.changes = _changes_since_previous(locked)
        locked.save()
    return True


def _stored_level_dict(level: SweepLevel) -> dict:
    return {"level": level.level, "meets_slo": level.meets_slo}


# --- importing ---------------------------------------------------------------------------------------------


def _number(value, where: str, *, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ApplicationError(f"{where}: must be a finite number of at least 0.", fields={where: ["A number ≥ 0."]})
    return float(value)


def _validated_level(data, position: int) -> dict:
    where = f"levels.{position}"
    if not isinstance(data, dict):
        raise ApplicationError(f"{where}: must be an object.", fields={where: ["An object."]})
    known = {"mode", "level", "requests", "ok", "errors", "meets_slo", "output_tokens_source", "truncated",
             "schedule_lag_ms", *PERCENTILE_FIELDS, *NUMBER_FIELDS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ApplicationError(f"{where}.{unknown[0]}: not a level field.", fields={f"{where}.{unknown[0]}": ["Unknown."]})
    if data.get("mode", "concurrency") not in ("concurrency", "rate"):
        raise ApplicationError(f"{where}.mode: concurrency or rate.", fields={f"{where}.mode": ["concurrency or rate."]})
    level = _number(data.get("level"), f"{where}.level", allow_none=False)
    if level <= 0:
        raise ApplicationError(f"{where}.level: must be above 0.", fields={f"{where}.level": ["Above 0."]})
    for name in ("requests", "ok"):
        value = data.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ApplicationError(f"{where}.{name}: a whole number ≥ 0.", fields={f"{where}.{name}": ["A count."]})
    if data.get("ok", 0) > data.get("requests", 0):
        raise ApplicationError(f"{where}.ok: more than requests.", fields={f"{where}.ok": ["At most requests."]})
    for name in NUMBER_FIELDS:
        _number(data.get(name), f"{where}.{name}")
    for name in PERCENTILE_FIELDS:
        figures = data.get(name) or {}
        if not isinstance(figures, dict):
            raise ApplicationError(f"{where}.{name}: an object of percentiles.", fields={f"{where}.{name}": ["An object."]})
        for key, value in figures.items():
            _number(value, f"{where}.{name}.{key}")
    errors = data.get("errors") or {}
    if not isinstance(errors, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in errors.items()
    ):
        raise ApplicationError(f"{where}.errors: {{class: count}}.", fields={f"{where}.errors": ["{class: count}."]})
    if data.get("meets_slo") not in (None, True, False):
        raise ApplicationError(f"{where}.meets_slo: true, false or null.", fields={f"{where}.meets_slo": ["A boolean."]})
    return {**data, "level": level}


@transaction.atomic
def sweep_import_create(
    *,
    source_tool: str,
    card: dict,
    workload: dict,
    levels: list[dict],
    target: ProbeTarget | None = None,
    tool: Tool | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
    plan: dict | None = None,
    started_at: dt.datetime | None = None,
    finished_at: dt.datetime | None = None,
) -> SweepRun:
    """Store a sweep measured by a peer tool, labelled with that tool.

    ``levels``: dicts shaped like ``probe_client.sweep.LevelResult.to_dict()`` (``level`` and ``mode`` required;
    a figure the tool did not report is None). ``card``: what the file states (model, engine, version, ...).
    ``workload``: a ``Workload.to_dict()``-shaped description. Validates everything first; on any problem raises
    ApplicationError naming the field (``levels.3.ttft_ms.p99``, ``workload.input.value``, ...) and stores nothing.
    The retest rule applies as for measured runs (``card["engine_version"]``, ``card["weights"]`` or
    ``card["model_id"]``). Cost per 1M output tokens is filled from ``hourly_price_usd`` where the level has output
    tok/s and no cost of its own.
    """
    if source_tool not in IMPORT_TOOLS:
        raise ApplicationError(
            f"source_tool must be one of {', '.join(IMPORT_TOOLS)}.", fields={"source_tool": [f"One of {', '.join(IMPORT_TOOLS)}."]}
        )
    if not isinstance(card, dict):
        raise ApplicationError("card must be an object.", fields={"card": ["An object."]})
    try:
        parsed_workload = Workload.from_dict(workload)
    except WorkloadError as error:
        raise _field_error(error, prefix="workload.") from None
    if not isinstance(levels, list) or not levels:
        raise ApplicationError("levels must be a non-empty list.", fields={"levels": ["At least one level."]})
    if len(levels) > 64:
        raise ApplicationError("At most 64 levels.", fields={"levels": ["At most 64."]})
    checked = [_validated_level(level, position) for position, level in enumerate(levels)]
    if len({level["level"] for level in checked}) != len(checked):
        raise ApplicationError("Each level may appear once.", fields={"levels": ["Duplicate level."]})
    if target is not None and tool is None:
        tool = target.tool
    price = _price(hourly_price_usd)
    stored_workload = parsed_workload.to_dict()
    full_card = {**scrub(card, ""), "tool": source_tool, "tool_label": IMPORT_TOOLS[source_tool],
                 "workload": stored_workload, "flags": flags}
    if hardware is not None:
        full_card["hardware"] = {"slug": hardware.slug, "name": hardware.name, "count": hardware_count}
    now = timezone.now()
    run = SweepRun.objects.create(
        target=target,
        tool=tool,
        kind=SweepRun.Kind.SWEEP,
        status=SweepRun.Status.IMPORTED,
        source_tool=source_tool,
        hardware=hardware,
        hardware_count=_hardware_count(hardware_count),
        hourly_price_usd=price,
        flags=(flags or "")[:MAX_TEXT],
        workload=stored_workload,
        workload_name=parsed_workload.name[:80],
        workload_key=workload_key(stored_workload),
        plan=scrub(plan or {}, ""),
        card=full_card,
        engine_version=str(card.get("engine_version") or "")[:120],
        model_fingerprint=str(card.get("weights") or card.get("model_id") or "")[:300],
        levels_total=len(checked),
        levels_done=len(checked),
        queued_at=started_at or now,
        started_at=started_at,
        finished_at=finished_at or now,
    )
    for level in checked:
        fields = _level_fields(scrub(level, ""))
        if fields["cost_per_1m_output_usd"] is None and price is not None:
            fields["cost_per_1m_output_usd"] = cost_per_million(float(price), fields["output_tps"])
        SweepLevel.objects.create(run=run, **fields)
    run.results = {"knee": find_knee(checked).to_dict()}
    run.changes = _changes_since_previous(run)
    run.save(update_fields=["results", "changes", "updated_at"])
    return run


def sweep_import_file(
    *,
    data: bytes,
    source_tool: str | None = None,
    target: ProbeTarget | None = None,
    tool: Tool | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
) -> SweepRun:
    """Import a peer tool's result file as it wrote it (``source_tool`` None: recognised from the file).

    A file that is not one of the known formats, or whose figures are not valid, raises ApplicationError on
    the ``file`` field (``source_tool`` when that is what is wrong) and nothing is stored."""
    try:
        parsed = parse_result_file(data, source_tool=source_tool or None)
    except ResultFileError as error:
        message = str(error)
        name = "source_tool" if message.startswith("source_tool") else "file"
        raise ApplicationError(message, fields={name: [message]}) from None
    started = dt.datetime.fromtimestamp(parsed.started_at, tz=dt.timezone.utc) if parsed.started_at else None
    finished = dt.datetime.fromtimestamp(parsed.finished_at, tz=dt.timezone.utc) if parsed.finished_at else None
    try:
        return sweep_import_create(
            source_tool=parsed.source_tool, card=parsed.card, workload=parsed.workload, levels=parsed.levels,
            plan=parsed.plan, target=target, tool=tool, hardware=hardware, hardware_count=hardware_count,
            hourly_price_usd=hourly_price_usd, flags=flags, started_at=started, finished_at=finished,
        )
    except ApplicationError as error:
        inner = next(iter(error.fields), "")
        if inner.startswith(("levels", "workload")):
            message = f"file: the figures it holds are not valid ({error.message})"
            raise ApplicationError(message, fields={"file": [message]}) from None
        raise


def sweep_run_request(*, actor: Any, target: ProbeTarget, **options) -> SweepRun:
    """Queue a sweep or suite on someone's request, and record who asked for it."""
    from core.models import AuditEntry
    from core.services import audit_record

    run = sweep_run_enqueue(target=target, **options)
    audit_record(
        actor=actor, action=AuditEntry.Action.TRIGGER, instance=target,
        changes={"sweep_runs": {"old": None, "new": [run.pk]}},
    )
    return run
