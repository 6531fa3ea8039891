"""Rate limits keyed on the client the proxy chain vouches for, counted atomically in the shared (Redis) cache.

Each client has one counter per window of the rate's duration, moved with the cache's atomic INCR, so two
gunicorn workers never both let the last request of a budget through. A request is allowed while this window's
count plus the previous window's count, weighted by how much of the previous window still overlaps the last
`duration` seconds, stays within the rate: a sliding window without the double burst of fixed windows at
their edge. A refused request is not counted.

A cache that stops answering (or hangs: core.breakers skips it for a few seconds once noticed) costs the limit,
not the API: reads and staff writes are let through (logged once per outage), while triggering probe runs, which spend money at providers and need the broker that the
outage has also taken, is refused with 503.

Rates are read from the DRF settings on every request: DRF itself binds them to the class at import,
which would make an overridden setting (another settings module, a test) silently ineffective. The client address comes
from DRF's get_ident with NUM_PROXIES set: with 0 it is the socket peer and X-Forwarded-For is
ignored; with N it is the address the N-th trusted proxy appended, which a client cannot forge.
"""
from __future__ import annotations

import math
import time

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.exceptions import APIException
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from core.cache import cache_breaker

DURATIONS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class LimitUnavailable(APIException):
    status_code = 503
    default_code = "unavailable"
    default_detail = "The rate limit cannot be checked right now; try again in a minute."


def parse_rate(rate: str) -> tuple[int, int]:
    """'120/min' → (120, 60): DRF's notation, where the unit's first letter counts."""
    count, period = rate.split("/")
    return int(count), DURATIONS[period[0]]


class CountingThrottle(BaseThrottle):
    scope: str
    fail_open = True

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request, view) -> str | None:
        return f"throttle:{self.scope}:{self.get_ident(request)}"

    def allow_request(self, request, view) -> bool:
        rate = self.get_rate()
        key = self.get_cache_key(request, view) if rate else None
        if key is None:
            return True
        limit, duration = parse_rate(rate)
        now = time.time()
        window, elapsed = divmod(now, duration)
        current, previous = f"{key}:{int(window)}", f"{key}:{int(window) - 1}"
        if cache_breaker.is_open():
            return self._unchecked()
        try:
            count, earlier = self._count(current, previous, duration)
            overlap = 1 - elapsed / duration
            if earlier * overlap + count <= limit:
                cache_breaker.answered()
                return True
            cache.decr(current)
        except Exception:  # noqa: BLE001 - whatever the cache backend raises, the API keeps answering
            cache_breaker.failed()
            return self._unchecked()
        cache_breaker.answered()
        accepted = count - 1
        # The next request fits once the previous window's weighted share has shrunk enough, or at the latest
        # when this window ends.
        if earlier and accepted < limit:
            needed = 1 - (limit - accepted - 1) / earlier
            self._wait = max(needed * duration - elapsed, 1)
        else:
            self._wait = duration - elapsed
        return False

    def _unchecked(self) -> bool:
        if self.fail_open:
            return True
        raise LimitUnavailable

    @staticmethod
    def _count(current: str, previous: str, duration: int) -> tuple[int, int]:
        """This window's count, this request included, and the previous window's count."""
        backend = caches["default"]
        if isinstance(backend, RedisCache):
            # One round trip: through the cache API, add, incr (EXISTS then INCRBY) and get make four, and
            # every API request pays them.
            current_key = backend.make_and_validate_key(current)
            pipeline = backend._cache.get_client(current_key, write=True).pipeline(transaction=False)
            pipeline.set(current_key, 0, ex=2 * duration, nx=True)
            pipeline.incr(current_key)
            pipeline.get(backend.make_and_validate_key(previous))
            _, count, earlier = pipeline.execute()
            return count, int(earlier or 0)
        try:
            count = cache.incr(current)
        except ValueError:  # the window's first request
            cache.add(current, 0, timeout=2 * duration)
            count = cache.incr(current)
        return count, cache.get(previous) or 0

    def wait(self) -> float | None:
        return math.ceil(self._wait)


class AnonBurstThrottle(CountingThrottle):
    scope = "anon"

    def get_cache_key(self, request, view) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return super().get_cache_key(request, view)


class UserBurstThrottle(CountingThrottle):
    """Signed-in clients only; anonymous ones are counted once, by AnonBurstThrottle."""

    scope = "user"

    def get_cache_key(self, request, view) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        return f"throttle:{self.scope}:{request.user.pk}"


class ProbeRunThrottle(CountingThrottle):
    """Every run costs real money at a provider, so triggering them has its own per-account budget."""

    scope = "probe_runs"
    fail_open = False

    def get_cache_key(self, request, view) -> str | None:
        if request.method != "POST":
            return None
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return f"throttle:{self.scope}:{ident}"


class PageThrottle(CountingThrottle):
    """Pages (core.middleware.PageGateMiddleware), every client by its address."""

    scope = "pages"
