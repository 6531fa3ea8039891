"""Writes of the change record (catalog.models.Change).

Catalog changes are read from the audit trail: every write that audits (the API's and the admin's services, the
fixture loader) hands its saved entries to :func:`changes_from_audit`, which keeps the fields a reader tracks
(prices, ratings, licences, documented gaps, reported figures) and writes one change per audited row and kind.
An entry that touched nothing tracked writes nothing, so a reload of an unchanged catalog writes no change. The
measured kinds (probes) and engine releases (lab, which knows the published series a release makes older) call
:func:`changes_save` themselves.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from django.urls import reverse

from catalog.models import (
    Change,
    DocumentedAbsence,
    HardwareTarget,
    LanguageModel,
    Licence,
    PriceItem,
    ReportedFigure,
    Tool,
    ToolApiSurface,
)
from core import cache as page_cache
from core.models import AuditEntry
from core.services import audit_value
from scoring.vocabulary import model_slug

PRICE_FIELDS = {
    "input_usd_per_mtok": "input", "output_usd_per_mtok": "output", "amount_usd": "amount",
    "discount_percent": "discount",
}
PERCENT_FIELDS = {"discount_percent"}
TOOL_FIELDS = {"rating": Change.Kind.RATING, "licence": Change.Kind.LICENCE}
API_GAP_FIELDS = ("gaps", "checks")
ARROW = "→"


def changes_save(changes: Iterable[Change]) -> list[Change]:
    """Save new change rows; the pages and feeds that show them move on when the writer's transaction commits."""
    changes = list(changes)
    if changes:
        Change.objects.bulk_create(changes)
        page_cache.generation_bump()
    return changes


def tool_url(tool: Tool) -> str:
    return reverse("catalog:tool_detail", kwargs={"slug": tool.slug})


def _decimal_text(value: Any) -> str:
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    text = format(number.normalize(), "f")
    return text if "." not in text or len(text.split(".")[1]) >= 2 else f"{number:.2f}"


def _price_text(name: str, value: Any) -> str:
    if value is None:
        return "none"
    return f"{_decimal_text(value)}%" if name in PERCENT_FIELDS else f"${_decimal_text(value)}"


def _or_none(value: Any) -> str:
    return "none" if value is None else str(value)


def _fields(changes: Mapping[str, Mapping[str, Any]], names: Iterable[str]) -> tuple[dict, dict]:
    present = [name for name in names if name in changes]
    return ({name: changes[name]["old"] for name in present}, {name: changes[name]["new"] for name in present})


def _created(entry: AuditEntry) -> bool:
    return entry.action == AuditEntry.Action.CREATE


def _prices(entries: list[AuditEntry]) -> list[Change]:
    items = PriceItem.objects.select_related("tool", "model", "source").in_bulk([int(e.object_id) for e in entries])
    found = []
    for entry in entries:
        item = items.get(int(entry.object_id))
        before, after = _fields(entry.changes, PRICE_FIELDS)
        if item is None or not after or all(value is None for value in after.values()):
            continue
        subject = f"{item.item} ({item.get_tier_display()})"
        if _created(entry):
            parts = [f"{PRICE_FIELDS[name]} {_price_text(name, value)}" for name, value in after.items()
                     if value is not None]
            title = f"{item.tool.name}: new price for {subject}, {', '.join(parts)}"
            before = None
        else:
            parts = [f"{PRICE_FIELDS[name]} {_price_text(name, before[name])} {ARROW} {_price_text(name, after[name])}"
                     for name in after]
            title = f"{item.tool.name}: {subject} {', '.join(parts)}"
        found.append(Change(
            kind=Change.Kind.PRICE, title=title[:300], subject=subject[:200], before=before, after=after,
            tool=item.tool, model=item.model, source=item.source, url=tool_url(item.tool), audit_entry=entry,
        ))
    return found


def _tools(entries: list[AuditEntry]) -> list[Change]:
    tools = Tool.objects.select_related("rating_source").in_bulk([int(e.object_id) for e in entries])
    licences = {licence.spdx_id: licence.name for licence in Licence.objects.all()}
    found = []
    for entry in entries:
        tool = tools.get(int(entry.object_id))
        if tool is None or _created(entry):
            continue
        for name, kind in TOOL_FIELDS.items():
            if name not in entry.changes:
                continue
            old, new = entry.changes[name]["old"], entry.changes[name]["new"]
            if kind == Change.Kind.RATING:
                title = f"{tool.name}: rating {_or_none(old)} {ARROW} {_or_none(new)}"
                source = tool.rating_source
            else:
                named_old, named_new = (licences.get(value, value or "not stated") for value in (old, new))
                title = f"{tool.name}: licence {named_old} {ARROW} {named_new}"
                source = None
            found.append(Change(
                kind=kind, title=title[:300], subject=name, before={name: old}, after={name: new}, tool=tool,
                source=source, url=tool_url(tool), audit_entry=entry,
            ))
    return found


