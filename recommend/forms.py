"""GET forms for the wizard, the fit calculator and the break-even view; each turns valid input into scoring values."""
from __future__ import annotations

from django import forms

from recommend.wizard import DEFAULT_MODEL, device_choices, hardware_resolve, model_choices
from scoring import profile as choices
from scoring.breakeven import Workload
from scoring.errors import InputError
from scoring.fit import KV_CACHE_BYTES, MODEL_PRESETS, MODEL_PRESETS_BY_SLUG, WEIGHT_FORMATS, WEIGHT_FORMATS_BY_SLUG
from scoring.fit import FitInput
from scoring.profile import Profile

CUSTOM = "custom"

# What a break-even answer starts from when the visitor has not said: shared by the form and the wizard's links.
BREAK_EVEN_DEFAULTS = {"input_tokens_per_day": 50_000_000, "output_tokens_per_day": 10_000_000, "utilisation": 50,
                       "gpu_count": 1}


class WizardForm(forms.Form):
    # The guide's fourth question has two answers; the page groups them under one numbered legend.
    CONTEXT_QUESTION = "4. Which context length and concurrency matter?"

    hardware = forms.ChoiceField(
        label="1. What hardware do you actually have?",
        choices=lambda: [("Kinds of hardware", choices.HARDWARE_CHOICES),
                         ("A device from the catalog (say how many below)", device_choices())],
    )
    gpu_count = forms.IntegerField(
        label="How many of them?", min_value=1, max_value=choices.MAX_DEVICES, required=False,
        help_text="For a device from the catalog: 1 unless you say otherwise.",
    )
    fits_fast_memory = forms.ChoiceField(
        label="2. Does the model fit in fast memory, or only in system / unified memory?",
        choices=choices.FITS_FAST_MEMORY_CHOICES, initial="unknown", required=False,
    )
    bottleneck = forms.ChoiceField(label="3. Is decode or prefill the bottleneck?",
                                   choices=choices.BOTTLENECK_CHOICES, initial="unknown", required=False)
    context_tokens = forms.IntegerField(label="Context length (tokens)", min_value=1,
                                        max_value=choices.MAX_CONTEXT_TOKENS, initial=8192, required=False)
    concurrency = forms.IntegerField(label="Requests at the same time", min_value=1,
                                     max_value=choices.MAX_CONCURRENCY, initial=1, required=False)
    shared_prefixes = forms.BooleanField(label="5. Prompts share long prefixes (prefix caching pays off)",
                                         required=False)
    architecture = forms.ChoiceField(label="6. Is the model dense, MoE, multimodal or hybrid?",
                                     choices=choices.ARCHITECTURE_CHOICES, initial="dense", required=False)
    deployment = forms.ChoiceField(label="7. Local convenience, production serving or fleet orchestration?",
                                   choices=choices.DEPLOYMENT_CHOICES, initial="local", required=False)
    quantization = forms.ChoiceField(label="8. Which quantization format do you need optimized kernels for?",
                                     choices=choices.QUANTIZATION_CHOICES, initial="any", required=False)
    interconnect = forms.ChoiceField(label="9. What is your interconnect?", choices=choices.INTERCONNECT_CHOICES,
                                     initial="none", required=False)
    optimize_for = forms.ChoiceField(label="10. What are you optimizing?", choices=choices.OPTIMIZE_FOR_CHOICES,
                                     initial="latency", required=False)
    hosted_ok = forms.BooleanField(label="May it be a hosted API? (leave unticked if it must stay on-premises)",
                                   required=False)
    needs = forms.MultipleChoiceField(label="Which API features must work? (OpenAI request parameters)",
                                      choices=choices.NEEDS_CHOICES,
                                      widget=forms.CheckboxSelectMultiple, required=False)
    model = forms.ChoiceField(
        label="Which model will you serve?", required=False,
        choices=lambda: [("", f"Not chosen ({DEFAULT_MODEL}, the model every provider prices)")] + model_choices(),
        help_text="The answer cites published engine benchmarks for it on your hardware and carries it to the fit, "
        "break-even and cost answers; the ranking does not depend on it.",
    )
    input_tokens_per_day = forms.IntegerField(label="Input tokens per day", min_value=0, max_value=10**13,
                                              initial=BREAK_EVEN_DEFAULTS["input_tokens_per_day"], required=False)
    output_tokens_per_day = forms.IntegerField(label="Output tokens per day", min_value=0, max_value=10**13,
                                               initial=BREAK_EVEN_DEFAULTS["output_tokens_per_day"], required=False)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        defaults = {name: field.initial for name, field in self.fields.items()}
        values = {
            name: (data.get(name) if data.get(name) not in (None, "") else defaults[name])
            for name in ("fits_fast_memory", "bottleneck", "context_tokens", "concurrency", "architecture",
                         "deployment", "quantization", "interconnect", "optimize_for")
        }
        try:
            self.hardware = hardware_resolve(hardware=data["hardware"], gpu_count=data.get("gpu_count"))
            self.profile = Profile(
                hardware=self.hardware.answer, devices=self.hardware.count,
                shared_prefixes=bool(data.get("shared_prefixes")), hosted_ok=bool(data.get("hosted_ok")),
                needs=tuple(data.get("needs") or ()), **values,
            )
        except InputError as exc:
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return data

    @property
    def volumes(self) -> dict:
        """The token volumes the break-even link carries: the visitor's, else the break-even defaults."""
        return {name: self.cleaned_data.get(name) if self.cleaned_data.get(name) is not None
                else BREAK_EVEN_DEFAULTS[name] for name in ("input_tokens_per_day", "output_tokens_per_day")}


