"""Celery tasks of the lab: thin interfaces that take ids and delegate to lab.services."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from core.leases import run_task_execute


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

    return run_task_execute(self, run_id=run_id, execute=sweep_run_execute)


@shared_task(ignore_result=True)
def sweep_runs_recover_task() -> dict:
    from lab.services.run import sweep_runs_recover

    return sweep_runs_recover()
