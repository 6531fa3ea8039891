"""Celery tasks for probes: thin interfaces that take ids and delegate to the services in probes.services."""
from __future__ import annotations

import logging
import random

from celery import shared_task
from celery.exceptions import MaxRetriesExceededError
from django.conf import settings

from core.leases import TRANSIENT_ERRORS, RunExecution

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.PROBE_RUN_SOFT_TIME_LIMIT,
    time_limit=settings.PROBE_RUN_TIME_LIMIT,
    max_retries=5,
    ignore_result=True,
)
def probe_run_task(self, run_id: int) -> str:
    from probes.services.runs.execute import probe_run_execute

    try:
        result = probe_run_execute(run_id=run_id, worker=self.request.hostname or "worker")
    except TRANSIENT_ERRORS as exc:
        countdown = min(300, 5 * 2**self.request.retries) + random.uniform(0, 3)
        raise self.retry(exc=exc, countdown=countdown) from exc
    if result is RunExecution.BUSY:
        # Another run of the target (or a live worker holding this one) is measuring: come back later.
        try:
            raise self.retry(
                countdown=settings.PROBE_RUN_BUSY_RETRY_SECONDS + random.uniform(0, 2),
                max_retries=settings.PROBE_RUN_BUSY_MAX_RETRIES,
            )
        except MaxRetriesExceededError:
            logger.warning("Probe run %s still busy after retries; recovery will send it again", run_id)
    return result.value


@shared_task(ignore_result=True)
def probe_schedule_speed_task() -> int:
    from probes.services.runs.enqueue import probe_schedule_speed

    return len(probe_schedule_speed())


@shared_task(ignore_result=True)
def probe_schedule_daily_task() -> int:
    from probes.services.runs.enqueue import probe_schedule_daily

    return len(probe_schedule_daily())


@shared_task(ignore_result=True)
def probe_runs_recover_task() -> dict:
    from probes.services.runs.recover import probe_runs_recover

    return probe_runs_recover()
