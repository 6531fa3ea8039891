"""Per-process breakers: a service that failed (or hung until its timeout) once is skipped for a few seconds.

Without one, every request of a worker waits out the socket or connect timeout of a service that hangs, and
the requests queued behind it wait for all of them. With one, the first request notices the failure, and the
others of the same process go on without the service (the cache, the rate limit) or fail at once (the
database) until `seconds` have passed; then one request tries again.
"""
from __future__ import annotations

import logging
import time

logger = logging.getLogger(__name__)

# Long enough that a worker's requests stop queueing behind the timeout, short enough to notice a recovery soon.
BREAKER_SECONDS = 5


class Breaker:
    def __init__(self, name: str, *, seconds: float) -> None:
        self.name = name
        self.seconds = seconds
        self._open_until = 0.0
        self._failing_since: float | None = None

    def is_open(self) -> bool:
        """True while the service is being skipped."""
        return time.monotonic() < self._open_until

    def failed(self) -> None:
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
            logger.warning("%s unavailable: skipped for %s s at a time until it answers", self.name, self.seconds,
                           exc_info=True)
        self._open_until = now + self.seconds

    def answered(self) -> None:
        self._open_until = 0.0
        if self._failing_since is not None:
            logger.warning("%s answers again after %.0f s", self.name, time.monotonic() - self._failing_since)
            self._failing_since = None