def _preset_choices():
    return [(CUSTOM, "Custom (enter the numbers below)")] + [(preset.slug, preset.name) for preset in MODEL_PRESETS]


NATIVE = ""


def native_format_for(model: str | None) -> str:
    """The format a preset model is published in; empty for a custom model, which has none to assume."""
    preset = MODEL_PRESETS_BY_SLUG.get(model or "")
    return preset.native_format if preset else NATIVE


class FitForm(forms.Form):
    model = forms.ChoiceField(label="Model preset", choices=_preset_choices, initial=DEFAULT_MODEL,
                              required=False)
    params_b = forms.FloatField(label="Total parameters (billions)", min_value=0.001, max_value=10_000,
                                required=False)
    active_params_b = forms.FloatField(label="Active parameters per token (billions, MoE only)", min_value=0.001,
                                       max_value=10_000, required=False)
    layers = forms.IntegerField(label="Layers", min_value=1, max_value=1000, required=False)
    attention_heads = forms.IntegerField(
        label="Attention heads", min_value=1, max_value=4096, required=False,
        help_text="num_attention_heads in config.json: tensor parallelism must divide it.",
    )
    kv_heads = forms.IntegerField(label="KV heads", min_value=1, max_value=1024, required=False)
    head_dim = forms.IntegerField(label="Head dimension", min_value=1, max_value=4096, required=False)
    weight_format = forms.ChoiceField(
        label="Weight format",
        choices=[(NATIVE, "As published (the model's own format)")]
        + [(fmt.slug, f"{fmt.name} ({fmt.bits_per_weight:g} bits/weight)") for fmt in WEIGHT_FORMATS],
        initial=NATIVE, required=False,
    )
    context_tokens = forms.IntegerField(label="Context length (tokens)", min_value=1, max_value=10_000_000,
                                        required=False,
                                        help_text="Empty: 8,192 tokens, or the model's maximum if that is shorter.")
    concurrency = forms.IntegerField(label="Concurrent sequences", min_value=1, max_value=100_000, initial=1,
                                     required=False)
    kv_cache = forms.ChoiceField(label="KV-cache precision",
                                 choices=[(slug, label) for slug, (label, _) in KV_CACHE_BYTES.items()],
                                 initial="fp16", required=False)
    hardware = forms.ChoiceField(label="Hardware preset", choices=(), required=False)
    memory_gib = forms.FloatField(label="Memory per device (GiB)", min_value=0.1, max_value=100_000, required=False,
                                  help_text='As cards are sold: "24 GB" of VRAM is 24 GiB.')
    bandwidth_gb_s = forms.FloatField(label="Memory bandwidth per device (GB/s)", min_value=0.1,
                                      max_value=1_000_000, required=False)
    devices = forms.IntegerField(label="Number of devices", min_value=1, max_value=4096, initial=1, required=False)
    system_bandwidth_gb_s = forms.FloatField(
        label="System memory bandwidth (GB/s, for a CPU+GPU split)", min_value=0.1, max_value=100_000,
        required=False,
        help_text="Optional: prices the llama.cpp offload option when the model does not fit. Dual-channel "
        "DDR5-5600 moves 5,600 MT/s × 8 bytes × 2 channels = 89.6 GB/s.",
    )

    def __init__(self, data=None, *args, hardware_specs=(), **kwargs):
        if data is not None and not data.get("weight_format"):
            # No format sent: the preset's published one, selected in the redisplayed form too.
            data = data.copy()
            data["weight_format"] = native_format_for(data.get("model") or CUSTOM)
        super().__init__(data, *args, **kwargs)
        self.specs = {spec.slug: spec for spec in hardware_specs}
        self.fields["hardware"].choices = [(CUSTOM, "Custom (enter memory and bandwidth)")] + [
            (spec.slug, f"{spec.name} ({float(spec.memory_gb):g} GiB, {float(spec.bandwidth_gb_s):,g} GB/s)")
            for spec in hardware_specs
        ]
        self.fields["hardware"].initial = next(iter(self.specs), CUSTOM)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.fit_input = fit_input_from(data, specs=self.specs)
        except InputError as exc:
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return data


