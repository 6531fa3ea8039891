"""Recovery: runs whose worker died (lease lapsed) or that no worker picked up are sent again or given up."""
from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core import cache as page_cache
from core.leases import lease_give_up
from probes.models import ProbeRun
from probes.services.runs.enqueue import probe_runs_send


def probe_runs_recover(*, now: dt.datetime | None = None, limit: int = 500) -> dict[str, int]:
    """Re-send runs whose worker died (lease lapsed) or that no worker picked up; give up on hopeless ones."""
    now = now or timezone.now()
    counts = {"requeued": 0, "gave_up": 0, "expired": 0}
    to_send: list[ProbeRun] = []
    for run in ProbeRun.objects.lease_expired(now=now).order_by("lease_expires_at")[:limit]:
        if run.attempts >= settings.PROBE_RUN_MAX_ATTEMPTS:
            counts["gave_up"] += lease_give_up(ProbeRun, pk=run.pk, now=now)
        else:
            to_send.append(run)
    stale_before = now - dt.timedelta(seconds=settings.PROBE_RUN_STALE_QUEUED_SECONDS)
    too_old_before = now - dt.timedelta(seconds=settings.PROBE_RUN_MAX_AGE_SECONDS)
    for run in ProbeRun.objects.filter(status=ProbeRun.Status.QUEUED, updated_at__lt=stale_before).order_by("pk")[
        :limit
    ]:
        if run.queued_at < too_old_before:
            expired = ProbeRun.objects.filter(pk=run.pk, status=ProbeRun.Status.QUEUED).update(
                status=ProbeRun.Status.FAILED,
                finished_at=now,
                error_class="Expired",
                error_message="No worker picked the run up in time; its measurements would no longer be current.",
                updated_at=now,
            )
            counts["expired"] += expired
            if expired:
                page_cache.generation_bump_on_commit()
        elif ProbeRun.objects.filter(pk=run.pk, status=ProbeRun.Status.QUEUED).update(updated_at=now):
            to_send.append(run)
    counts["requeued"] = len(to_send)
    if to_send:
        transaction.on_commit(lambda: probe_runs_send(to_send))
    return counts
