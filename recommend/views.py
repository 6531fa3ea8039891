"""Server-rendered recommendation pages. Every page works without JavaScript (plain GET forms)."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from catalog.models import UseCase
from core.cache import cached_page
from recommend.forms import BreakEvenForm, FitForm, WizardForm
from recommend.presenters import break_even_as_dict, fit_as_dict, recommendation_as_dict
from recommend.selectors import (
    catalog_data,
    gpu_prices,
    hardware_spec_list,
    priced_models,
    source_labels,
    token_prices,
    tool_names,
    use_case_get,
    use_case_list,
)
from scoring.breakeven import gpu_costs, provider_costs
from scoring.fit import (
    ENGINE_RESERVED_SOURCE,
    GPT_OSS_MODEL_CARD,
    LLAMA_CPP_OFFLOAD,
    MAX_DEVICES_SUGGESTED,
    MODEL_PRESETS,
    WEIGHT_FORMATS,
    calculate,
)
from scoring.ranking import recommend
from scoring.rules import ENGINE_GUIDE, EVALUATE, GUIDE_RULES, ORCHESTRATE, QUANTIZATION_GUIDE, RECIPES

RECIPE_HARDWARE_BY_USE_CASE = {recipe.use_case: recipe.hardware for recipe in RECIPES}
RECIPES_BY_USE_CASE = {recipe.use_case: recipe for recipe in RECIPES}
ROLE_VERBS = {EVALUATE: "Evaluate", ORCHESTRATE: "Add"}

# The catalog hardware spec (and device count) the fit and break-even links start from for each wizard
# hardware answer: the device the seed's recipe names, which the visitor can change there.
FIT_HARDWARE_BY_ANSWER: dict[str, tuple[str, int]] = {
    "mac": ("apple-m3-ultra", 1),
    "rtx_single": ("nvidia-rtx-4090", 1),
    "rtx_multi": ("nvidia-rtx-4090", 2),
    "nvidia_hopper_node": ("nvidia-h100-sxm", 8),
    "nvidia_blackwell": ("nvidia-b200", 8),
    "amd_instinct": ("amd-mi300x", 8),
}


def _error_summary(form) -> list[str]:
    """One line per problem, naming the field, shown above the form."""
    lines = []
    for name, errors in form.errors.items():
        label = form.fields[name].label if name in form.fields else "Input"
        lines.extend(f"{label}: {error}" for error in errors)
    return lines


def _render_form_page(request, template: str, form, result, **context) -> HttpResponse:
    status = 400 if form.is_bound and form.errors else 200
    return render(request, template, {
        "form": form, "result": result, "error_summary": _error_summary(form) if form.is_bound else [], **context,
    }, status=status)


@cached_page()
def use_cases(request: HttpRequest) -> HttpResponse:
    groups: dict[str, dict] = {}
    for use_case in use_case_list():
        group = groups.setdefault(use_case.group, {"label": use_case.get_group_display(), "use_cases": []})
        group["use_cases"].append(use_case)
    order = [choice for choice, _ in UseCase.Group.choices]
    return render(request, "recommend/use_case_list.html", {
        "groups": [groups[key] for key in order if key in groups],
    })


@cached_page()
def use_case_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        use_case = use_case_get(slug=slug)
    except UseCase.DoesNotExist:
        raise Http404(f"No use case with the slug {slug!r}.") from None
    recommendations = list(use_case.recommendations.all())
    recommended = [item for item in recommendations if item.is_recommended]
    return render(request, "recommend/use_case_detail.html", {
        "use_case": use_case,
        "recommended": recommended,
        "choices": _conditional_choices(use_case.slug, recommended),
        "listed_not_recommended": [item for item in recommendations if not item.is_recommended],
        "wizard_hardware": RECIPE_HARDWARE_BY_USE_CASE.get(use_case.slug),
        "page_sources": sorted({*use_case.sources.all(), *(item.source for item in recommendations)},
                               key=lambda source: source.title.lower()),
    })


def _calculator_links(profile) -> dict[str, str]:
    """/fit/ and /break-even/ started from the wizard's answers (hardware, context, concurrency)."""
    fit = {"context_tokens": profile.context_tokens, "concurrency": profile.concurrency}
    break_even: dict[str, object] = {}
    spec = FIT_HARDWARE_BY_ANSWER.get(profile.hardware)
    if spec and any(known.slug == spec[0] for known in hardware_spec_list()):
        fit.update(hardware=spec[0], devices=spec[1])
        break_even["gpu_count"] = spec[1]
    return {
        "fit": f"{reverse('recommend:fit')}?{urlencode(fit)}#result",
        "break_even": f"{reverse('recommend:break_even')}?{urlencode(break_even)}" if break_even
        else reverse("recommend:break_even"),
        "fit_hardware": spec[0] if spec and "hardware" in fit else "",
    }


