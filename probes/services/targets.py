"""Creating and changing probe targets. A target names the environment variable holding its key, never a key."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction

from catalog.models import Tool
from core.cache import generation_bump
from core.models import AuditEntry
from core.services import audit_record, audited_create, audited_update
from probes.models import ProbeRun, ProbeTarget
from probes.services.runs.enqueue import probe_runs_enqueue

BASE_URL_NO_CREDENTIALS = (
    "The base URL must not carry credentials, a query string or a fragment; "
    "put the key in the environment variable named by api_key_env."
)
BASE_URL_SCHEME = "The base URL must use http or https."

TARGET_FIELDS = (
    "slug", "name", "tool", "base_url", "model_id", "api_key_env", "hardware", "quantization", "engine_version",
    "region", "notes", "enabled",
)
TARGET_UPDATABLE_FIELDS = tuple(name for name in TARGET_FIELDS if name != "slug")


def _validate_target(target: ProbeTarget) -> None:
    parts = urlsplit(target.base_url or "")
    if parts.scheme and parts.scheme not in ("http", "https"):
        raise ValidationError({"base_url": [BASE_URL_SCHEME]})
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValidationError({"base_url": [BASE_URL_NO_CREDENTIALS]})
    target.full_clean()


@transaction.atomic
def probe_target_create(
    *,
    actor: Any,
    slug: str,
    name: str,
    tool: Tool,
    base_url: str,
    model_id: str,
    api_key_env: str = "",
    hardware: str = "",
    quantization: str = "",
    engine_version: str = "",
    region: str = "",
    notes: str = "",
    enabled: bool = False,
) -> ProbeTarget:
    generation_bump()
    target = ProbeTarget(
        slug=slug, name=name, tool=tool, base_url=base_url, model_id=model_id, api_key_env=api_key_env,
        hardware=hardware, quantization=quantization, engine_version=engine_version, region=region, notes=notes,
        enabled=enabled,
    )
    return audited_create(actor=actor, instance=target, fields=TARGET_FIELDS, validate=_validate_target)


@transaction.atomic
def probe_target_update(*, actor: Any, target: ProbeTarget, data: Mapping[str, Any]) -> ProbeTarget:
    """Apply the fields present in `data`; the slug (what runs and schedules refer to) stays."""
    generation_bump()
    return audited_update(
        actor=actor, instance=target, fields=TARGET_UPDATABLE_FIELDS, data=data, validate=_validate_target
    )


@transaction.atomic
def probe_target_run_request(
    *,
    actor: Any,
    target: ProbeTarget,
    suites: tuple[str, ...] | list[str] | None = None,
    workloads: list[str] | None = None,
    concurrency: int | None = None,
) -> list[ProbeRun]:
    """Queue runs of a target on someone's request, and record who asked for them."""
    runs = probe_runs_enqueue(
        target=target,
        suites=suites or (ProbeRun.Suite.SPEED, ProbeRun.Suite.COMPAT),
        workloads=workloads,
        concurrency=concurrency,
    )
    audit_record(
        actor=actor,
        action=AuditEntry.Action.TRIGGER,
        instance=target,
        changes={"runs": {"old": None, "new": [run.pk for run in runs]}},
    )
    return runs
