"""Server-rendered recommendation pages. Every page works without JavaScript (plain GET forms)."""
from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from catalog.models import UseCase
from catalog.selectors import sources_by_title, use_case_get, use_case_list
from core.cache import cached_page
from recommend.cost import break_even_evidence
from recommend.evidence import evidence_models_on, first_engine, published_evidence
from recommend.forms import BreakEvenForm, FitForm, WizardForm, fit_input_from
from recommend.presenters import break_even_as_dict, fit_as_dict, recommendation_as_dict
from recommend.selectors import (
    answer_sources,
    catalog_data,
    gpu_prices,
    hardware_spec_get,
    hardware_spec_list,
    priced_models,
    source_labels,
    token_prices,
    tool_names,
)
from scoring.breakeven import gpu_costs, own_gpu_price, provider_costs
from recommend.wizard import calculator_links, class_devices, model_resolve
from scoring.errors import InputError
from scoring.fit import (
    APPLE_WIRED_LIMIT_SOURCE,
    APPLE_WORKING_SET_DEFAULT_SOURCE,
    APPLE_WORKING_SET_SOURCE,
    ENGINE_RESERVED_SOURCE,
    GPT_OSS_MODEL_CARD,
    LLAMA_CPP_MULTI_GPU,
    LLAMA_CPP_OFFLOAD,
    MAX_DEVICES_SUGGESTED,
    MODEL_PRESETS,
    MODEL_PRESETS_BY_SLUG,
    VLLM_TENSOR_PARALLEL_RULE,
    WEIGHT_FORMATS,
    WEIGHT_FORMATS_BY_SLUG,
    calculate,
    usable_memory_gib,
    weights_gib,
)
from scoring.ranking import recommend
from scoring.rules import ENGINE_GUIDE, EVALUATE, GUIDE_RULES, ORCHESTRATE, QUANTIZATION_GUIDE, RECIPES

RECIPE_HARDWARE_BY_USE_CASE = {recipe.use_case: recipe.hardware for recipe in RECIPES}
RECIPES_BY_USE_CASE = {recipe.use_case: recipe for recipe in RECIPES}
ROLE_VERBS = {EVALUATE: "Evaluate", ORCHESTRATE: "Add"}

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
        "page_sources": sources_by_title([*use_case.sources.all(), *(item.source for item in recommendations)]),
    })


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


# The quantization guide's rule of thumb (seed 004): "for 34B or 70B models, 24 GB of VRAM is the practical
# minimum to avoid excessive offloading to system RAM". Both pages that quote it show beside it what the
# calculator says 24 GB holds, so the line and the calculator never contradict each other.
RULE_OF_THUMB_CARD = "nvidia-rtx-4090"
RULE_OF_THUMB_FORMAT = "q4_k_m"
RULE_OF_THUMB_34B_PARAMS = 34.0
RULE_OF_THUMB_70B_MODEL = "llama-3.3-70b"


