"""Create, claim, execute and record probe runs.

A run moves queued -> running -> succeeded | partial | failed | not_configured. Celery delivers a
task at least once (acks_late, reject_on_worker_lost), so every step is guarded by state:

* the claim is one conditional UPDATE (queued, or running with a lapsed lease -> running, attempt + 1);
  a partial unique index allows one running run per target, so a second run of the same endpoint
  is refused by the database and retried later;
* the worker renews a short lease while it measures; a worker that dies stops renewing, so a
  redelivered task (or the recovery task) re-claims the run after the lease lapses;
* results are written in one transaction that first re-checks "still running, still my attempt", so
  a worker that lost its lease cannot add a second set of measurements.

API keys never enter this module's data: targets name an environment variable, the client reads it
at request time, and every text stored from a run is scrubbed of the key's value as a last defence.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import enum
import json
import logging
import math
import os
import platform
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.exceptions import ApplicationError
from probes import client as probe_client
from probes.client.errors import remove_secrets
from probes.models import CompatOutcome, ProbeRun, ProbeTarget, RequestMeasurement
from probes.selectors.runs import probe_targets_due, probe_targets_not_configured
from probes.services.summaries import METRICS, compat_statuses_refresh, probe_summaries_refresh, run_summary_compute

logger = logging.getLogger(__name__)

SUITES = (ProbeRun.Suite.SPEED.value, ProbeRun.Suite.COMPAT.value)
REDACTED = "[redacted]"
MAX_TEXT = 4000
MEASUREMENT_FIELDS = [
    f.name for f in RequestMeasurement._meta.get_fields() if f.concrete and f.name not in ("id", "run", "index")
]
# Text and JSON columns of a measurement that may carry what a provider said: scrubbed before storing.
TEXT_FIELDS = {"error_class": 60, "error_message": MAX_TEXT, "request_id": 200, "output_tokens_source": 20}
JSON_FIELDS = ("server_timings", "gaps_ms", "tokens_per_chunk")


class RunExecution(enum.StrEnum):
    FINISHED = "finished"
    ALREADY_FINISHED = "already_finished"
    NOT_CONFIGURED = "not_configured"
    BUSY = "busy"
    GAVE_UP = "gave_up"
    LOST_LEASE = "lost_lease"
    MISSING = "missing"


# --- creating and enqueuing -------------------------------------------------------------------


def _queue_for_region(region: str | None) -> str:
    return f"{settings.PROBE_QUEUE_PREFIX}{region}" if region else "celery"


@dataclass(frozen=True)
class Workload:
    name: str
    input_tokens: int
    max_tokens: int


def _workload(name: str) -> Workload:
    """A workload of probes.client.WORKLOADS with its fixed output length from settings."""
    if name not in probe_client.WORKLOADS:
        known = ", ".join(sorted(probe_client.WORKLOADS))
        raise ApplicationError(
            f"Unknown workload {name!r}; known workloads: {known}.", fields={"workloads": [f"Unknown: {name}"]}
        )
    max_tokens = settings.PROBE_MAX_OUTPUT_TOKENS or settings.PROBE_WORKLOAD_MAX_TOKENS.get(name, 1000)
    return Workload(name=name, input_tokens=probe_client.WORKLOADS[name], max_tokens=max_tokens)


def _validated(
    *,
    suites: Iterable[str],
    workloads: Iterable[str] | None,
    concurrency: int | None,
    requests: int | None,
    max_tokens: int | None = None,
) -> tuple[list[str], list[str], int, int | None]:
    suites = list(dict.fromkeys(suites))
    unknown = [suite for suite in suites if suite not in SUITES]
    if not suites or unknown:
        raise ApplicationError(
            f"suites must be a non-empty subset of {', '.join(SUITES)}.", fields={"suites": [f"Unknown: {unknown}"]}
        )
    names = list(dict.fromkeys(workloads or settings.PROBE_SCHEDULED_WORKLOADS))
    for name in names:
        _workload(name)
    concurrency = 1 if concurrency is None else concurrency
    if not 1 <= concurrency <= 256:
        raise ApplicationError("concurrency must be between 1 and 256.", fields={"concurrency": ["1 to 256."]})
    if requests is not None and not 1 <= requests <= 1000:
        raise ApplicationError("requests must be between 1 and 1000.", fields={"requests": ["1 to 1000."]})
    if max_tokens is not None and not 1 <= max_tokens <= 100_000:
        raise ApplicationError("max_tokens must be between 1 and 100000.", fields={"max_tokens": ["1 to 100000."]})
    return suites, names, concurrency, requests


def _pending_exists(*, target: ProbeTarget, suite: str, workload: str, concurrency: int) -> bool:
    return ProbeRun.objects.pending().filter(
        target=target, suite=suite, workload=workload, concurrency=concurrency
    ).exists()


@transaction.atomic
def probe_runs_create(
    *,
    target: ProbeTarget,
    suites: Sequence[str] = SUITES,
    workloads: Sequence[str] | None = None,
    concurrency: int | None = None,
    requests: int | None = None,
    region: str | None = None,
    skip_pending: bool = False,
    max_tokens: int | None = None,
) -> list[ProbeRun]:
    """Queued runs, one per speed workload plus one compat run; nothing is sent anywhere."""
    suites, names, concurrency, requests = _validated(
        suites=suites, workloads=workloads, concurrency=concurrency, requests=requests, max_tokens=max_tokens
    )
    queue = _queue_for_region(region)
    runs = []
    for suite in suites:
        plans = [(name, _workload(name)) for name in names] if suite == ProbeRun.Suite.SPEED else [("", None)]
        for name, workload in plans:
            run_concurrency = concurrency if suite == ProbeRun.Suite.SPEED else 1
            if skip_pending and _pending_exists(target=target, suite=suite, workload=name, concurrency=run_concurrency):
                continue
            run = ProbeRun(
                target=target,
                suite=suite,
                workload=name,
                concurrency=run_concurrency,
                region=region or "",
                queue=queue,
                task_id=str(uuid.uuid4()),
            )
            if workload is not None:
                run.input_tokens = workload.input_tokens
                run.max_output_tokens = max_tokens or workload.max_tokens
                run.request_count = requests or max(settings.PROBE_SPEED_REQUESTS, concurrency)
            else:
                run.request_count = len(probe_client.COMPAT_CHECKS)
            run.save()
            runs.append(run)
    return runs


def _send(runs: Sequence[ProbeRun]) -> None:
    from probes.tasks import probe_run_task

    for run in runs:
        try:
            probe_run_task.apply_async(
                (run.pk,),
                queue=run.queue or "celery",
                task_id=run.task_id or None,
                expires=settings.PROBE_RUN_TASK_EXPIRES,
                # Explicit None keeps the sender's limits out of the message: the worker's own apply.
                time_limit=None,
                soft_time_limit=None,
                retry=True,
                retry_policy={"max_retries": 3, "interval_start": 0, "interval_step": 0.5, "interval_max": 2},
            )
        except Exception:
            # The run stays queued; probe_runs_recover re-sends queued runs nobody picked up.
            logger.exception("Could not send probe run %s to the broker; recovery will retry", run.pk)


@transaction.atomic
def probe_runs_enqueue(
    *,
    target: ProbeTarget,
    suites: Sequence[str] = SUITES,
    workloads: Sequence[str] | None = None,
    concurrency: int | None = None,
    requests: int | None = None,
    region: str | None = None,
    skip_pending: bool = False,
    max_tokens: int | None = None,
) -> list[ProbeRun]:
    """Create queued runs and send their ids (never keys) to Celery once the transaction commits."""
    runs = probe_runs_create(
        target=target,
        suites=suites,
        workloads=workloads,
        concurrency=concurrency,
        requests=requests,
        region=region,
        skip_pending=skip_pending,
        max_tokens=max_tokens,
    )
    if runs:
        transaction.on_commit(lambda: _send(runs))
    return runs


def _schedule(*, plans: Sequence[dict[str, Any]]) -> list[ProbeRun]:
    runs: list[ProbeRun] = []
    for target in probe_targets_due():
        for region in settings.PROBE_SCHEDULE_REGIONS or [None]:
            for plan in plans:
                runs += probe_runs_enqueue(target=target, region=region, skip_pending=True, **plan)
    skipped = [target.slug for target in probe_targets_not_configured()]
    if skipped:
        logger.info("Not probed (API key variable not set on this worker): %s", ", ".join(skipped))
    return runs


def probe_schedule_speed() -> list[ProbeRun]:
    """Every few hours: single-stream speed runs for each enabled, configured target and workload."""
    return _schedule(plans=[{"suites": ("speed",), "workloads": settings.PROBE_SCHEDULED_WORKLOADS}])


def probe_schedule_daily() -> list[ProbeRun]:
    """Daily: the parallel speed test and the compatibility suite."""
    return _schedule(
        plans=[
            {
                "suites": ("speed",),
                "workloads": [settings.PROBE_PARALLEL_WORKLOAD],
                "concurrency": settings.PROBE_PARALLEL_CONCURRENCY,
            },
            {"suites": ("compat",)},
        ]
    )


# --- claiming ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    outcome: RunExecution | None  # None means claimed
    attempt: int = 0


def probe_run_claim(*, run_id: int, worker: str) -> Claim:
    """Take a run for this worker with one conditional UPDATE, or say why not."""
    now = timezone.now()
    claimable = Q(status=ProbeRun.Status.QUEUED) | Q(status=ProbeRun.Status.RUNNING, lease_expires_at__lt=now)
    try:
        with transaction.atomic():
            won = (
                ProbeRun.objects.filter(claimable, pk=run_id, attempts__lt=settings.PROBE_RUN_MAX_ATTEMPTS)
                .update(
                    status=ProbeRun.Status.RUNNING,
                    attempts=F("attempts") + 1,
                    lease_expires_at=now + dt.timedelta(seconds=settings.PROBE_RUN_LEASE_SECONDS),
                    started_at=now,
                    finished_at=None,
                    worker=worker[:200],
                    region=settings.PROBE_REGION,
                    error_class="",
                    error_message="",
                    updated_at=now,
                )
            )
            if won:
                # A previous attempt died before recording; nothing of it may survive into this one.
                RequestMeasurement.objects.filter(run_id=run_id).delete()
                CompatOutcome.objects.filter(run_id=run_id).delete()
    except IntegrityError:
        return Claim(RunExecution.BUSY)  # another run of the same target holds the one running slot
    if won:
        return Claim(None, ProbeRun.objects.values_list("attempts", flat=True).get(pk=run_id))

    run = ProbeRun.objects.filter(pk=run_id).only("status", "attempts", "lease_expires_at").first()
    if run is None:
        return Claim(RunExecution.MISSING)
    if run.is_finished:
        return Claim(RunExecution.ALREADY_FINISHED)
    if run.attempts >= settings.PROBE_RUN_MAX_ATTEMPTS and (
        run.status == ProbeRun.Status.QUEUED or (run.lease_expires_at or now) <= now
    ):
        probe_run_give_up(run_id=run_id, now=now)
        return Claim(RunExecution.GAVE_UP)
    return Claim(RunExecution.BUSY)  # a live worker holds it: a duplicate delivery does nothing now


def probe_run_give_up(*, run_id: int, now: dt.datetime | None = None) -> bool:
    now = now or timezone.now()
    return bool(
        ProbeRun.objects.filter(pk=run_id)
        .filter(Q(status=ProbeRun.Status.QUEUED) | Q(status=ProbeRun.Status.RUNNING, lease_expires_at__lt=now))
        .update(
            status=ProbeRun.Status.FAILED,
            finished_at=now,
            lease_expires_at=None,
            error_class="WorkerLost",
            error_message=(
                f"Workers died or stopped renewing the lease {settings.PROBE_RUN_MAX_ATTEMPTS} times; "
                "the run was given up rather than retried forever."
            ),
            updated_at=now,
        )
    )


class _LeaseKeeper:
    """Renews the lease from a thread while the event loop measures; never blocks the measurement."""

    def __init__(self, *, run_id: int, attempt: int) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _LeaseKeeper:
        # Inside an open transaction the run row is not visible (or is locked) for another connection.
        if not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._renew, name=f"probe-lease-{self.run_id}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _renew(self) -> None:
        interval = max(0.2, settings.PROBE_RUN_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                try:
                    renewed = ProbeRun.objects.filter(
                        pk=self.run_id, status=ProbeRun.Status.RUNNING, attempts=self.attempt
                    ).update(
                        lease_expires_at=timezone.now() + dt.timedelta(seconds=settings.PROBE_RUN_LEASE_SECONDS)
                    )
                except DatabaseError:
                    # A busy database (SQLite's single writer, a failover) must not end the renewals.
                    logger.warning("Could not renew the lease of probe run %s; retrying", self.run_id)
                    connection.close()
                    continue
                if not renewed:
                    return  # another attempt owns the run now; recording will notice and discard ours
        finally:
            connection.close()


# --- executing ---------------------------------------------------------------------------------


def _secret_of(target: ProbeTarget) -> str:
    value = os.environ.get(target.api_key_env, "") if target.api_key_env else ""
    return value if len(value) >= 4 else ""


def _clean_text(text: str, secret: str) -> str:
    text = remove_secrets(text, (secret,), marker=REDACTED) if secret else text
    # PostgreSQL refuses NUL in text and JSONB, and a lone surrogate (json.loads makes one of "\\ud800") cannot be
    # encoded for it: either would fail the whole recording transaction.
    text = text.replace("\x00", "")
    return text.encode("utf-8", "replace").decode("utf-8")[:MAX_TEXT]


def _scrub(value: Any, secret: str) -> Any:
    """Make a value from a provider storable and secret-free: every string (keys included) loses the key, any
    echoed part of it, NUL bytes and unencodable characters, and is cut to MAX_TEXT; NaN and Infinity (which
    JSONB refuses) become null. Every stored text and JSON value of a run passes through here."""
    if isinstance(value, str):
        return _clean_text(value, secret)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {_scrub(str(k), secret): _scrub(v, secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(item, secret) for item in value]
    return value


def _text(value: Any, secret: str) -> str:
    if value is None:
        return ""
    # ensure_ascii=False keeps a key with quotes or non-ASCII characters recognisable to the scrub below.
    text = (
        value
        if isinstance(value, str)
        else json.dumps(_scrub(value, ""), default=str, sort_keys=True, ensure_ascii=False)
    )
    return _scrub(text, secret)


def probe_target_snapshot(*, target: ProbeTarget) -> dict[str, Any]:
    """The target as it was when a run started: enough to reproduce it, and no secret."""
    return {
        "slug": target.slug,
        "name": target.name,
        "tool": target.tool.slug,
        "tool_name": target.tool.name,
        "tool_kind": target.tool.kind,
        "base_url": target.base_url,
        "model_id": target.model_id,
        "api_key_env": target.api_key_env,
        "api_key_set": target.api_key_is_set,
        "hardware": target.hardware,
        "quantization": target.quantization,
        "engine_version": target.engine_version,
        "region": target.region,
    }


def probe_endpoint_config(*, base_url: str, model: str, api_key_env: str | None) -> probe_client.EndpointConfig:
    """The client's view of an endpoint: the variable NAME only; the client reads the value per request."""
    return probe_client.EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env or None)


