"""What published benchmarks say for a wizard answer: the comparisons of several engines on the user's model (or
the reference model) on the hardware of their answer, each engine's figure at one load they all ran, ranked by the
same figure as on the evidence pages, with publisher, dates and engine versions, and where the evidence and the
guide's pick disagree, both."""
from __future__ import annotations

from lab.evidence import Comparison, Ranked
from recommend.selectors import snapshot

# The wizard's hardware answers and the hardware specs published benchmarks name for them.
EVIDENCE_HARDWARE: dict[str, tuple[str, ...]] = {
    "nvidia_hopper_node": ("nvidia-h100-sxm", "nvidia-h100-pcie", "nvidia-h200"),
    "nvidia_blackwell": ("nvidia-b200",),
    "amd_instinct": ("amd-mi300x", "amd-mi325x", "amd-mi355x"),
    "rtx_single": ("nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-rtx-5090"),
    "rtx_multi": ("nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-rtx-5090"),
    "mac": ("apple-m3-ultra", "apple-m4-max", "apple-m4-pro"),
}
REFERENCE_MODEL = "gpt-oss-120b"


def evidence_models() -> list[tuple[str, str]]:
    """(slug, name) of every model with a published comparison of several engines, by name."""
    return sorted({(comparison.model_slug, comparison.model_name) for comparison in snapshot().evidence},
                  key=lambda model: model[1].lower())


def evidence_models_on(hardware_answer: str) -> list[str]:
    """Names of the models with a published comparison of several engines on the answer's hardware."""
    slugs = EVIDENCE_HARDWARE.get(hardware_answer, ())
    return sorted({comparison.model_name for comparison in snapshot().evidence
                   if comparison.hardware_slug in slugs}, key=str.lower)


def _figure(entry: Ranked) -> dict:
    point, series = entry.point, entry.series
    return {
        "engine": series.engine, "engine_slug": series.engine_slug, "version": series.engine_version,
        "setup": series.setup, "flags": series.flags,
        "figure": round(entry.value, 1),
        "output_tps_per_gpu": round(point.output_tps_per_gpu, 1) if point.output_tps_per_gpu is not None else None,
        "tps_per_user": round(point.tps_per_user, 1) if point.tps_per_user else None,
        "load": point.load, "publisher": series.publisher, "url": series.url,
        "observed_on": series.observed_on, "undated": series.undated, "newer_release": series.newer_release,
        "measured_here": not series.is_published,
    }


def _entry(comparison: Comparison, picked_engine: str | None) -> dict:
    """The comparison as the matrix and its page rank it: each engine once, by the comparison's one figure."""
    figures = comparison.by_engine
    leader = figures[0].series if comparison.ranking else None
    disagreement = ""
    if leader and picked_engine and picked_engine in {entry.series.engine_slug for entry in figures} \
            and leader.engine_slug != picked_engine:
        disagreement = (f"The guide's rules rank another engine first; in this comparison {leader.engine} "
                        f"{leader.engine_version} ranks first by {comparison.rank_by_name}. Both are shown: the rules "
                        "weigh the whole profile, this figure is one publisher's run of one workload.")
    return {
        "model": comparison.model_name, "hardware": comparison.hardware_name,
        "hardware_count": comparison.hardware_count, "weight_format": comparison.weight_format,
        "workload": comparison.workload, "mode": comparison.mode,
        "model_slug": comparison.model_slug, "hardware_slug": comparison.hardware_slug,
        "figure": comparison.rank_by, "figure_name": comparison.rank_by_name,
        "load": comparison.ranked_load or comparison.load, "same_load": bool(comparison.ranking),
        "figures": [_figure(entry) for entry in figures],
        "leader": leader.engine if leader else "", "disagreement": disagreement,
    }


def first_engine(results: list[dict]) -> str | None:
    """The engine the answer's first pick runs: the pick itself, or the engine an orchestration layer runs on."""
    if not results:
        return None
    top = results[0]
    return top["tool"] if top["kind"] == "engine" else (top.get("companion") or None)


def published_evidence(*, hardware_answer: str, model: str | None, picked_engine: str | None) -> list[dict]:
    """One entry per published comparison of several engines for the answer's hardware and model: each engine's
    figure (the one the comparison ranks by) at the highest load they all ran (or, when they share none, each at
    its best, unranked)."""
    slugs = EVIDENCE_HARDWARE.get(hardware_answer)
    if not slugs:
        return []
    wanted = model or REFERENCE_MODEL
    return [_entry(comparison, picked_engine) for comparison in snapshot().evidence
            if comparison.model_slug == wanted and comparison.hardware_slug in slugs
            and len(comparison.by_engine) >= 2]