def _conditional_choices(slug: str, recommended: list) -> list[dict]:
    """The picks as choices: where to start, then "choose X when …" for each alternative, not a ranking.

    Hardware recipes carry the guide's conditions (scoring.rules); other lists keep their reasons, which
    say when each applies.
    """
    recipe = RECIPES_BY_USE_CASE.get(slug)
    entries = {entry.tool: entry for entry in recipe.entries} if recipe else {}
    choices = []
    for position, item in enumerate(recommended):
        entry = entries.get(item.tool.slug)
        if position == 0:
            verb, when = "Start with", ""
        elif entry and entry.condition:
            verb, when = ROLE_VERBS.get(entry.role, "Choose"), entry.condition
        else:
            verb, when = "Or", ""
        choices.append({"item": item, "verb": verb, "when": when})
    return choices


# The map's lines where the catalog's facts add something the one-line answer leaves out.
GUIDE_RULE_NOTES = {
    "nvidia-max": "Evaluate it against vLLM or SGLang: it trades portability for peak performance.",
    "cluster": "An orchestration layer: it runs on top of vLLM, SGLang or TensorRT-LLM, not instead of them.",
}


@cached_page()
def engine_guide(request: HttpRequest) -> HttpResponse:
    names = tool_names(slugs=[rule.tool for rule in GUIDE_RULES])
    rules = [
        {"id": rule.id, "situation": rule.situation, "tool": rule.tool, "tool_name": names.get(rule.tool, rule.tool),
         "note": GUIDE_RULE_NOTES.get(rule.id, "")}
        for rule in GUIDE_RULES if rule.tool in names
    ]
    return render(request, "recommend/engine_guide.html", {
        "guide_rules": rules,
        "page_sources": sorted(source_labels(keys={ENGINE_GUIDE, QUANTIZATION_GUIDE}).values(), key=lambda s: s.key),
    })


def _with_defaults(query, form_class) -> object:
    """The query with each unanswered field at its default, so the redisplayed form shows what was assumed."""
    data = query.copy()
    for name, field in form_class.base_fields.items():
        if name not in data and field.initial is not None:
            data[name] = field.initial
    return data


@cached_page()
def wizard(request: HttpRequest) -> HttpResponse:
    form = WizardForm(_with_defaults(request.GET, WizardForm) if request.GET else None)
    result = None
    if form.is_valid():
        result = recommendation_as_dict(recommend(form.profile, catalog_data()))
        result["other_engines"] = sum(not item["named_by_guide"] for item in result["results"])
        result["links"] = _calculator_links(form.profile)
    return _render_form_page(request, "recommend/wizard.html", form, result)


@cached_page()
def fit(request: HttpRequest) -> HttpResponse:
    specs = list(hardware_spec_list())
    form = FitForm(request.GET or None, hardware_specs=specs)
    result = None
    if form.is_valid():
        result = fit_as_dict(form.fit_input, calculate(form.fit_input))
    chosen = form.specs.get(form.cleaned_data.get("hardware") or "") if form.is_valid() else None
    return _render_form_page(
        request, "recommend/fit.html", form, result, presets=MODEL_PRESETS, weight_formats=WEIGHT_FORMATS,
        unified_memory=bool(chosen and chosen.is_unified_memory), max_devices=MAX_DEVICES_SUGGESTED,
        overhead_source=ENGINE_RESERVED_SOURCE, offload_source=LLAMA_CPP_OFFLOAD, gpt_oss_card=GPT_OSS_MODEL_CARD,
        specs=specs, page_sources=sorted({spec.source for spec in specs}, key=lambda source: source.title.lower()),
    )


@cached_page()
def break_even(request: HttpRequest) -> HttpResponse:
    models = priced_models()
    form = BreakEvenForm(request.GET or None, models=models)
    result = None
    if form.is_valid():
        providers = provider_costs(form.workload, token_prices(model=form.cleaned_data["model"]))
        gpus = gpu_costs(form.workload, gpu_prices(), gpu_count=form.cleaned_data["gpu_count"], providers=providers)
        result = break_even_as_dict(form.workload, providers, gpus)
    return _render_form_page(request, "recommend/break_even.html", form, result, models=models)