def probe_client_info() -> dict[str, Any]:
    import httpx

    return {
        "client": "probes.client",
        "httpx": httpx.__version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "region": settings.PROBE_REGION,
    }


@dataclass
class SuiteOutcome:
    status: str
    error_class: str = ""
    error_message: str = ""
    measurements: list[RequestMeasurement] = field(default_factory=list)
    compat_outcomes: list[CompatOutcome] = field(default_factory=list)
    request_params: dict[str, Any] = field(default_factory=dict)
    server_info: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def _fit(name: str, value: Any, secret: str) -> Any:
    """Scrub a text or JSON value of the key and cut text to the column's length."""
    if name in TEXT_FIELDS:
        return _text(value, secret)[: TEXT_FIELDS[name]]
    if name in JSON_FIELDS:
        return _scrub(value, secret)
    return value


def _measurement(result: probe_client.RequestResult, *, secret: str) -> RequestMeasurement:
    values = result.as_fields()
    fitted = {name: _fit(name, values[name], secret) for name in MEASUREMENT_FIELDS if name in values}
    return RequestMeasurement(index=values["index"], **fitted)


def _run_speed(run: ProbeRun, config: Any, secret: str, on_request_done: Callable | None) -> SuiteOutcome:
    result = asyncio.run(
        probe_client.run_speed_suite(
            config,
            input_tokens=run.input_tokens,
            max_tokens=run.max_output_tokens,
            requests=run.request_count,
            concurrency=run.concurrency,
            on_request_done=on_request_done,
        )
    )
    measurements = [_measurement(item, secret=secret) for item in result.requests]
    succeeded = sum(1 for m in measurements if m.ok)
    if measurements and succeeded == len(measurements):
        status = ProbeRun.Status.SUCCEEDED
    elif succeeded:
        status = ProbeRun.Status.PARTIAL
    else:
        status = ProbeRun.Status.FAILED
    error_class = error_message = ""
    failures = [m for m in measurements if not m.ok]
    if failures:
        counts = Counter(m.error_class or "Error" for m in failures)
        error_class = counts.most_common(1)[0][0]
        first = next(m for m in failures if (m.error_class or "Error") == error_class)
        error_message = f"{len(failures)} of {len(measurements)} requests failed; first: {first.error_message}"
    elif not measurements:
        error_class = result.error_class or "NoRequests"
        error_message = result.error_message or "The speed suite returned no request results."
    return SuiteOutcome(
        status=status,
        error_class=error_class[:60],
        error_message=_text(error_message, secret),
        measurements=measurements,
        request_params=_scrub(result.request_params, secret),
        server_info=_scrub(result.server_info, secret),
        summary=run_summary_compute(rows=[{"ok": m.ok, **{k: getattr(m, k) for k in METRICS}} for m in measurements]),
    )


