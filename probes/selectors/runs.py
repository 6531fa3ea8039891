"""Reads of probe targets and runs for the API, the CLI and the admin."""
from __future__ import annotations

from django.db.models import QuerySet

from probes.models import ProbeRun, ProbeTarget


def probe_target_list(*, enabled: bool | None = None) -> QuerySet[ProbeTarget]:
    targets = ProbeTarget.objects.for_listing()
    return targets if enabled is None else targets.filter(enabled=enabled)


def probe_target_get(*, slug: str) -> ProbeTarget:
    """The one read of a target by slug, for the API, the CLI and the services. Raises ProbeTarget.DoesNotExist."""
    return ProbeTarget.objects.for_listing().get(slug=slug)


def probe_targets_due() -> list[ProbeTarget]:
    """Enabled targets this process can probe: keyless ones, and those whose key variable is set here."""
    return [target for target in ProbeTarget.objects.enabled().for_listing() if target.is_configured]


def probe_targets_not_configured() -> list[ProbeTarget]:
    """Enabled targets that would be probed if their key variable were set in this process."""
    return [target for target in ProbeTarget.objects.enabled().for_listing() if not target.is_configured]


def probe_run_list(*, target: ProbeTarget | None = None, suite: str | None = None) -> QuerySet[ProbeRun]:
    runs = ProbeRun.objects.select_related("target__tool")
    if target is not None:
        runs = runs.filter(target=target)
    if suite:
        runs = runs.filter(suite=suite)
    return runs.order_by("-queued_at", "-id")
