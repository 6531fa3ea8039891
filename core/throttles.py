"""Rate limits keyed on the client the proxy chain vouches for, stored in the shared (Redis) cache.

Rates are read from the DRF settings on every request: DRF itself binds them to the class at import,
which would make an overridden setting (another settings module, a test) silently ineffective. The client address comes
from DRF's get_ident with NUM_PROXIES set: with 0 it is the socket peer and X-Forwarded-For is
ignored; with N it is the address the N-th trusted proxy appended, which a client cannot forge.
"""
from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle


class _SettingsRateMixin:
    scope: str

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class AnonBurstThrottle(_SettingsRateMixin, AnonRateThrottle):
    scope = "anon"


class UserBurstThrottle(_SettingsRateMixin, UserRateThrottle):
    """Signed-in clients only; anonymous ones are counted once, by AnonBurstThrottle."""

    scope = "user"

    def get_cache_key(self, request, view) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        return super().get_cache_key(request, view)


class ProbeRunThrottle(_SettingsRateMixin, SimpleRateThrottle):
    """Every run costs real money at a provider, so triggering them has its own per-account budget."""

    scope = "probe_runs"

    def get_cache_key(self, request, view) -> str | None:
        if request.method != "POST":
            return None
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