def _run_compat(run: ProbeRun, config: Any, secret: str, on_check_done: Callable | None) -> SuiteOutcome:
    result = asyncio.run(probe_client.run_compat_suite(config, on_check_done=on_check_done))
    outcomes = [
        CompatOutcome(
            check_name=check.name,
            outcome=str(check.outcome),
            http_status=check.http_status,
            message=_text(check.message, secret),
            detail=_text(check.detail, secret),
        )
        for check in result.checks
    ]
    errors = sum(1 for o in outcomes if o.outcome == CompatOutcome.Outcome.ERROR)
    if not outcomes or errors == len(outcomes):
        status = ProbeRun.Status.FAILED
    elif errors:
        status = ProbeRun.Status.PARTIAL
    else:
        status = ProbeRun.Status.SUCCEEDED
    counts = Counter(o.outcome for o in outcomes)
    error_class = error_message = ""
    if not outcomes:
        error_class = result.error_class or "NoChecks"
        error_message = result.error_message or "The compat suite returned no check results."
    elif errors:
        error_class = "CheckErrors"
        failing = ", ".join(o.check_name for o in outcomes if o.outcome == CompatOutcome.Outcome.ERROR)
        error_message = f"{errors} of {len(outcomes)} checks ended in an error: {failing}"
    return SuiteOutcome(
        status=status,
        error_class=error_class,
        error_message=_text(error_message, secret),
        compat_outcomes=outcomes,
        server_info=_scrub(result.server_info, secret),
        summary={"checks": len(outcomes), "outcomes": dict(sorted(counts.items()))},
    )


