"""Celery tasks of core: thin interfaces over its services."""
from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True)
def write_log_compact_task() -> int:
    from core.write_log import write_log_compact

    return write_log_compact()
