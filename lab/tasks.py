"""Celery tasks of the lab: thin interfaces that take ids and delegate to lab.services."""
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
    # A sweep stops itself at its plan's max_duration_s (at most SweepLimits.max_duration_s); this is the backstop.
    soft_time_limit=settings.SWEEP_RUN_SOFT_TIME_LIMIT,
    time_limit=settings.SWEEP_RUN_SOFT_TIME_LIMIT + 60,
    max_retries=5,
    ignore_result=True,
)
def sweep_run_task(self, run_id: int) -> str:
    from lab.services.run import sweep_run_execute

    try:
        result = sweep_run_execute(run_id=run_id, worker=self.request.hostname or "worker")
    except TRANSIENT_ERRORS as exc:
        raise self.retry(exc=exc, countdown=min(300, 5 * 2**self.request.retries)) from exc
    if result is RunExecution.BUSY:
        try:
            raise self.retry(
                countdown=settings.PROBE_RUN_BUSY_RETRY_SECONDS + random.uniform(0, 2),
                max_retries=settings.PROBE_RUN_BUSY_MAX_RETRIES,
            )
        except MaxRetriesExceededError:
            logger.warning("Sweep run %s still busy after retries", run_id)
    return result.value