def _request_params(run: ProbeRun) -> dict[str, Any]:
    params: dict[str, Any] = {
        "suite": run.suite,
        "base_url": run.target.base_url,
        "model": run.target.model_id,
        "stream": True,
    }
    if run.suite == ProbeRun.Suite.SPEED:
        params.update(
            workload=run.workload,
            input_tokens=run.input_tokens,
            max_tokens=run.max_output_tokens,
            requests=run.request_count,
            concurrency=run.concurrency,
            unique_prompt=True,
        )
    else:
        params["checks"] = list(probe_client.COMPAT_CHECKS)
    return params


def _execute_suite(run: ProbeRun, *, on_progress: Callable | None) -> SuiteOutcome:
    secret = _secret_of(run.target)
    try:
        config = probe_endpoint_config(
            base_url=run.target.base_url, model=run.target.model_id, api_key_env=run.target.api_key_env
        )
        if run.suite == ProbeRun.Suite.SPEED:
            outcome = _run_speed(run, config, secret, on_progress)
        else:
            outcome = _run_compat(run, config, secret, on_progress)
    except Exception as exc:  # noqa: BLE001 - a probe failure of any kind is a stored result, not a crash
        logger.warning("Probe run %s failed: %s", run.pk, type(exc).__name__)
        outcome = SuiteOutcome(
            status=ProbeRun.Status.FAILED,
            error_class=type(exc).__name__[:60],
            error_message=_text(str(exc) or repr(exc), secret),
        )
    outcome.request_params = {**_request_params(run), **outcome.request_params}
    return outcome