def _absences(entries: list[AuditEntry]) -> list[Change]:
    rows = DocumentedAbsence.objects.select_related(
        "tool", "hardware", "quant_format", "feature", "api_surface", "source"
    ).in_bulk([int(e.object_id) for e in entries])
    found = []
    for entry in entries:
        absence = rows.get(int(entry.object_id))
        if absence is None:
            continue
        aspect = absence.aspect
        changed = [name for name in entry.changes if name in (aspect, "notes")]
        if not _created(entry) and not changed:
            continue
        before, after = _fields(entry.changes, changed or [aspect])
        subject = str(absence.subject)
        verb = "documented gap" if _created(entry) else "documented gap changed"
        found.append(Change(
            kind=Change.Kind.GAP, title=f"{absence.tool.name}: {verb}, no {subject}"[:300], subject=subject[:200],
            before=None if _created(entry) else before, after=after, tool=absence.tool,
            hardware=absence.hardware if isinstance(absence.subject, HardwareTarget) else None,
            source=absence.source, url=tool_url(absence.tool), audit_entry=entry,
        ))
    return found


def _api_gaps(entries: list[AuditEntry]) -> list[Change]:
    rows = ToolApiSurface.objects.select_related("tool", "api_surface", "source").in_bulk(
        [int(e.object_id) for e in entries]
    )
    found = []
    for entry in entries:
        row = rows.get(int(entry.object_id))
        before, after = _fields(entry.changes, API_GAP_FIELDS)
        if row is None or _created(entry) or not after:
            continue
        found.append(Change(
            kind=Change.Kind.GAP, title=f"{row.tool.name}: documented {row.api_surface.name} gaps changed"[:300],
            subject=row.api_surface.name[:200], before=before, after=after, tool=row.tool, source=row.source,
            url=tool_url(row.tool), audit_entry=entry,
        ))
    return found


def _reported(entries: list[AuditEntry]) -> list[Change]:
    figures = ReportedFigure.objects.select_related(
        "tool", "model", "hardware__hardware_target", "source"
    ).in_bulk([int(e.object_id) for e in entries])
    found = []
    for entry in entries:
        figure = figures.get(int(entry.object_id))
        if figure is None or (not _created(entry) and "value" not in entry.changes):
            continue
        metric = figure.get_metric_display()
        value = f"{_decimal_text(figure.value)} {figure.unit}"
        if _created(entry):
            title, before = f"{figure.tool.name}: {figure.publisher} reports {metric} {value}", None
        else:
            old = f"{_decimal_text(entry.changes['value']['old'])} {figure.unit}"
            title, before = f"{figure.tool.name}: {figure.publisher}'s {metric} {old} {ARROW} {value}", {
                "value": entry.changes["value"]["old"]}
        found.append(Change(
            kind=Change.Kind.EVIDENCE, title=title[:300], subject=metric[:200], before=before,
            after={"value": audit_value(figure.value), "metric": figure.metric, "publisher": figure.publisher,
                   "url": figure.url},
            tool=figure.tool, model=figure.model,
            hardware=figure.hardware.hardware_target if figure.hardware else None, source=figure.source,
            effective_on=figure.observed_on, url=figure.url or tool_url(figure.tool), audit_entry=entry,
        ))
    return found


# Audited rows the catalog tracks, by their audit trail object type.
CLASSIFIERS: dict[str, Callable[[list[AuditEntry]], list[Change]]] = {
    "catalog.priceitem": _prices,
    "catalog.tool": _tools,
    "catalog.documentedabsence": _absences,
    "catalog.toolapisurface": _api_gaps,
    "catalog.reportedfigure": _reported,
}


def changes_from_audit(entries: list[AuditEntry]) -> list[Change]:
    """The changes a batch of saved audit entries make to what the catalog shows, saved (a few queries per batch)."""
    by_type: dict[str, list[AuditEntry]] = {}
    for entry in entries:
        if entry.object_type in CLASSIFIERS and entry.changes:
            by_type.setdefault(entry.object_type, []).append(entry)
    return changes_save(change for object_type, batch in by_type.items() for change in CLASSIFIERS[object_type](batch))


def model_for(*, tool: Tool, model_id: str) -> LanguageModel | None:
    """The catalog model a provider's model id names: its offering's id first, else the slug it spells."""
    wanted = model_slug(model_id)
    if not wanted:
        return None
    for offering in tool.model_offerings.select_related("model"):
        if wanted in {model_slug(offering.api_model_id), offering.model.slug}:
            return offering.model
    return LanguageModel.objects.filter(slug=wanted).first()

