"""Measuring one claimed run with the probe client and recording it, only while this attempt still owns the run."""
from __future__ import annotations

import asyncio
import logging
import os
import platform
import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

import probe_client
from core import cache as page_cache
from core.leases import Claim, LeaseKeeper, RunExecution, lease_claim, lease_holder
from probe_client.secrets import MAX_TEXT, scrub, scrub_text, secret_value
from probes.models import CompatOutcome, ProbeRun, ProbeTarget, RequestMeasurement
from probes.services.changes import compat_changes_record, measured_changes_record
from probes.services.runs.enqueue import probe_runs_create
from probes.services.summaries import compat_statuses_refresh, probe_summaries_refresh, run_summary_compute
from scoring.vocabulary import COMPAT_CHECKS, run_summary_keys

logger = logging.getLogger(__name__)

MEASUREMENT_FIELDS = [
    f.name for f in RequestMeasurement._meta.get_fields() if f.concrete and f.name not in ("id", "run", "index")
]
# Text and JSON columns of a measurement that may carry what a provider said: scrubbed before storing.
TEXT_FIELDS = {"error_class": 60, "error_message": MAX_TEXT, "request_id": 200, "output_tokens_source": 20}
JSON_FIELDS = ("server_timings", "gaps_ms", "tokens_per_chunk")


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


def probe_client_info() -> dict[str, Any]:
    import httpx

    return {
        "client": "probe_client",
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
        return scrub_text(value, secret)[: TEXT_FIELDS[name]]
    if name in JSON_FIELDS:
        return scrub(value, secret)
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
        error_message=scrub_text(error_message, secret),
        measurements=measurements,
        request_params=scrub(result.request_params, secret),
        server_info=scrub(result.server_info, secret),
        summary=run_summary_compute(
            rows=[{"ok": m.ok, **{key: getattr(m, key) for key in run_summary_keys()}} for m in measurements]
        ),
    )


def _run_compat(run: ProbeRun, config: Any, secret: str, on_check_done: Callable | None) -> SuiteOutcome:
    result = asyncio.run(probe_client.run_compat_suite(config, on_check_done=on_check_done))
    outcomes = [
        CompatOutcome(
            check_name=check.name,
            outcome=str(check.outcome),
            http_status=check.http_status,
            message=scrub_text(check.message, secret),
            detail=scrub_text(check.detail, secret),
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
        error_message=scrub_text(error_message, secret),
        compat_outcomes=outcomes,
        server_info=scrub(result.server_info, secret),
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
        params["checks"] = list(COMPAT_CHECKS)
    return params


def _execute_suite(run: ProbeRun, *, on_progress: Callable | None) -> SuiteOutcome:
    secret = secret_value(run.target.api_key_env)
    try:
        config = run.target.endpoint_config()
        if run.suite == ProbeRun.Suite.SPEED:
            outcome = _run_speed(run, config, secret, on_progress)
        else:
            outcome = _run_compat(run, config, secret, on_progress)
    except Exception as exc:  # noqa: BLE001 - a probe failure of any kind is a stored result, not a crash
        logger.warning("Probe run %s failed: %s", run.pk, type(exc).__name__)
        outcome = SuiteOutcome(
            status=ProbeRun.Status.FAILED,
            error_class=type(exc).__name__[:60],
            error_message=scrub_text(str(exc) or repr(exc), secret),
        )
    outcome.request_params = {**_request_params(run), **outcome.request_params}
    return outcome


def probe_run_claim(*, run_id: int, worker: str) -> Claim:
    """Take a run for this worker (core.leases); nothing a previous attempt left may survive into this one."""
    with transaction.atomic():
        claim = lease_claim(ProbeRun, pk=run_id, worker=worker, finished_at=None, region=settings.PROBE_REGION)
        if claim.outcome is None:
            RequestMeasurement.objects.filter(run_id=run_id).delete()
            CompatOutcome.objects.filter(run_id=run_id).delete()
    return claim


def probe_run_record(*, run_id: int, attempt: int, outcome: SuiteOutcome, snapshot: dict[str, Any]) -> bool:
    """Store a finished attempt, only if this attempt still owns the run; False means another took over."""
    now = timezone.now()
    with transaction.atomic():
        owned = lease_holder(ProbeRun, pk=run_id, attempt=attempt).select_for_update().first()
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
        page_cache.generation_bump()
    return True


def _mark_not_configured(run: ProbeRun, *, worker: str) -> bool:
    now = timezone.now()
    marked = bool(
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
    if marked:
        page_cache.generation_bump()
    return marked


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
        with LeaseKeeper(ProbeRun, pk=run_id, attempt=claim.attempt):
            outcome = _execute_suite(run, on_progress=on_progress)
    if not probe_run_record(run_id=run_id, attempt=claim.attempt, outcome=outcome, snapshot=snapshot):
        logger.warning("Probe run %s attempt %s lost its lease; its results were discarded", run_id, claim.attempt)
        return RunExecution.LOST_LEASE
    run.refresh_from_db()
    if run.suite == ProbeRun.Suite.SPEED:
        probe_summaries_refresh(target=run.target)
        measured_changes_record(run=run)
    else:
        compat_statuses_refresh(target=run.target)
        compat_changes_record(run=run)
    return RunExecution.FINISHED


def probe_target_run_now(
    *, worker: str | None = None, on_progress: Callable | None = None, **plan: Any
) -> list[ProbeRun]:
    """Measure a stored target in this process (no Celery) and store the runs like a worker would; ``plan`` is
    probe_runs_create's arguments."""
    runs = probe_runs_create(**plan)
    worker = worker or f"{socket.gethostname()}:{os.getpid()}:direct"
    for run in runs:
        result = probe_run_execute(run_id=run.pk, worker=worker, on_progress=on_progress)
        if result is RunExecution.BUSY:
            logger.warning("Probe run %s waits: another run of %s is in progress", run.pk, run.target.slug)
    return [ProbeRun.objects.select_related("target").get(pk=run.pk) for run in runs]