def probe_run_record(*, run_id: int, attempt: int, outcome: SuiteOutcome, snapshot: dict[str, Any]) -> bool:
    """Store a finished attempt, only if this attempt still owns the run; False means another took over."""
    now = timezone.now()
    with transaction.atomic():
        owned = (
            ProbeRun.objects.select_for_update()
            .filter(pk=run_id, status=ProbeRun.Status.RUNNING, attempts=attempt)
            .first()
        )
        if owned is None:
            return False
        RequestMeasurement.objects.filter(run_id=run_id).delete()
        CompatOutcome.objects.filter(run_id=run_id).delete()
        for item in outcome.measurements:
            item.run_id = run_id
        for item in outcome.compat_outcomes:
            item.run_id = run_id
        RequestMeasurement.objects.bulk_create(outcome.measurements)
        CompatOutcome.objects.bulk_create(outcome.compat_outcomes)
        owned.status = outcome.status
        owned.error_class = outcome.error_class
        owned.error_message = outcome.error_message
        owned.request_params = outcome.request_params
        owned.server_info = outcome.server_info
        owned.client_info = probe_client_info()
        owned.summary = outcome.summary
        owned.target_snapshot = snapshot
        owned.finished_at = now
        owned.lease_expires_at = None
        owned.save()
    return True


