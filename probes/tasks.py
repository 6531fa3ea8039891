"""Celery tasks for probes: thin interfaces that take ids and delegate to the services in probes.services."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from core.leases import run_task_execute


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

    return run_task_execute(self, run_id=run_id, execute=probe_run_execute)


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
