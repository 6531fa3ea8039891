"""Create, claim, execute, record and recover probe runs.

A run moves queued -> running -> succeeded | partial | failed | not_configured. Celery delivers a
task at least once (acks_late, reject_on_worker_lost), so every step is guarded by state:

* the claim is one conditional UPDATE (queued, or running with a lapsed lease -> running, attempt + 1);
  a partial unique index allows one running run per target, so a second run of the same endpoint
  is refused by the database and retried later;
* the worker renews a short lease while it measures; a worker that dies stops renewing, so a
  redelivered task (or the recovery task) re-claims the run after the lease lapses;
* results are written in one transaction that first re-checks "still running, still my attempt", so
  a worker that lost its lease cannot add a second set of measurements.

API keys never enter this package's data: targets name an environment variable, the client reads it
at request time, and every text stored from a run is scrubbed of the key's value as a last defence.

One module per step: ``enqueue`` (create queued runs, send them after commit, the beat's schedules),
``claim`` (the conditional claim, giving up, the lease renewer), ``execute`` (measure and record one run,
scrubbed by probe_client.secrets) and ``recover`` (re-send lost runs).
"""
from probes.services.runs.claim import Claim, RunExecution, probe_run_claim, probe_run_give_up
from probes.services.runs.enqueue import (
    SUITES,
    probe_runs_create,
    probe_runs_enqueue,
    probe_runs_send,
    probe_schedule_daily,
    probe_schedule_speed,
)
from probes.services.runs.execute import (
    SuiteOutcome,
    probe_client_info,
    probe_endpoint_config,
    probe_run_execute,
    probe_run_record,
    probe_target_run_now,
    probe_target_snapshot,
)
from probes.services.runs.recover import probe_runs_recover

__all__ = [
    "SUITES",
    "Claim",
    "RunExecution",
    "SuiteOutcome",
    "probe_client_info",
    "probe_endpoint_config",
    "probe_run_claim",
    "probe_run_execute",
    "probe_run_give_up",
    "probe_run_record",
    "probe_runs_create",
    "probe_runs_enqueue",
    "probe_runs_recover",
    "probe_runs_send",
    "probe_schedule_daily",
    "probe_schedule_speed",
    "probe_target_run_now",
    "probe_target_snapshot",
]
