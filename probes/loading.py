"""Load probe target presets from fixtures/probe_targets.yaml (called by `manage.py load_catalog`).

Ownership of fields on reload:
* the fixture owns ``name``, ``tool`` and ``notes``: a reload refreshes them;
* the operator owns ``base_url``, ``model_id``, ``api_key_env``, ``hardware``, ``quantization``,
  ``engine_version``, ``region`` and ``enabled``: the fixture sets them when it creates a target and never
  touches them again, so enabling a target or pointing it at another host survives every reload.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from core.loading import FixtureError, LoadOptions, read_yaml
from catalog.models import Tool
from probes.models import ProbeTarget

logger = logging.getLogger(__name__)

FILENAME = "probe_targets.yaml"
FIXTURE_OWNED = ("name", "notes")
OPERATOR_OWNED = ("base_url", "model_id", "api_key_env", "hardware", "quantization", "engine_version", "region")
REQUIRED = ("slug", "name", "tool", "base_url", "model_id")
ALLOWED = {*REQUIRED, *FIXTURE_OWNED, *OPERATOR_OWNED, "enabled"}


def _entries(path: Path) -> list[dict[str, Any]]:
    document = read_yaml(path) or {}
    entries = document.get("targets") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise FixtureError(path=path, row="(document)", field="targets", message="expected a top-level list")
    for position, entry in enumerate(entries):
        where = f"entry {position + 1} ({entry.get('slug', '?') if isinstance(entry, dict) else '?'})"
        if not isinstance(entry, dict):
            raise FixtureError(path=path, row=where, field="(entry)", message="must be a mapping")
        missing = [name for name in REQUIRED if not entry.get(name)]
        unknown = sorted(set(entry) - ALLOWED)
        if missing or unknown:
            raise FixtureError(
                path=path, row=where, field=(missing or unknown)[0],
                message=f"missing {missing or 'nothing'}, unknown fields {unknown or 'none'}",
            )
    return entries


def _tool(candidates: str | list[str], tools: dict[str, Tool]) -> Tool | None:
    for slug in [candidates] if isinstance(candidates, str) else candidates:
        if slug in tools:
            return tools[slug]
    return None


def _validate(target: ProbeTarget, path: Path, where: str) -> None:
    try:
        target.full_clean(exclude=["tool"])
    except ValidationError as exc:
        fields = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items())
        raise FixtureError(path=path, row=where, field=next(iter(exc.message_dict)), message=fields) from None


@transaction.atomic
def load(*, fixtures_dir: Path, options: LoadOptions | None = None) -> dict[str, int]:
    """Idempotent upsert of the target presets by slug; returns counts per outcome."""
    options = options or LoadOptions()
    counts = {"created": 0, "updated": 0, "unchanged": 0, "skipped": 0}
    path = Path(fixtures_dir) / FILENAME
    if not path.exists():
        logger.warning("No %s in %s; no probe targets loaded", FILENAME, fixtures_dir)
        return counts
    entries = _entries(path)
    tools = {tool.slug: tool for tool in Tool.objects.all()}
    existing = {target.slug: target for target in ProbeTarget.objects.filter(slug__in=[e["slug"] for e in entries])}
    for entry in entries:
        where = f"target {entry['slug']}"
        tool = _tool(entry["tool"], tools)
        if tool is None:
            logger.warning(
                "%s %s: skipped, catalog has no tool %s (load the catalog first)", FILENAME, where, entry["tool"]
            )
            counts["skipped"] += 1
            continue
        target = existing.get(entry["slug"])
        if target is None:
            target = ProbeTarget(slug=entry["slug"], tool=tool, enabled=bool(entry.get("enabled", False)))
            for name in (*FIXTURE_OWNED, *OPERATOR_OWNED):
                setattr(target, name, entry.get(name, "") or "")
            _validate(target, path, where)
            target.save()
            counts["created"] += 1
            continue
        wanted = {name: entry.get(name, "") or "" for name in FIXTURE_OWNED}
        changes = options.apply(target, {**wanted, "tool": tool}, label=where)
        if changes:
            _validate(target, path, where)
            target.save(update_fields=[*changes, "updated_at"])
            options.record(target, changes, created=False)
            counts["updated"] += 1
        else:
            counts["unchanged"] += 1
    return counts
