"""Claiming a queued run for one worker, the lease the worker renews while it measures, recovering runs whose
worker died or whose message was lost, giving up on a run whose workers keep dying, and what a run's Celery task
does with the outcome: one implementation for probe runs and lab sweeps (models on core.models.LeasedRun).

A run model has ``status`` (its ``Status`` has QUEUED, RUNNING and FAILED; any other status is finished),
``attempts``, ``lease_expires_at``, ``worker``, ``started_at``, ``finished_at``, ``error_class``,
``error_message`` and ``updated_at``. Celery delivers a task at least once, so every step is guarded by state:

* the claim is one conditional UPDATE (queued, or running with a lapsed lease -> running, attempt + 1); a
  partial unique index of the model allows one running run per target, so a second run of the same endpoint is
  refused by the database and retried later;
* the worker renews a short lease while it measures; a worker that dies stops renewing, so a redelivered task
  (or a recovery task) claims the run again once the lease has lapsed, up to RUN_MAX_ATTEMPTS times;
* results are written only through ``lease_holder``, which re-checks "still running, still my attempt", so a
  worker that lost its lease cannot write over the one that took the run over.

Status changes made here are QuerySet updates, which send no signal, so they move the data generation
themselves: pages show runs' statuses.
"""
from __future__ import annotations

import datetime as dt
import enum
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import Task
from celery.exceptions import MaxRetriesExceededError
from django.conf import settings
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Model, Q, QuerySet
from django.utils import timezone

from core import cache as page_cache

logger = logging.getLogger(__name__)

# Infrastructure hiccups worth another try of a run's task; a provider failure is a stored result, never a retry.
TRANSIENT_ERRORS = (OperationalError, InterfaceError)


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


def _lease_end(now: dt.datetime) -> dt.datetime:
    return now + dt.timedelta(seconds=settings.RUN_LEASE_SECONDS)


def lease_claim(model: type[Model], *, pk: int, worker: str, **fields: Any) -> Claim:
    """Take a run for this worker with one conditional UPDATE (which also sets ``fields``), or say why not."""
    now = timezone.now()
    status = model.Status
    claimable = Q(status=status.QUEUED) | Q(status=status.RUNNING, lease_expires_at__lt=now)
    try:
        with transaction.atomic():
            won = model.objects.filter(claimable, pk=pk, attempts__lt=settings.RUN_MAX_ATTEMPTS).update(
                status=status.RUNNING,
                attempts=F("attempts") + 1,
                lease_expires_at=_lease_end(now),
                started_at=now,
                worker=worker[:200],
                error_class="",
                error_message="",
                updated_at=now,
                **fields,
            )
    except IntegrityError:
        return Claim(RunExecution.BUSY)  # another run of the same target holds the one running slot
    if won:
        page_cache.generation_bump()
        return Claim(None, model.objects.values_list("attempts", flat=True).get(pk=pk))

    run = model.objects.filter(pk=pk).only("status", "attempts", "lease_expires_at").first()
    if run is None:
        return Claim(RunExecution.MISSING)
    if run.status not in (status.QUEUED, status.RUNNING):
        return Claim(RunExecution.ALREADY_FINISHED)
    if run.attempts >= settings.RUN_MAX_ATTEMPTS and (
        run.status == status.QUEUED or (run.lease_expires_at or now) <= now
    ):
        lease_give_up(model, pk=pk, now=now)
        return Claim(RunExecution.GAVE_UP)
    return Claim(RunExecution.BUSY)  # a live worker holds it: a duplicate delivery does nothing now


def lease_give_up(model: type[Model], *, pk: int, now: dt.datetime | None = None) -> bool:
    """Fail a run that is queued, or whose lease lapsed, rather than retry it forever."""
    now = now or timezone.now()
    status = model.Status
    given_up = (
        model.objects.filter(pk=pk)
        .filter(Q(status=status.QUEUED) | Q(status=status.RUNNING, lease_expires_at__lt=now))
        .update(
            status=status.FAILED,
            finished_at=now,
            lease_expires_at=None,
            error_class="WorkerLost",
            error_message=(
                f"Workers died or stopped renewing the lease {settings.RUN_MAX_ATTEMPTS} times; "
                f"the {model._meta.verbose_name} was given up rather than retried forever."
            ),
            updated_at=now,
        )
    )
    if given_up:
        page_cache.generation_bump()
    return bool(given_up)


