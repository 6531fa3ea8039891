"""Taking a run for one worker (a conditional UPDATE), giving up on hopeless runs, and the lease a worker renews
while it measures."""
from __future__ import annotations

import datetime as dt
import enum
import logging
import threading
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from probes.models import CompatOutcome, ProbeRun, RequestMeasurement

logger = logging.getLogger(__name__)


class RunExecution(enum.StrEnum):
    FINISHED = "finished"
    ALREADY_FINISHED = "already_finished"
    NOT_CONFIGURED = "not_configured"
    BUSY = "busy"
    GAVE_UP = "gave_up"
    LOST_LEASE = "lost_lease"
    MISSING = "missing"


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


class LeaseKeeper:
    """Renews the lease from a thread while the event loop measures; never blocks the measurement."""

    def __init__(self, *, run_id: int, attempt: int) -> None:
        self.run_id = run_id
        self.attempt = attempt
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LeaseKeeper:
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
