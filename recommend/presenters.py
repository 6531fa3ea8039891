"""Shape scoring results as plain dicts for templates and the API, with every source key resolved."""
from __future__ import annotations

from dataclasses import asdict

from recommend.selectors import SourceLabel, answer_sources, recommendation_source_keys
from scoring.breakeven import GpuCost, ProviderCost, Workload, break_even_tokens_per_day
from scoring.fit import WEIGHT_FORMATS_BY_SLUG, FitInput, FitResult
from scoring.ranking import (
    EVIDENCE_DOCUMENTED,
    EVIDENCE_MEASURED,
    EVIDENCE_REPORTED,
    ExcludedTool,
    Reason,
    Recommendation,
)


def _source(labels: dict[str, SourceLabel], key: str | None) -> dict | None:
    if not key:
        return None
    label = labels.get(key)
    return asdict(label) if label else {"key": key, "title": key, "url": "", "verified_on": None}


def _reason_source(labels, reason: Reason) -> dict | None:
    if reason.external:
        return {"key": reason.external.url, "title": reason.external.title, "url": reason.external.url,
                "verified_on": None}
    return _source(labels, reason.source_key)


def _reasons(labels, reasons: list[Reason]) -> list[dict]:
    return [{"text": reason.text, "rule": reason.rule, "source": _reason_source(labels, reason)}
            for reason in reasons]


def _excluded(labels, item: ExcludedTool) -> dict:
    return {
        "tool": item.tool, "name": item.name, "kind": item.kind, "reasons": _reasons(labels, item.reasons),
        "caveats": [
            {"title": caveat.title, "body": caveat.body, "severity": caveat.severity,
             "source": _source(labels, caveat.source_key)}
            for caveat in item.caveats
        ],
    }


def provider_evidence_note(recommendation: Recommendation) -> str | None:
    """One plain line naming what ranked the hosted providers, built from the reasons the ranking gave."""
    tier = recommendation.provider_evidence
    if tier == EVIDENCE_MEASURED:
        return "Hosted providers ranked on this site's own measurements: 72-hour medians of its probe runs."
    if tier == EVIDENCE_REPORTED:
        externals = [reason.external for item in recommendation.results for reason in item.reasons
                     if reason.rule == "reported:speed" and reason.external]
        if not externals:
            return None
        publisher = externals[0].title
        dates = sorted({external.observed_on for external in externals})
        observed = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        latency = f", latency as {recommendation.latency_metric}" if recommendation.latency_metric else ""
        return (f"Hosted providers ranked on figures reported by {publisher} (observed {observed}){latency}; "
                "not measured by this site.")
    if tier == EVIDENCE_DOCUMENTED:
        return ("Hosted providers ranked on documented facts only: no measurement by this site and no "
                "reported figure covers them.")
    return None


def recommendation_as_dict(recommendation: Recommendation) -> dict:
    labels = answer_sources(keys=recommendation_source_keys(recommendation))
    return {
        "results": [
            {
                "tool": item.tool, "name": item.name, "kind": item.kind, "score": item.score,
                "rank": item.rank, "tied": item.tied, "companion": item.companion,
                "companion_name": item.companion_name,
                "reasons": _reasons(labels, item.reasons), "lost_because": item.lost_because,
                "named_by_guide": not item.reasons or item.reasons[0].rule != "catalog:hardware",
            }
            for item in recommendation.results
        ],
        "not_recommended": [_excluded(labels, item) for item in recommendation.not_recommended],
        "excluded": [_excluded(labels, item) for item in recommendation.excluded],
        "warnings": [
            {"code": warning.code, "message": warning.message, "source": _source(labels, warning.citation.source_key),
             "where": warning.citation.locator}
            for warning in recommendation.warnings
        ],
        "reference_model": recommendation.reference_model,
        "provider_evidence": recommendation.provider_evidence,
        "provider_evidence_note": provider_evidence_note(recommendation),
        "latency_metric": recommendation.latency_metric,
        "switch_when": [asdict(option) for option in recommendation.switch_when],
    }


def fit_as_dict(spec: FitInput, result: FitResult) -> dict:
    values = asdict(spec)
    values["weight_format_name"] = WEIGHT_FORMATS_BY_SLUG[spec.weight_format].name if spec.weight_format else ""
    values["full_attention_layers"] = spec.full_attention_layers
    return {"input": values, "result": asdict(result)}


def break_even_as_dict(workload: Workload, providers: list[ProviderCost], gpus: list[GpuCost]) -> dict:
    cheapest = providers[0] if providers else None
    return {
        "assumptions": {
            "hours_per_month": 730,
            "utilisation": workload.utilisation,
            "note": "Per-token prices without batch or cache discounts; GPUs billed every hour; the GPUs must "
            "carry the day's tokens within the busy share of the day.",
        },
        "workload": {
            "input_tokens_per_day": workload.input_tokens_per_day,
            "output_tokens_per_day": workload.output_tokens_per_day,
            "required_output_tokens_per_second": workload.required_output_tps,
            "required_input_tokens_per_second": workload.required_input_tps,
        },
        "providers": [
            {"tool": cost.price.tool, "name": cost.price.tool_name, "item": cost.price.item,
             "input_usd_per_mtok": cost.price.input_usd_per_mtok,
             "output_usd_per_mtok": cost.price.output_usd_per_mtok, "usd_per_day": round(cost.usd_per_day, 4),
             "monthly_usd": round(cost.monthly_usd, 2), "source": cost.price.source,
             "verified_on": cost.price.verified_on}
            for cost in providers
        ],
        "gpus": [
            {"tool": cost.price.tool, "name": cost.price.tool_name, "item": cost.price.item, "tier": cost.price.tier,
             "usd_per_hour": cost.price.usd_per_hour, "gpus": cost.gpus, "monthly_usd": round(cost.monthly_usd, 2),
             "output_tokens_per_second_per_gpu": cost.output_tps_per_gpu,
             "input_tokens_per_second_per_gpu": cost.input_tps_per_gpu,
             "self_hosting_wins": cost.self_hosting_wins,
             "break_even_tokens_per_day": (
                 round(break_even_tokens_per_day(gpu_monthly_usd=cost.monthly_usd, workload=workload,
                                                 price=cheapest.price))
                 if cheapest and cheapest.usd_per_day > 0 else None
             ),
             "source": cost.price.source, "verified_on": cost.price.verified_on,
             "user_supplied": cost.price.user_supplied}
            for cost in gpus
        ],
    }