def _mark_not_configured(run: ProbeRun, *, worker: str) -> bool:
    now = timezone.now()
    return bool(
        ProbeRun.objects.filter(pk=run.pk, status=ProbeRun.Status.QUEUED).update(
            status=ProbeRun.Status.NOT_CONFIGURED,
            started_at=now,
            finished_at=now,
            worker=worker[:200],
            region=settings.PROBE_REGION,
            error_class="NotConfigured",
            error_message=(
                f"The environment variable {run.target.api_key_env} is not set where this run executed; "
                "the endpoint was not contacted."
            ),
            target_snapshot=probe_target_snapshot(target=run.target),
            client_info=probe_client_info(),
            updated_at=now,
        )
    )


def probe_run_execute(*, run_id: int, worker: str, on_progress: Callable | None = None) -> RunExecution:
    """Claim one run, measure, record and refresh summaries. Safe to call again for the same run."""
    run = ProbeRun.objects.select_related("target__tool").filter(pk=run_id).first()
    if run is None:
        return RunExecution.MISSING
    if run.is_finished:
        return RunExecution.ALREADY_FINISHED
    if not run.target.is_configured and _mark_not_configured(run, worker=worker):
        return RunExecution.NOT_CONFIGURED

    claim = probe_run_claim(run_id=run_id, worker=worker)
    if claim.outcome is not None:
        return claim.outcome
    run.refresh_from_db()
    snapshot = probe_target_snapshot(target=run.target)
    if not run.target.is_configured:
        outcome = SuiteOutcome(
            status=ProbeRun.Status.NOT_CONFIGURED,
            error_class="NotConfigured",
            error_message=f"The environment variable {run.target.api_key_env} is not set where this run executed.",
        )
    else:
        with _LeaseKeeper(run_id=run_id, attempt=claim.attempt):
            outcome = _execute_suite(run, on_progress=on_progress)
    if not probe_run_record(run_id=run_id, attempt=claim.attempt, outcome=outcome, snapshot=snapshot):
        logger.warning("Probe run %s attempt %s lost its lease; its results were discarded", run_id, claim.attempt)
        return RunExecution.LOST_LEASE
    if run.suite == ProbeRun.Suite.SPEED:
        probe_summaries_refresh(target=run.target)
    else:
        compat_statuses_refresh(target=run.target)
    return RunExecution.FINISHED


