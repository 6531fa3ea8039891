"""Create, claim, execute, record and recover probe runs.

A run moves queued -> running -> succeeded | partial | failed | not_configured. The claim, the lease a worker
renews while it measures and giving up on a run whose workers keep dying are core.leases'; results are written
in one transaction that first re-checks "still running, still my attempt", so a worker that lost its lease cannot
add a second set of measurements.

API keys never enter this package's data: targets name an environment variable, the client reads it
at request time, and every text stored from a run is scrubbed of the key's value as a last defence
(probe_client.secrets).

One module per step: ``enqueue`` (create queued runs, send them after commit, the beat's schedules),
``execute`` (claim, measure and record one run) and ``recover`` (re-send lost runs).
"""
