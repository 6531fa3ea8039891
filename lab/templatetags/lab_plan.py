"""A run's plan in words on its benchmark card: what was sent, how hard and for how long, not a raw object."""
from __future__ import annotations

from django import template
from django.contrib.humanize.templatetags.humanize import intcomma

from lab.models import SweepRun
from probe_client.sweep import suite_defaults

register = template.Library()

SUITE_KINDS = (SweepRun.Kind.PREFILL_DECODE, SweepRun.Kind.PREFIX_CACHE, SweepRun.Kind.STRUCTURED_OUTPUT)


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return intcomma(value) if isinstance(value, int) else f"{value:g}"


def _series(values) -> str:
    words = [_number(value) for value in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _sweep_sentences(plan: dict) -> list[str]:
    levels = _series(plan.get("levels") or [])
    per_level = _number(plan.get("requests_per_level", 0))
    if plan.get("mode") == "rate":
        sentences = [
            f"Open loop at {levels} requests/s: arrivals follow a Poisson process (seed {plan.get('seed', 0)}) and "
            f"never wait for an answer, with at most {_number(plan.get('max_in_flight', 0))} requests in flight; "
            f"{per_level} requests per level."
        ]
    else:
        sentences = [
            f"Closed loop at {levels} concurrent streams: each stream sends its next request as soon as the previous "
            f"one ends; {per_level} requests per level."
        ]
    slo = plan.get("slo")
    if slo:
        sentences.append(
            f"SLO: time to first token at most {_number(slo['ttft_ms'])} ms and time per output token at most "
            f"{_number(slo['tpot_ms'])} ms; a level meets it when {round(slo.get('attainment', 0.9) * 100)}% of its "
            "requests do."
        )
    else:
        sentences.append("No SLO was set, so there is no goodput and no knee.")
    if plan.get("max_duration_s"):
        sentences.append(f"No request is sent after {_number(plan['max_duration_s'])} s.")
    sentences.append(
        "Before the first level, one request of the workload settles which parameters the endpoint accepts and opens "
        "the first connection; it is counted in no level."
    )
    return sentences


def _suite_sentences(kind: str, plan: dict) -> list[str]:
    # The suite's own defaults fill in what a stored plan left out, so the words match what was run.
    values = {**suite_defaults(kind), **plan}
    if kind == SweepRun.Kind.PREFILL_DECODE:
        return [f"One stream at a time: prompts of {_series(values['input_lengths'])} tokens, "
                f"{_number(values['requests_per_length'])} requests each, interleaved, "
                f"{_number(values['output_tokens'])} output tokens per answer."]
    if kind == SweepRun.Kind.PREFIX_CACHE:
        return [f"One stream at a time: {_number(values['requests'])} prompts sharing a "
                f"{_number(values['prefix_tokens'])}-token prefix (each with a unique "
                f"{_number(values['suffix_tokens'])}-token tail) alternated with as many unique prompts of the same "
                f"length, {_number(values['output_tokens'])} output tokens per answer."]
    return [f"One stream at a time: {_number(values['requests'])} prompts of {_number(values['input_tokens'])} tokens "
            f"in each variant ({', '.join(values['variants'])}), {_number(values['output_tokens'])} output tokens "
            "per answer."]


@register.simple_tag
def plan_in_words(run: SweepRun) -> list[str]:
    """Sentences for the card's plan. A measured sweep's plan is the lab's own; an imported or published run's
    plan is what the file or the publisher stated, given as stated."""
    plan = run.plan or {}
    if not plan:
        return []
    try:
        if run.kind == SweepRun.Kind.SWEEP and run.origin == SweepRun.Origin.MEASURED:
            return _sweep_sentences(plan)
        if run.kind in SUITE_KINDS:
            return _suite_sentences(run.kind, plan)
    except (KeyError, TypeError, ValueError):
        pass  # a plan stored by an older client in another shape: shown as stated below
    return ["As stated: " + "; ".join(f"{name.replace('_', ' ')} {value}" for name, value in plan.items() if value
                                      not in (None, "", [], {})) + "."]