def probe_target_run_now(
    *,
    target: ProbeTarget,
    suites: Sequence[str] = SUITES,
    workloads: Sequence[str] | None = None,
    concurrency: int | None = None,
    requests: int | None = None,
    max_tokens: int | None = None,
    worker: str | None = None,
    on_progress: Callable | None = None,
) -> list[ProbeRun]:
    """Measure a stored target in this process (no Celery) and store the runs like a worker would."""
    runs = probe_runs_create(
        target=target,
        suites=suites,
        workloads=workloads,
        concurrency=concurrency,
        requests=requests,
        max_tokens=max_tokens,
    )
    worker = worker or f"{socket.gethostname()}:{os.getpid()}:direct"
    for run in runs:
        result = probe_run_execute(run_id=run.pk, worker=worker, on_progress=on_progress)
        if result is RunExecution.BUSY:
            logger.warning("Probe run %s waits: another run of %s is in progress", run.pk, target.slug)
    return [ProbeRun.objects.select_related("target").get(pk=run.pk) for run in runs]


# --- recovering --------------------------------------------------------------------------------


def probe_runs_recover(*, now: dt.datetime | None = None, limit: int = 500) -> dict[str, int]:
    """Re-send runs whose worker died (lease lapsed) or that no worker picked up; give up on hopeless ones."""
    now = now or timezone.now()
    counts = {"requeued": 0, "gave_up": 0, "expired": 0}
    to_send: list[ProbeRun] = []
    for run in ProbeRun.objects.lease_expired(now=now).order_by("lease_expires_at")[:limit]:
        if run.attempts >= settings.PROBE_RUN_MAX_ATTEMPTS:
            counts["gave_up"] += probe_run_give_up(run_id=run.pk, now=now)
        else:
            to_send.append(run)
    stale_before = now - dt.timedelta(seconds=settings.PROBE_RUN_STALE_QUEUED_SECONDS)
    too_old_before = now - dt.timedelta(seconds=settings.PROBE_RUN_MAX_AGE_SECONDS)
    for run in ProbeRun.objects.filter(status=ProbeRun.Status.QUEUED, updated_at__lt=stale_before).order_by("pk")[
        :limit
    ]:
        if run.queued_at < too_old_before:
            counts["expired"] += ProbeRun.objects.filter(pk=run.pk, status=ProbeRun.Status.QUEUED).update(
                status=ProbeRun.Status.FAILED,
                finished_at=now,
                error_class="Expired",
                error_message="No worker picked the run up in time; its measurements would no longer be current.",
                updated_at=now,
            )
        elif ProbeRun.objects.filter(pk=run.pk, status=ProbeRun.Status.QUEUED).update(updated_at=now):
            to_send.append(run)
    counts["requeued"] = len(to_send)
    if to_send:
        transaction.on_commit(lambda: _send(to_send))
    return counts

