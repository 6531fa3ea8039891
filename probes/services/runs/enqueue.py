"""Queued runs: created with validated plans, sent to Celery by id once the transaction commits, scheduled by
the beat for every configured target."""
from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

import probe_client
from core.cache import generation_bump
from core.exceptions import ApplicationError
from probes.models import ProbeRun, ProbeTarget
from probes.selectors.runs import probe_targets_due, probe_targets_not_configured
from scoring.vocabulary import COMPAT_CHECKS

logger = logging.getLogger(__name__)

SUITES = (ProbeRun.Suite.SPEED.value, ProbeRun.Suite.COMPAT.value)


def _queue_for_region(region: str | None) -> str:
    return f"{settings.PROBE_QUEUE_PREFIX}{region}" if region else "celery"


@dataclass(frozen=True)
class Workload:
    name: str
    input_tokens: int
    max_tokens: int


def _workload(name: str) -> Workload:
    """A workload of probe_client.WORKLOADS with its fixed output length from settings."""
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
    generation_bump()
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
                run.request_count = len(COMPAT_CHECKS)
            run.save()
            runs.append(run)
    return runs


def probe_runs_send(runs: Sequence[ProbeRun]) -> None:
    for run in runs:
        try:
            current_app.send_task(
                "probes.tasks.probe_run_task",
                args=[run.pk],
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
def probe_runs_enqueue(**plan: Any) -> list[ProbeRun]:
    """Create queued runs (probe_runs_create's arguments) and send their ids, never keys, to Celery once the
    transaction commits."""
    runs = probe_runs_create(**plan)
    if runs:
        transaction.on_commit(lambda: probe_runs_send(runs))
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