def runs_recover(runs: QuerySet, *, send: Callable[[list[Any]], None], now: dt.datetime | None = None,
                 limit: int = 500) -> dict[str, int]:
    """Send again the runs of `runs` whose worker died (a lapsed lease) or that no worker claimed within a lease of
    being queued or last sent (a broker restarted without its queue forgets the message); give up on runs out of
    attempts and expire queued ones older than RUN_MAX_AGE_SECONDS. Called once a lease, so a lost run is sent
    again within two. A run sent twice is measured once: the claim is one conditional UPDATE."""
    now = now or timezone.now()
    model, status = runs.model, runs.model.Status
    counts = {"requeued": 0, "gave_up": 0, "expired": 0}
    to_send: list[Any] = []
    for run in runs.filter(status=status.RUNNING, lease_expires_at__lt=now).order_by("lease_expires_at")[:limit]:
        if run.attempts >= settings.RUN_MAX_ATTEMPTS:
            counts["gave_up"] += lease_give_up(model, pk=run.pk, now=now)
        else:
            to_send.append(run)
    unclaimed = runs.filter(status=status.QUEUED, updated_at__lt=now - dt.timedelta(seconds=settings.RUN_LEASE_SECONDS))
    too_old = now - dt.timedelta(seconds=settings.RUN_MAX_AGE_SECONDS)
    for run in unclaimed.order_by("pk")[:limit]:
        still_queued = model.objects.filter(pk=run.pk, status=status.QUEUED)
        if run.queued_at < too_old:
            counts["expired"] += still_queued.update(
                status=status.FAILED, finished_at=now, error_class="Expired", updated_at=now,
                error_message="No worker picked the run up in time; its measurements would no longer be current.",
            )
        elif still_queued.update(updated_at=now):  # the next pass waits another lease for this message
            to_send.append(run)
    if counts["expired"]:
        page_cache.generation_bump()
    counts["requeued"] = len(to_send)
    if to_send:
        transaction.on_commit(lambda: send(to_send))
    return counts


def lease_holder(model: type[Model], *, pk: int, attempt: int) -> QuerySet:
    """The run, if this attempt still holds it: every write of a result goes through here."""
    return model.objects.filter(pk=pk, status=model.Status.RUNNING, attempts=attempt)


def lease_renew(model: type[Model], *, pk: int, attempt: int) -> bool:
    """Push the lease on; False once another attempt owns the run (or it ended)."""
    return bool(lease_holder(model, pk=pk, attempt=attempt).update(lease_expires_at=_lease_end(timezone.now())))


class LeaseKeeper:
    """Renews the lease from a thread while the event loop measures; never blocks the measurement."""

    def __init__(self, model: type[Model], *, pk: int, attempt: int) -> None:
        self.model = model
        self.pk = pk
        self.attempt = attempt
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LeaseKeeper:
        # Inside an open transaction the run row is not visible (or is locked) for another connection.
        if not connection.in_atomic_block:
            self._thread = threading.Thread(target=self._renew, name=f"lease-{self.pk}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _renew(self) -> None:
        interval = max(0.2, settings.RUN_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                try:
                    renewed = lease_renew(self.model, pk=self.pk, attempt=self.attempt)
                except DatabaseError:
                    # A busy database (SQLite's single writer, a failover) must not end the renewals.
                    logger.warning("Could not renew the lease of %s %s; retrying", self.model.__name__, self.pk)
                    connection.close()
                    continue
                if not renewed:
                    return  # another attempt owns the run now; recording will notice and discard ours
        finally:
            connection.close()


def run_task_execute(task: Task, *, run_id: int, execute: Callable[..., RunExecution]) -> str:
    """What a run's Celery task does: execute the run, try again later after an infrastructure hiccup (backing
    off) or when the run is busy, and say what executing it came to."""
    try:
        result = execute(run_id=run_id, worker=task.request.hostname or "worker")
    except TRANSIENT_ERRORS as exc:
        raise task.retry(exc=exc, countdown=min(300, 5 * 2**task.request.retries) + random.uniform(0, 3)) from exc
    if result is RunExecution.BUSY:
        # Another run of the target (or a live worker holding this one) is measuring: come back later.
        try:
            raise task.retry(
                countdown=settings.RUN_BUSY_RETRY_SECONDS + random.uniform(0, 2),
                max_retries=settings.RUN_BUSY_MAX_RETRIES,
            )
        except MaxRetriesExceededError:
            logger.warning("%s: run %s still busy after retries; it stays queued", task.name, run_id)
    return result.value
