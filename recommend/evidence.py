"""What published benchmarks say for a wizard answer: the comparisons of several engines on the user's model (or
the reference model) on the device they named (at their count first) or on the devices of their hardware class,
each engine's figure at one load they all ran, with publisher, dates and engine versions, and where the evidence
and the guide's pick disagree, both."""
from __future__ import annotations

from lab.evidence import Comparison, Point, Series
from recommend.selectors import snapshot
from recommend.wizard import DEFAULT_MODEL, Hardware, class_devices


def _devices(hardware: Hardware) -> tuple[str, ...]:
    return (hardware.device.slug,) if hardware.device else class_devices(hardware.answer)


def evidence_models_on(hardware: Hardware) -> list[str]:
    """Names of the models with a published comparison of several engines on the answer's hardware."""
    slugs = _devices(hardware)
    return sorted({comparison.model_name for comparison in snapshot().evidence
                   if comparison.hardware_slug in slugs}, key=str.lower)


def _shared_load(series: list[Series]) -> tuple[str, float] | None:
    """The highest load (mode and level) at which every series states output per GPU; None when there is none."""
    loads = [{(point.mode, point.level) for point in entry.points if point.output_tps_per_gpu is not None}
             for entry in series]
    shared = set.intersection(*loads) if loads else set()
    return max(shared, key=lambda load: load[1]) if shared else None


def _at(series: Series, load: tuple[str, float] | None) -> Point | None:
    if load is None:
        return series.best
    return next(point for point in series.points if (point.mode, point.level) == load
                and point.output_tps_per_gpu is not None)


def _figure(series: Series, point: Point | None) -> dict:
    return {
        "engine": series.engine, "engine_slug": series.engine_slug, "version": series.engine_version,
        "setup": series.setup,
        "output_tps_per_gpu": round(point.output_tps_per_gpu, 1) if point else None,
        "tps_per_user": round(point.tps_per_user, 1) if point and point.tps_per_user else None,
        "load": point.load if point else "", "publisher": series.publisher, "url": series.url,
        "observed_on": series.observed_on, "undated": series.undated, "newer_release": series.newer_release,
        "measured_here": not series.is_published,
    }


def _entry(comparison: Comparison, picked_engine: str | None) -> dict:
    stated = [series for series in comparison.series if series.best is not None]
    load = _shared_load(stated)
    figures = [(series, _at(series, load)) for series in stated]
    leader = max(figures, key=lambda pair: pair[1].output_tps_per_gpu)[0] if load and len(figures) > 1 else None
    disagreement = ""
    if leader and picked_engine and picked_engine in {series.engine_slug for series in stated} \
            and leader.engine_slug != picked_engine:
        disagreement = (f"The guide's rules rank another engine first; in this comparison {leader.engine} "
                        f"{leader.engine_version} produced the most output per GPU. Both are shown: the rules weigh "
                        "the whole profile, this figure is one publisher's run of one workload.")
    return {
        "model": comparison.model_name, "hardware": comparison.hardware_name,
        "hardware_count": comparison.hardware_count, "weight_format": comparison.weight_format,
        "workload": comparison.workload, "model_slug": comparison.model_slug,
        "hardware_slug": comparison.hardware_slug,
        "load": figures[0][1].load if load else "",
        "same_load": load is not None,
        "figures": [_figure(series, point) for series, point in figures],
        "leader": leader.engine if leader else "", "disagreement": disagreement,
    }


def first_engine(results: list[dict]) -> str | None:
    """The engine the answer's first pick runs: the pick itself, or the engine an orchestration layer runs on."""
    if not results:
        return None
    top = results[0]
    return top["tool"] if top["kind"] == "engine" else (top.get("companion") or None)


def published_evidence(*, hardware: Hardware, model: str | None, picked_engine: str | None) -> list[dict]:
    """One entry per published comparison of several engines for the answer's hardware and model: each engine's
    output per GPU at the highest load they all ran (or, when they share none, each at its best, unranked).
    A named device's comparisons at the named count come first."""
    slugs = _devices(hardware)
    wanted = model or DEFAULT_MODEL
    found = [comparison for comparison in snapshot().evidence
             if comparison.model_slug == wanted and comparison.hardware_slug in slugs
             and sum(series.best is not None for series in comparison.series) >= 2]
    found.sort(key=lambda comparison: comparison.hardware_count != hardware.count)
    return [_entry(comparison, picked_engine) for comparison in found]