DEFAULT_CONTEXT_TOKENS = 8192
GEOMETRY = ("params_b", "layers", "kv_heads", "head_dim")


def fit_input_from(data: dict, *, specs: dict) -> FitInput:
    """Fill model and hardware numbers from the chosen presets unless given, then validate them together."""
    values = dict(data)
    errors: dict[str, str] = {}
    preset = MODEL_PRESETS_BY_SLUG.get(values.get("model") or "")
    for name in GEOMETRY:
        if values.get(name) is None:
            if preset:
                values[name] = getattr(preset, name)
            else:
                errors[name] = "Required for a custom model."
    if values.get("attention_heads") is None and preset:
        values["attention_heads"] = preset.attention_heads
    # Preset-only facts hold while the preset's own geometry is used.
    as_preset = preset is not None and all(values.get(name) == getattr(preset, name) for name in GEOMETRY)
    if values.get("active_params_b") is None and as_preset:
        values["active_params_b"] = preset.active_params_b
    weight_format = values.get("weight_format") or native_format_for(values.get("model"))
    if not weight_format:
        errors["weight_format"] = "Choose the weight format: a custom model has no published format to assume."
    spec = specs.get(values.get("hardware") or "")
    if values.get("hardware") not in (None, "", CUSTOM) and spec is None:
        errors["hardware"] = f"Unknown hardware preset {values.get('hardware')!r}."
    for name, spec_field in (("memory_gib", "memory_gb"), ("bandwidth_gb_s", "bandwidth_gb_s")):
        if values.get(name) is None:
            if spec:
                values[name] = float(getattr(spec, spec_field))
            else:
                errors[name] = "Required for custom hardware."
    if errors:
        raise InputError(errors)
    max_context = preset.max_context_tokens if as_preset else None
    native = as_preset and preset.native_format == weight_format
    return FitInput(
        params_b=values["params_b"], active_params_b=values.get("active_params_b"), layers=values["layers"],
        kv_heads=values["kv_heads"], head_dim=values["head_dim"], attention_heads=values.get("attention_heads"),
        bits_per_weight=WEIGHT_FORMATS_BY_SLUG[weight_format].bits_per_weight,
        weight_format=weight_format, native_format=preset.native_format if as_preset else "",
        context_tokens=values.get("context_tokens") or min(DEFAULT_CONTEXT_TOKENS, max_context or DEFAULT_CONTEXT_TOKENS),
        concurrency=values.get("concurrency") or 1,
        memory_gib=values["memory_gib"], bandwidth_gb_s=values["bandwidth_gb_s"], devices=values.get("devices") or 1,
        unified_memory=bool(spec and spec.is_unified_memory),
        kv_bytes_per_element=KV_CACHE_BYTES[values.get("kv_cache") or "fp16"][1],
        kv_latent_dim=preset.kv_latent_dim if as_preset else None,
        shared_params_b=preset.shared_params_b if as_preset else None,
        shared_bits_per_weight=preset.shared_bits_per_weight if native else None,
        active_expert_params_b=preset.active_expert_params_b if as_preset else None,
        moe_layers=preset.moe_layers if as_preset else None,
        max_context_tokens=max_context, model_name=preset.name if as_preset else "",
        system_bandwidth_gb_s=values.get("system_bandwidth_gb_s"),
        sliding_window=preset.sliding_window if as_preset else None,
        sliding_layers=preset.sliding_layers if as_preset else 0,
        linear_layers=preset.linear_layers if as_preset else 0,
        linear_state_elements=preset.linear_state_elements if as_preset else 0,
        gpu_generation=spec.generation if spec else "",
        caveats=(preset.note,) if as_preset and preset.note else (),
    )


