"""Celery tasks of core: thin interfaces over its services."""
from __future__ import annotations

from celery import shared_task


@shared_task(ignore_result=True)
def pages_warm_task(generation: int) -> int:
    from core.cache import pages_warm

    return pages_warm(generation=generation)