def rule_of_thumb_24gb(card) -> dict | None:
    """What one 24 GB card holds at Q4_K_M: a 34B model's weights, and what a 70B model needs instead."""
    if card is None:
        return None
    fmt = WEIGHT_FORMATS_BY_SLUG[RULE_OF_THUMB_FORMAT]
    values = {"model": RULE_OF_THUMB_70B_MODEL, "weight_format": fmt.slug, "hardware": card.slug}
    try:
        seventy = calculate(fit_input_from(values, specs={card.slug: card}))
    except InputError:
        return None
    capacity = float(card.memory_gb)
    weights_34b = weights_gib(params_b=RULE_OF_THUMB_34B_PARAMS, bits_per_weight=fmt.bits_per_weight)
    wwf = seventy.what_would_fit
    return {
        "card": card.name, "memory_gib": capacity, "format": fmt.name, "bits": fmt.bits_per_weight,
        "weights_34b_gib": weights_34b, "left_34b_gib": usable_memory_gib(memory_gib=capacity) - weights_34b,
        "model_70b": MODEL_PRESETS_BY_SLUG[RULE_OF_THUMB_70B_MODEL].name,
        "weights_70b_gib": seventy.weights_gib, "total_70b_gib": seventy.total_gib, "fits_70b": seventy.fits,
        "devices_70b": wwf.devices_needed if wwf else None,
        "gpu_layers_70b": wwf.offload.gpu_layers if wwf and wwf.offload else None,
        "layers_70b": wwf.offload.layers if wwf and wwf.offload else None,
        "system_70b_gib": wwf.offload.system_memory_gib if wwf and wwf.offload else None,
        "fit_link": f"{reverse('recommend:fit')}?{urlencode(values)}#result",
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
        "rule_of_thumb": rule_of_thumb_24gb(hardware_spec_get(slug=RULE_OF_THUMB_CARD)),
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
        model = model_resolve(form.cleaned_data.get("model"))
        result["hardware_label"] = form.hardware.label
        result["links"] = calculator_links(profile=form.profile, hardware=form.hardware, model=model,
                                           volumes=form.volumes)
        result["published_evidence"] = published_evidence(
            hardware=form.hardware, model=model, picked_engine=first_engine(result["results"]),
        )
        result["evidence_model"] = result["links"]["model_name"]
        result["evidence_hardware"] = bool(form.hardware.device or class_devices(form.profile.hardware))
        result["evidence_models_here"] = evidence_models_on(form.hardware)
    return _render_form_page(request, "recommend/wizard.html", form, result)


def _preset_rows() -> list[dict]:
    """The presets as the page lists them, with each MoE model's routed-expert split."""
    return [
        {"preset": preset, "format_name": WEIGHT_FORMATS_BY_SLUG[preset.native_format].name,
         "expert_params_b": round(preset.params_b - preset.shared_params_b, 2) if preset.is_moe else None}
        for preset in MODEL_PRESETS
    ]


def _preset_notes() -> list[dict]:
    """The presets' notes under the table, each said once for every model it concerns."""
    notes: dict[str, list[str]] = {}
    for preset in MODEL_PRESETS:
        if preset.shared_bits_per_weight:
            notes.setdefault(
                f"Published with the routed experts in {WEIGHT_FORMATS_BY_SLUG[preset.native_format].name} and "
                f"the other {preset.shared_params_b} B parameters in BF16.", []).append(preset.name)
        if preset.note:
            notes.setdefault(preset.note, []).append(preset.name)
    return [{"models": names, "note": note} for note, names in notes.items()]


@cached_page()
def fit(request: HttpRequest) -> HttpResponse:
    specs = list(hardware_spec_list())
    form = FitForm(request.GET or None, hardware_specs=specs)
    result = None
    if form.is_valid():
        result = fit_as_dict(form.fit_input, calculate(form.fit_input))
    by_slug = {spec.slug: spec for spec in specs}
    return _render_form_page(
        request, "recommend/fit.html", form, result, presets=_preset_rows(), preset_notes=_preset_notes(),
        weight_formats=WEIGHT_FORMATS,
        max_devices=MAX_DEVICES_SUGGESTED, overhead_source=ENGINE_RESERVED_SOURCE, offload_source=LLAMA_CPP_OFFLOAD,
        apple_working_set_source=APPLE_WORKING_SET_SOURCE, apple_working_set_default_source=APPLE_WORKING_SET_DEFAULT_SOURCE,
        apple_wired_limit_source=APPLE_WIRED_LIMIT_SOURCE, llama_cpp_multi_gpu=LLAMA_CPP_MULTI_GPU,
        tensor_parallel_source=VLLM_TENSOR_PARALLEL_RULE, gpt_oss_card=GPT_OSS_MODEL_CARD,
        engine_guide=answer_sources(keys={ENGINE_GUIDE}).get(ENGINE_GUIDE),
        rule_of_thumb=rule_of_thumb_24gb(by_slug.get(RULE_OF_THUMB_CARD)),
        specs=specs, page_sources=sources_by_title(spec.source for spec in specs),
    )


@cached_page()
def break_even(request: HttpRequest) -> HttpResponse:
    models = priced_models()
    form = BreakEvenForm(request.GET or None, models=models, hardware=hardware_spec_list())
    result = None
    if form.is_valid():
        data = form.cleaned_data
        providers = provider_costs(form.workload, token_prices(model=data["model"]))
        offers = gpu_prices() + ([own_gpu_price(data["own_gpu_usd_per_hour"])] if data.get("own_gpu_usd_per_hour")
                                 else [])
        gpus = gpu_costs(form.workload, offers, gpu_count=data["gpu_count"], providers=providers)
        result = break_even_as_dict(form.workload, providers, gpus)
        result["model_name"] = form.names[data["model"]]
        result["carrying"] = break_even_evidence(
            model=data["model"], hardware=data["hardware"], gpu_count=data["gpu_count"],
            own_gpu_usd_per_hour=data.get("own_gpu_usd_per_hour"), max_ttft_ms=data.get("max_ttft_ms"),
            min_tokens_per_user=data.get("min_tokens_per_user"), workload=form.workload, providers=providers)
        # The API has no default volumes: its link states the ones this answer used.
        result["api_query"] = urlencode({**{name: value for name, value in request.GET.items() if value != ""},
                                         "input_tokens_per_day": form.workload.input_tokens_per_day,
                                         "output_tokens_per_day": form.workload.output_tokens_per_day})
    return _render_form_page(request, "recommend/break_even.html", form, result, models=models)
