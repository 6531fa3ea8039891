"""Load fixtures/published_benchmarks.yaml: engine benchmarks third parties published, each series a lab run of
origin "published" with a level per point (called by `manage.py load_catalog`, after the catalog).

A point is the result block the publisher printed (read by the lab's block parser, so every figure is the one
printed) or the figures a table states. Every entry is checked before anything is written: an entry without
publisher, URL, dates, hardware, model or workload, an unknown engine, hardware or model, or a point that cannot be
read is a FixtureError naming the entry and the field, and nothing of the file is loaded. Runs are upserted by key;
their levels are replaced when the file's differ.
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from catalog.models import HardwareSpec, LanguageModel, Tool
from core.loading import FixtureError, LoadOptions, read_yaml
from lab.models import LEVEL_MODES, SOURCE_TOOL_LABELS, LoadMode, SweepLevel, SweepRun
from lab.services.plan import workload_key
from lab.services.record import level_fields
from probe_client.sweep import ResultFileError, parse_result_file
from scoring.vocabulary import LEVEL_METRICS

FILENAME = "published_benchmarks.yaml"
REQUIRED = ("key", "engine", "hardware", "hardware_count", "model", "weight_format", "workload", "measured_with",
            "publisher", "url", "verified_on", "points")
OPTIONAL = ("engine_version", "tensor_parallel", "pipeline_parallel", "serving_command", "read_from", "notes",
            "observed_on", "dated_by")
# Where `observed_on`, the publisher's date, comes from: the page's own date, the commit that added the figures to the
# page, the commit that added the data file, or nowhere (the date could not be established; observed_on stays empty).
# Never the day the entry was read: that is `verified_on`.
DATED_BY = ("page", "commit", "dataset", "unknown")
WORKLOAD_FIELDS = ("mode", "description", "dataset", "input_tokens", "output_tokens", "num_prompts", "max_concurrency",
                   "request_rate")
POINT_FIELDS = ("console", "figures", "quote", "max_concurrency", "request_rate", "num_prompts")
# Figures a table may state, and the level column each goes to.
NUMBERS = {"output_tps": "output_tps", "total_tps": "total_tps", "request_throughput": "request_rate",
           "output_tps_per_gpu": "output_tps_per_gpu"}
# Latency figures a table may state: the lab level's distributions, named by their metric keys.
LATENCIES = tuple(metric.key for metric in LEVEL_METRICS)
STATISTICS = {"mean": "mean", "median": "p50", "p99": "p99"}


def workload_identity(*, mode: str, dataset: str, input_tokens: int | None, output_tokens: int | None,
                      num_prompts: int | None) -> str:
    """What makes two runs' workloads the same one: the requests (dataset, lengths and how many) and how they were
    sent (the load mode). A burst's or an offline batch's single level is its prompt count, so it is part of this;
    a concurrency or rate sweep's levels are the points of its curve. A run measured here on fixed lengths of
    random prompts has the identity of a published random-dataset run of the same lengths, mode and count."""
    return f"{mode}:{dataset}:{input_tokens or '-'}:{output_tokens or '-'}:{num_prompts or '-'}"


class _Entry:
    def __init__(self, path: Path, position: int, data: Any) -> None:
        self.path = path
        self.key = data.get("key") if isinstance(data, dict) else None
        self.label = f"published_benchmarks[{position}]" + (f" (key={self.key})" if self.key else "")
        self.data = data

    def error(self, field: str, message: str) -> FixtureError:
        return FixtureError(path=self.path, row=self.label, field=field, message=message)


def _date(entry: _Entry, name: str) -> datetime.date:
    value = entry.data.get(name)
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise entry.error(name, f"expected a date (YYYY-MM-DD), got {value!r}") from None


def _dates(entry: _Entry) -> tuple[datetime.date | None, datetime.date, str]:
    """The publisher's date, the day it was checked and where the first comes from. A figure cannot be published
    after it was checked, and an entry whose date is unknown says so rather than borrowing the day it was read."""
    dated_by = entry.data.get("dated_by") or "page"
    if dated_by not in DATED_BY:
        raise entry.error("dated_by", f"one of {', '.join(DATED_BY)}, got {dated_by!r}")
    verified = _date(entry, "verified_on")
    if dated_by == "unknown":
        if entry.data.get("observed_on") is not None:
            raise entry.error("observed_on", "must be empty when dated_by is unknown")
        return None, verified, dated_by
    if entry.data.get("observed_on") in (None, ""):
        raise entry.error("observed_on", "required: the publisher's date (dated_by: unknown when none can be found)")
    observed = _date(entry, "observed_on")
    if observed > verified:
        raise entry.error("observed_on", f"{observed} is after verified_on {verified}: a figure is published before "
                                         "it is checked")
    return observed, verified, dated_by


def _count(entry: _Entry, name: str, value: Any, *, optional: bool = True) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise entry.error(name, f"expected a whole number of at least 1, got {value!r}")
    return value


def _console_level(entry: _Entry, where: str, point: dict, measured_with: str) -> dict:
    tool = measured_with if measured_with in ("vllm-bench-serve", "sglang-bench-serving") else None
    try:
        parsed = parse_result_file(str(point["console"]).encode(), source_tool=tool)
    except ResultFileError as error:
        raise entry.error(f"{where}.console", str(error)) from None
    if len(parsed.levels) != 1:
        raise entry.error(f"{where}.console", "one result block per point")
    return parsed.levels[0]


def _figures_level(entry: _Entry, where: str, point: dict) -> dict:
    figures = point.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise entry.error(f"{where}.figures", "a point needs its printed block (console) or its stated figures")
    unknown = sorted(set(figures) - set(NUMBERS) - set(LATENCIES))
    if unknown:
        raise entry.error(f"{where}.figures.{unknown[0]}", "not a figure the lab keeps")
    level: dict = {}
    for name, column in NUMBERS.items():
        value = figures.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise entry.error(f"{where}.figures.{name}", f"expected a number of at least 0, got {value!r}")
            level[column] = float(value)
    for name in LATENCIES:
        stated = figures.get(name) or {}
        if not isinstance(stated, dict) or set(stated) - set(STATISTICS):
            raise entry.error(f"{where}.figures.{name}", f"expected some of {', '.join(STATISTICS)}")
        level[name] = {STATISTICS[stat]: float(value) for stat, value in stated.items() if value is not None}
    return level


def _placed(entry: _Entry, where: str, level: dict, mode: str, point: dict, workload: dict) -> dict:
    """The level at the load the entry's mode states: the concurrency limit, the request rate, the prompts sent at
    once (a burst), or the batch's request count (offline, 0 when the page gives none). A printed block's own load
    must agree with the mode: a block with a concurrency limit is no burst, one without is no concurrency run."""
    limit = _count(entry, f"{where}.max_concurrency", point.get("max_concurrency", workload.get("max_concurrency")))
    prompts = _count(entry, f"{where}.num_prompts", point.get("num_prompts", workload.get("num_prompts")))
    rate = point.get("request_rate", workload.get("request_rate"))
    printed = level.get("mode")
    if mode == LoadMode.CONCURRENCY:
        if not limit:
            raise entry.error(f"{where}.max_concurrency", "a concurrency run states its limit")
        if printed and (printed, level["level"]) != ("concurrency", float(limit)):
            raise entry.error(f"{where}.max_concurrency", f"{limit} is not the block's load ({level['level']:g})")
        return {**level, "mode": LEVEL_MODES[mode], "level": float(limit)}
    if limit:
        raise entry.error(f"{where}.max_concurrency", f"a {mode} run has no concurrency limit, yet {limit} is stated")
    if mode == LoadMode.REQUEST_RATE:
        if printed:
            if printed != "rate":
                raise entry.error(f"{where}.request_rate", "the block states no finite request rate")
            return level
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate <= 0:
            raise entry.error(f"{where}.request_rate", f"a request-rate run states its rate, got {rate!r}")
        return {**level, "mode": LEVEL_MODES[mode], "level": float(rate)}
    if printed == "rate":
        raise entry.error(f"{where}.request_rate", f"a {mode} run sends without a rate limit")
    if printed and level["level"] != level.get("requests"):
        raise entry.error(f"{where}.console", f"the block states a concurrency limit: not a {mode} run")
    sent = level.get("requests") or prompts
    if mode == LoadMode.BURST and not sent:
        raise entry.error(f"{where}.num_prompts", "a burst states how many prompts were sent at once")
    counted = {"requests": sent, "ok": level.get("ok") or sent} if sent else {}
    return {**level, **counted, "mode": LEVEL_MODES[mode], "level": float(sent or 0)}


def _checked(entry: _Entry, tools: dict, hardware: dict, models: dict) -> tuple[dict, list[dict]]:
    data = entry.data
    if not isinstance(data, dict):
        raise entry.error("-", "expected a mapping")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise entry.error(unknown[0], "unknown field")
    missing = [name for name in REQUIRED if data.get(name) in (None, "", [], {})]
    if missing:
        raise entry.error(missing[0], "required: a published figure needs its publisher, link, dates, hardware, "
                                      "model and workload")
    for name, known, what in (("engine", tools, "tool"), ("hardware", hardware, "hardware spec"),
                              ("model", models, "model")):
        if data[name] not in known:
            raise entry.error(name, f"no {what} with the slug {data[name]!r} in the catalog")
    if data["measured_with"] not in SOURCE_TOOL_LABELS:
        raise entry.error("measured_with", f"one of {', '.join(sorted(SOURCE_TOOL_LABELS))}")
    workload = data["workload"]
    if not isinstance(workload, dict) or set(workload) - set(WORKLOAD_FIELDS):
        raise entry.error("workload", f"a mapping of {', '.join(WORKLOAD_FIELDS)}")
    mode = workload.get("mode")
    if mode not in LoadMode.values:
        raise entry.error("workload.mode", f"how the load was sent: one of {', '.join(LoadMode.values)}, got "
                                           f"{mode!r}")
    if not str(workload.get("description") or "").strip() or not workload.get("dataset"):
        raise entry.error("workload.description", "the workload in the publisher's words, and its dataset")
    for name in ("input_tokens", "output_tokens", "num_prompts"):
        _count(entry, f"workload.{name}", workload.get(name))
    if not str(data["url"]).startswith("https://"):
        raise entry.error("url", "the page's https:// address")
    observed, verified, dated_by = _dates(entry)
    fields = {
        "key": data["key"], "origin": SweepRun.Origin.PUBLISHED, "status": SweepRun.Status.IMPORTED,
        "kind": SweepRun.Kind.SWEEP, "source_tool": data["measured_with"], "tool": tools[data["engine"]],
        "engine_version": str(data.get("engine_version") or ""),
        "hardware": hardware[data["hardware"]],
        "hardware_count": _count(entry, "hardware_count", data["hardware_count"], optional=False),
        "tensor_parallel": _count(entry, "tensor_parallel", data.get("tensor_parallel")),
        "pipeline_parallel": _count(entry, "pipeline_parallel", data.get("pipeline_parallel")),
        "model": models[data["model"]], "weight_format": str(data["weight_format"]),
        "workload_description": str(workload["description"]).strip(),
        "workload_name": f"{workload['dataset']}"[:80],
        "load_mode": mode,
        "workload": {name: workload.get(name) for name in WORKLOAD_FIELDS if name not in ("mode", "description")},
        "workload_key": workload_key({"identity": workload_identity(
            mode=mode, dataset=str(workload["dataset"]), input_tokens=workload.get("input_tokens"),
            output_tokens=workload.get("output_tokens"), num_prompts=workload.get("num_prompts"))}),
        "flags": str(data.get("serving_command") or ""),
        "publisher": str(data["publisher"]), "url": str(data["url"]), "observed_on": observed,
        "verified_on": verified, "notes": str(data.get("notes") or "").strip(),
        "card": {"read_from": str(data.get("read_from") or ""), "tool_label": SOURCE_TOOL_LABELS[data["measured_with"]],
                 "dated_by": dated_by},
    }
    points = data["points"]
    if not isinstance(points, list):
        raise entry.error("points", "a list of points")
    levels = []
    for position, point in enumerate(points):
        where = f"points[{position}]"
        if not isinstance(point, dict) or set(point) - set(POINT_FIELDS):
            raise entry.error(where, f"a mapping of {', '.join(POINT_FIELDS)}")
        level = _placed(entry, where, (_console_level(entry, where, point, data["measured_with"])
                                       if point.get("console") else _figures_level(entry, where, point)),
                        mode, point, workload)
        if any((other["mode"], other["level"]) == (level["mode"], level["level"]) for other in levels):
            raise entry.error(where, f"a second point at the same load ({level['mode']} {level['level']:g})")
        levels.append(level)
    return fields, levels


def _stored_levels(run: SweepRun) -> list[dict]:
    keys = [*level_fields({"level": 0}), "output_tps_per_gpu"]
    return [{key: getattr(level, key) for key in keys} for level in run.levels.order_by("mode", "level")]


def _new_levels(levels: list[dict]) -> list[dict]:
    rows = [{**level_fields(level), "output_tps_per_gpu": level.get("output_tps_per_gpu")} for level in levels]
    return sorted(rows, key=lambda row: (row["mode"], row["level"]))


def load(*, fixtures_dir: Path, options: LoadOptions | None = None) -> dict[str, int]:
    options = options or LoadOptions()
    path = Path(fixtures_dir) / FILENAME
    if not path.exists():
        return {}
    document = read_yaml(path) or {}
    entries = document.get("published_benchmarks") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise FixtureError(path=path, row="(file)", field="published_benchmarks", message="expected a list")
    tools = {tool.slug: tool for tool in Tool.objects.all()}
    hardware = {spec.slug: spec for spec in HardwareSpec.objects.all()}
    models = {model.slug: model for model in LanguageModel.objects.all()}
    checked = []
    seen: set[str] = set()
    for position, data in enumerate(entries):
        entry = _Entry(path, position, data)
        fields, levels = _checked(entry, tools, hardware, models)
        if fields["key"] in seen:
            raise entry.error("key", "duplicate key")
        seen.add(fields["key"])
        checked.append((entry, fields, levels))

    counts = {"created": 0, "updated": 0, "unchanged": 0}
    existing = {run.key: run for run in SweepRun.objects.filter(key__in=seen)}
    for entry, fields, levels in checked:
        run = existing.get(fields["key"]) or SweepRun()
        created = run.pk is None
        changes = options.apply(run, fields, label=entry.label)
        if changes:
            run.levels_total = run.levels_done = len(levels)
            run.save()
            options.record(run, changes, created=created)
        rows = _new_levels(levels)
        if created or _stored_levels(run) != rows:
            run.levels.all().delete()
            SweepLevel.objects.bulk_create([SweepLevel(run=run, **row) for row in rows])
            changes = changes or {"levels": {"old": None, "new": len(rows)}}
        counts["created" if created else "updated" if changes else "unchanged"] += 1
    return counts
