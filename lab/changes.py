"""The lab's part of the change record: a third party's newly published run, and an engine release, named with the
published series of that engine it makes older (both read from the audit trail, see catalog.changes)."""
from __future__ import annotations

from collections import Counter

from catalog.changes import changes_save, tool_url
from catalog.models import Change, Tool
from core.models import AuditEntry
from lab.evidence import newer_release, release_version
from lab.models import SweepRun


def series_name(run: SweepRun) -> str:
    """A published series as a reader finds it on the engine's page: publisher, engine and version, model, hardware."""
    engine = f"{run.tool.name} {run.engine_version}".strip() if run.tool else run.engine_version or "engine not stated"
    hardware = f" on {run.hardware_count} × {run.hardware.name}" if run.hardware else ""
    model = f", {run.model.name}" if run.model else ""
    return f"{run.publisher or 'unnamed publisher'}: {engine}{model}{hardware}"


def _is_newer(old: str | None, new: str) -> bool:
    """Whether `new` is a later release than `old`; a correction back to an earlier one is not a release. A version
    that does not parse counts as newer: the source said it is the latest."""
    before, after = release_version(old or ""), release_version(new)
    return before is None or after is None or after > before


def _releases(entries: list[AuditEntry]) -> list[Change]:
    releases = [entry for entry in entries if "latest_version" in entry.changes and entry.action == "update"]
    if not releases:
        return []
    tools = Tool.objects.select_related("latest_version_source").in_bulk([int(e.object_id) for e in releases])
    published = SweepRun.objects.filter(
        origin=SweepRun.Origin.PUBLISHED, tool__in=tools.values()
    ).select_related("tool", "model", "hardware").order_by("tool_id", "-observed_on", "id")
    found = []
    for entry in releases:
        tool = tools.get(int(entry.object_id))
        old, new = entry.changes["latest_version"]["old"], entry.changes["latest_version"]["new"]
        if tool is None or not new or not _is_newer(old, new):
            continue
        older = Counter(series_name(run) for run in published if run.tool_id == tool.pk and newer_release(run))
        title = f"{tool.name} {new} released"
        if older:
            title += f"; {older.total()} published series measured an older version"
        found.append(Change(
            kind=Change.Kind.RELEASE, title=title[:300], subject=new[:200],
            before={"latest_version": old},
            after={"latest_version": new, "older_series": [
                name if count == 1 else f"{name} ({count} series)" for name, count in older.items()]},
            tool=tool, source=tool.latest_version_source,
            effective_on=tool.latest_version_released_on, url=tool_url(tool), audit_entry=entry,
        ))
    return found


def _published(entries: list[AuditEntry]) -> list[Change]:
    created = [entry for entry in entries if entry.object_type == "lab.sweeprun" and entry.action == "create"]
    runs = SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED).select_related(
        "tool", "model", "hardware__hardware_target"
    ).in_bulk([int(e.object_id) for e in created])
    found = []
    for entry in created:
        run = runs.get(int(entry.object_id))
        if run is None:
            continue
        name = series_name(run)
        found.append(Change(
            kind=Change.Kind.EVIDENCE, title=f"Published benchmark: {name}"[:300], subject=(run.key or "")[:200],
            after={"series": name, "publisher": run.publisher, "url": run.url, "engine_version": run.engine_version},
            tool=run.tool, model=run.model, hardware=run.hardware.hardware_target if run.hardware else None,
            effective_on=run.observed_on, url=run.url, audit_entry=entry,
        ))
    return found


def lab_changes_from_audit(entries: list[AuditEntry]) -> list[Change]:
    """Engine releases and newly published runs among saved audit entries, saved as changes."""
    tool_entries = [entry for entry in entries if entry.object_type == "catalog.tool"]
    return changes_save([*_releases(tool_entries), *_published(entries)])
