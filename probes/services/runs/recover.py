"""Recovery of probe runs: core.leases.runs_recover, sending through the probes' own queues."""
from __future__ import annotations

import datetime as dt

from core.leases import runs_recover
from probes.models import ProbeRun
from probes.services.runs.enqueue import probe_runs_send


def probe_runs_recover(*, now: dt.datetime | None = None, limit: int = 500) -> dict[str, int]:
    """Re-send runs whose worker died or whose message was lost; give up on hopeless ones, expire stale ones."""
    return runs_recover(ProbeRun.objects.all(), send=probe_runs_send, now=now, limit=limit)