OWN_GPU_PRICE_LIMITS = {"min_value": 0.01, "max_value": 10_000}
# The GPU the cost and break-even answers read the evidence for until the visitor picks another: the one the most
# published benchmarks ran on.
DEFAULT_COST_HARDWARE = "nvidia-h100-sxm"


class BreakEvenForm(forms.Form):
    # Left out, every field takes the API's defaults (the most widely priced model, 50 % and one GPU), so a link
    # naming only the model is an answer, not an error.
    input_tokens_per_day = forms.IntegerField(label="Input tokens per day", min_value=0, max_value=10**13,
                                              initial=BREAK_EVEN_DEFAULTS["input_tokens_per_day"], required=False)
    output_tokens_per_day = forms.IntegerField(label="Output tokens per day", min_value=0, max_value=10**13,
                                               initial=BREAK_EVEN_DEFAULTS["output_tokens_per_day"], required=False)
    model = forms.ChoiceField(label="Model (priced per token by the providers)", choices=(), required=False)
    utilisation = forms.IntegerField(label="Busy share of the day the GPUs may use (%)", min_value=1,
                                     max_value=100, initial=BREAK_EVEN_DEFAULTS["utilisation"], required=False)
    gpu_count = forms.IntegerField(label="Dedicated GPUs", min_value=1, max_value=4096,
                                   initial=BREAK_EVEN_DEFAULTS["gpu_count"], required=False)
    own_gpu_usd_per_hour = forms.FloatField(
        label="Your own GPU price per hour (USD, optional)", required=False, **OWN_GPU_PRICE_LIMITS,
        help_text="What one GPU costs you per hour; compared beside the catalog's offers as your figure.",
    )
    # Whether that hardware carries the volume at a latency target, from the evidence (recommend.cost).
    hardware = forms.ChoiceField(label="GPU the evidence is read for", choices=(), required=False)
    max_ttft_ms = forms.FloatField(label="Time to first token p50 at most (ms, optional)", required=False,
                                   min_value=0.001)
    min_tokens_per_user = forms.FloatField(label="Tokens/s per user at least (optional)", required=False,
                                           min_value=0.001)

    def __init__(self, data=None, *args, models=(), hardware=(), **kwargs):
        if data is not None:
            # A link that names only some fields shows the defaults it was answered with in the others.
            data = data.copy()
            for name, value in BREAK_EVEN_DEFAULTS.items():
                data.setdefault(name, str(value))
        super().__init__(data, *args, **kwargs)
        self.fields["model"].choices = [
            (model.slug, f"{model.name} ({model.providers} provider{'s' if model.providers != 1 else ''})")
            for model in models
        ]
        self.names = {model.slug: model.name for model in models}
        self.fields["hardware"].choices = [(spec.slug, spec.name) for spec in hardware]
        self.fields["hardware"].initial = DEFAULT_COST_HARDWARE
        if models:
            self.fields["model"].initial = models[0].slug

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        for name in ("input_tokens_per_day", "output_tokens_per_day", "utilisation", "gpu_count"):
            if data.get(name) is None:
                data[name] = BREAK_EVEN_DEFAULTS[name]
        data["model"] = data.get("model") or self.fields["model"].initial
        data["hardware"] = data.get("hardware") or DEFAULT_COST_HARDWARE
        if not data["model"]:
            self.add_error("model", "No provider prices a model per token: load the catalog first.")
            return data
        try:
            self.workload = Workload(
                input_tokens_per_day=data["input_tokens_per_day"], output_tokens_per_day=data["output_tokens_per_day"],
                utilisation=data["utilisation"] / 100,
            )
        except InputError as exc:
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return data
