"""Importing a sweep measured elsewhere (vLLM ``bench serve``, GuideLLM, AIPerf), labelled with the tool that
produced it: ``sweep_import_create`` from the figures, ``sweep_import_file`` from the tool's own result file (read
by ``probe_client.sweep.imports``). Everything is validated first; nothing is stored on a bad input."""
from __future__ import annotations

import datetime as dt
import math
from typing import Any, BinaryIO

from django.db import transaction
from django.utils import timezone

from catalog.models import HardwareSpec, Tool
from core.cache import generation_bump
from core.exceptions import ApplicationError
from lab.models import SweepLevel, SweepRun
from lab.services.card import sweep_changes
from lab.services.plan import valid_hardware_count, valid_hourly_price, valid_workload, workload_key
from lab.services.record import NUMBER_FIELDS, PERCENTILE_FIELDS, level_fields
from probe_client.secrets import MAX_TEXT, scrub
from probe_client.sweep import IMPORT_FORMATS, ResultFileError, cost_per_million, find_knee, parse_result_file
from probes.models import ProbeTarget


def _number(value, where: str, *, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ApplicationError(f"{where}: must be a finite number of at least 0.", fields={where: ["A number ≥ 0."]})
    return float(value)


def _validated_level(data, position: int) -> dict:
    where = f"levels.{position}"
    if not isinstance(data, dict):
        raise ApplicationError(f"{where}: must be an object.", fields={where: ["An object."]})
    known = {"mode", "level", "requests", "ok", "errors", "meets_slo", "output_tokens_source", "truncated",
             "schedule_lag_ms", *PERCENTILE_FIELDS, *NUMBER_FIELDS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ApplicationError(f"{where}.{unknown[0]}: not a level field.", fields={f"{where}.{unknown[0]}": ["Unknown."]})
    if data.get("mode", "concurrency") not in ("concurrency", "rate"):
        raise ApplicationError(f"{where}.mode: concurrency or rate.", fields={f"{where}.mode": ["concurrency or rate."]})
    level = _number(data.get("level"), f"{where}.level", allow_none=False)
    if level <= 0:
        raise ApplicationError(f"{where}.level: must be above 0.", fields={f"{where}.level": ["Above 0."]})
    for name in ("requests", "ok"):
        value = data.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ApplicationError(f"{where}.{name}: a whole number ≥ 0.", fields={f"{where}.{name}": ["A count."]})
    if data.get("ok", 0) > data.get("requests", 0):
        raise ApplicationError(f"{where}.ok: more than requests.", fields={f"{where}.ok": ["At most requests."]})
    for name in NUMBER_FIELDS:
        _number(data.get(name), f"{where}.{name}")
    for name in PERCENTILE_FIELDS:
        figures = data.get(name) or {}
        if not isinstance(figures, dict):
            raise ApplicationError(f"{where}.{name}: an object of percentiles.", fields={f"{where}.{name}": ["An object."]})
        for key, value in figures.items():
            _number(value, f"{where}.{name}.{key}")
    errors = data.get("errors") or {}
    if not isinstance(errors, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in errors.items()
    ):
        raise ApplicationError(f"{where}.errors: {{class: count}}.", fields={f"{where}.errors": ["{class: count}."]})
    if data.get("meets_slo") not in (None, True, False):
        raise ApplicationError(f"{where}.meets_slo: true, false or null.", fields={f"{where}.meets_slo": ["A boolean."]})
    return {**data, "level": level}


@transaction.atomic
def sweep_import_create(
    *,
    source_tool: str,
    card: dict,
    workload: dict,
    levels: list[dict],
    target: ProbeTarget | None = None,
    tool: Tool | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
    plan: dict | None = None,
    started_at: dt.datetime | None = None,
    finished_at: dt.datetime | None = None,
) -> SweepRun:
    """Store a sweep measured by a peer tool, labelled with that tool.

    ``levels``: dicts shaped like ``probe_client.sweep.LevelResult.to_dict()`` (``level`` and ``mode`` required;
    a figure the tool did not report is None). ``card``: what the file states (model, engine, version, ...).
    ``workload``: a ``Workload.to_dict()``-shaped description. Validates everything first; on any problem raises
    ApplicationError naming the field (``levels.3.ttft_ms.p99``, ``workload.input.value``, ...) and stores nothing.
    The retest rule applies as for measured runs (``card["engine_version"]``, ``card["weights"]`` or
    ``card["model_id"]``). Cost per 1M output tokens is filled from ``hourly_price_usd`` where the level has output
    tok/s and no cost of its own.
    """
    generation_bump()
    if source_tool not in IMPORT_FORMATS:
        raise ApplicationError(
            f"source_tool must be one of {', '.join(IMPORT_FORMATS)}.", fields={"source_tool": [f"One of {', '.join(IMPORT_FORMATS)}."]}
        )
    if not isinstance(card, dict):
        raise ApplicationError("card must be an object.", fields={"card": ["An object."]})
    parsed_workload = valid_workload(workload)
    if not isinstance(levels, list) or not levels:
        raise ApplicationError("levels must be a non-empty list.", fields={"levels": ["At least one level."]})
    if len(levels) > 64:
        raise ApplicationError("At most 64 levels.", fields={"levels": ["At most 64."]})
    checked = [_validated_level(level, position) for position, level in enumerate(levels)]
    if len({level["level"] for level in checked}) != len(checked):
        raise ApplicationError("Each level may appear once.", fields={"levels": ["Duplicate level."]})
    if target is not None and tool is None:
        tool = target.tool
    price = valid_hourly_price(hourly_price_usd)
    stored_workload = parsed_workload.to_dict()
    full_card = {**scrub(card, ""), "tool": source_tool, "tool_label": IMPORT_FORMATS[source_tool],
                 "workload": stored_workload, "flags": flags}
    if hardware is not None:
        full_card["hardware"] = {"slug": hardware.slug, "name": hardware.name, "count": hardware_count}
    now = timezone.now()
    run = SweepRun.objects.create(
        origin=SweepRun.Origin.IMPORTED,
        target=target,
        tool=tool,
        kind=SweepRun.Kind.SWEEP,
        status=SweepRun.Status.IMPORTED,
        source_tool=source_tool,
        hardware=hardware,
        hardware_count=valid_hardware_count(hardware_count),
        hourly_price_usd=price,
        flags=(flags or "")[:MAX_TEXT],
        workload=stored_workload,
        workload_name=parsed_workload.name[:80],
        workload_key=workload_key(stored_workload),
        plan=scrub(plan or {}, ""),
        card=full_card,
        engine_version=str(card.get("engine_version") or "")[:120],
        model_fingerprint=str(card.get("weights") or card.get("model_id") or "")[:300],
        levels_total=len(checked),
        levels_done=len(checked),
        queued_at=started_at or now,
        started_at=started_at,
        finished_at=finished_at or now,
    )
    for level in checked:
        fields = level_fields(scrub(level, ""))
        if fields["cost_per_1m_output_usd"] is None and price is not None:
            fields["cost_per_1m_output_usd"] = cost_per_million(float(price), fields["output_tps"])
        SweepLevel.objects.create(run=run, **fields)
    run.results = {"knee": find_knee(checked).to_dict()}
    run.changes = sweep_changes(run=run)
    run.save(update_fields=["results", "changes", "updated_at"])
    return run


def sweep_import_file(
    *,
    data: bytes | BinaryIO,
    source_tool: str | None = None,
    target: ProbeTarget | None = None,
    tool: Tool | None = None,
    hardware: HardwareSpec | None = None,
    hardware_count: int = 1,
    hourly_price_usd: Any = None,
    flags: str = "",
) -> SweepRun:
    """Import a peer tool's result file as it wrote it (``source_tool`` None: recognised from the file). ``data``:
    its bytes, or the file itself (an upload), which is read a line at a time where the format allows.

    A file that is not one of the known formats, or whose figures are not valid, raises ApplicationError on
    the ``file`` field (``source_tool`` when that is what is wrong) and nothing is stored."""
    try:
        parsed = parse_result_file(data, source_tool=source_tool or None)
    except ResultFileError as error:
        message = str(error)
        name = "source_tool" if message.startswith("source_tool") else "file"
        raise ApplicationError(message, fields={name: [message]}) from None
    started = dt.datetime.fromtimestamp(parsed.started_at, tz=dt.timezone.utc) if parsed.started_at else None
    finished = dt.datetime.fromtimestamp(parsed.finished_at, tz=dt.timezone.utc) if parsed.finished_at else None
    try:
        return sweep_import_create(
            source_tool=parsed.source_tool, card=parsed.card, workload=parsed.workload, levels=parsed.levels,
            plan=parsed.plan, target=target, tool=tool, hardware=hardware, hardware_count=hardware_count,
            hourly_price_usd=hourly_price_usd, flags=flags, started_at=started, finished_at=finished,
        )
    except ApplicationError as error:
        inner = next(iter(error.fields), "")
        if inner.startswith(("levels", "workload")):
            message = f"file: the figures it holds are not valid ({error.message})"
            raise ApplicationError(message, fields={"file": [message]}) from None
        raise
