"""Read-only API for recommendations, the fit calculator and the break-even view (one view per operation), each
answer kept in the page cache until the data generation moves, as the pages are."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.apis import query_params
from core.cache import cached_get
from lab.evidence import FIGURE_NAMES
from recommend.cost import break_even_evidence
from recommend.evidence import first_engine, published_evidence
from recommend.forms import BREAK_EVEN_DEFAULTS, CUSTOM, DEFAULT_COST_HARDWARE, OWN_GPU_PRICE_LIMITS, fit_input_from
from recommend.presenters import break_even_as_dict, fit_as_dict, recommendation_as_dict
from recommend.selectors import (
    catalog_data,
    gpu_prices,
    hardware_spec_list,
    priced_model_find,
    priced_models,
    token_prices,
)
from recommend.wizard import calculator_links, hardware_resolve, model_resolve
from scoring import profile as choices
from scoring.breakeven import Workload, gpu_costs, own_gpu_price, provider_costs
from scoring.cost import Slo
from scoring.errors import InputError
from scoring.fit import KV_CACHE_BYTES, MODEL_PRESETS, WEIGHT_FORMATS, calculate
from scoring.profile import Profile
from scoring.ranking import recommend


def _field_errors(errors: dict[str, str]) -> serializers.ValidationError:
    return serializers.ValidationError({name: [message] for name, message in errors.items()})


class SourceSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField(allow_blank=True)
    verified_on = serializers.CharField(allow_null=True)


class ReasonSerializer(serializers.Serializer):
    text = serializers.CharField()
    rule = serializers.CharField(help_text="The rule or measurement behind the reason, e.g. recipe:mac:mlx.")
    source = SourceSerializer(allow_null=True)


class RankedToolSerializer(serializers.Serializer):
    tool = serializers.SlugField()
    name = serializers.CharField()
    kind = serializers.CharField()
    score = serializers.FloatField(help_text="Comparable among tools of the same kind.")
    rank = serializers.IntegerField(help_text="Rank among tools of the same kind; tied tools share it.")
    tied = serializers.BooleanField(help_text="Another tool of the same kind has the same score.")
    companion = serializers.CharField(
        allow_blank=True, help_text="Orchestration layer recommended together with this engine, if any."
    )
    reasons = ReasonSerializer(many=True)
    lost_because = serializers.CharField(allow_blank=True, help_text="Why it ranks below the one above it.")
    named_by_guide = serializers.BooleanField(
        help_text="False for engines that merely run on the hardware: the guide's recipe does not name them."
    )


class CaveatSerializer(serializers.Serializer):
    title = serializers.CharField()
    body = serializers.CharField()
    severity = serializers.CharField()
    source = SourceSerializer(allow_null=True)


class ExcludedToolSerializer(serializers.Serializer):
    tool = serializers.SlugField()
    name = serializers.CharField()
    kind = serializers.CharField()
    reasons = ReasonSerializer(many=True)
    caveats = CaveatSerializer(many=True)


class WarningSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    source = SourceSerializer(allow_null=True)
    where = serializers.CharField()


class SwitchOptionSerializer(serializers.Serializer):
    tool = serializers.SlugField()
    name = serializers.CharField()
    companion_name = serializers.CharField(help_text="The engine an orchestration layer runs on, if any.")
    when = serializers.CharField(help_text='The changed answer, worded to follow "switch to <name> when".')
    adds_companion = serializers.BooleanField(help_text="True when the other pick is the same engine with "
                                              "`companion_name` on top: add it rather than switch.")


class EvidenceFigureSerializer(serializers.Serializer):
    engine = serializers.CharField()
    engine_slug = serializers.CharField()
    version = serializers.CharField(help_text="The engine version the publisher names; empty when not stated.")
    setup = serializers.CharField(help_text="The flags that set this run apart from the same engine's others.")
    flags = serializers.ListField(child=serializers.CharField(), help_text="How this run's setup differs from the "
                                  "comparison's others: parallelism, DP attention, EP, speculative decoding, an "
                                  "output length left to the engine.")
    figure = serializers.FloatField(help_text="The comparison's ranking figure (its `figure`) for this engine.")
    output_tps_per_gpu = serializers.FloatField(allow_null=True)
    tps_per_user = serializers.FloatField(allow_null=True, help_text="1000 / the median (else mean) TPOT.")
    load = serializers.CharField()
    publisher = serializers.CharField()
    url = serializers.CharField()
    observed_on = serializers.CharField(allow_null=True, help_text="The publisher's date (the run's date when measured "
                                        "here); null when none could be established.")
    dated_by = serializers.CharField(help_text="Where a published figure's observed_on comes from: page, commit, "
                                     "dataset or unknown; empty when measured here.")
    newer_release = serializers.CharField(help_text="Set when a newer release of the engine than the one run exists.")
    measured_here = serializers.BooleanField()


class PublishedEvidenceSerializer(serializers.Serializer):
    model = serializers.CharField()
    model_slug = serializers.CharField()
    hardware = serializers.CharField()
    hardware_slug = serializers.CharField()
    hardware_count = serializers.IntegerField()
    weight_format = serializers.CharField()
    workload = serializers.CharField()
    mode = serializers.CharField(help_text="How the load was sent: concurrency, request_rate, burst or offline.")
    figure = serializers.ChoiceField(choices=list(FIGURE_NAMES), help_text="The one figure the "
                                     "comparison ranks by: the publisher's headline (GPUStack: total tok/s), else "
                                     "output tok/s per GPU.")
    figure_name = serializers.CharField()
    same_load = serializers.BooleanField(help_text="Every engine's figure is at `load`; otherwise each is at its "
                                         "own best load and none is ranked.")
    load = serializers.CharField()
    figures = EvidenceFigureSerializer(many=True)
    leader = serializers.CharField(help_text="The engine ranked first by `figure` at the shared load, if any.")
    disagreement = serializers.CharField(help_text="Set when the leader is not the engine the guide picked.")


class LinksSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="The catalog model the links carry.")
    hardware = serializers.CharField(help_text="The catalog device they carry: yours, or the one your answer's "
                                     "recipe names, or one H100 when your answer has none.")
    gpu_count = serializers.IntegerField()
    fit = serializers.CharField(allow_blank=True, help_text="Empty when the fit calculator has no geometry for "
                                "the model or the catalog lacks the device.")
    fit_missing_model = serializers.BooleanField(help_text="True when the calculator has no geometry for the model.")
    break_even = serializers.CharField(allow_blank=True, help_text="Carries the model when a provider prices it, "
                                       "else the most widely priced one, and your token volumes.")
    cost = serializers.CharField(allow_blank=True)


class RecommendationSerializer(serializers.Serializer):
    results = RankedToolSerializer(many=True, help_text="Best first: engines, then hosted providers (providers "
                                   "first when hardware is 'none').")
    warnings = WarningSerializer(many=True)
    not_recommended = ExcludedToolSerializer(many=True, help_text="Listed by a source, never recommended here.")
    excluded = ExcludedToolSerializer(many=True, help_text="Removed by a hard constraint, with the reason.")
    reference_model = serializers.CharField(allow_null=True, help_text="Model whose prices compare providers.")
    provider_evidence = serializers.ChoiceField(
        choices=["measured", "reported", "documented"], allow_null=True,
        help_text="What ranked the hosted providers' speed: this site's measurements, figures reported by a named "
        "publisher, or documented facts (one tier per answer, never mixed).",
    )
    provider_evidence_note = serializers.CharField(
        allow_null=True, help_text="The same in one sentence, naming the publisher and dates of reported figures.",
    )
    latency_metric = serializers.CharField(
        allow_null=True, help_text="The one latency the providers were ranked on (time to first token, or to the "
        "first answer token where the publisher reports that), the same for every provider.",
    )
    switch_when = SwitchOptionSerializer(
        many=True, help_text="Other picks and the single changed answer that would make each the first.",
    )
    published_evidence = PublishedEvidenceSerializer(
        many=True, help_text="Published comparisons of several engines for `model` (or gpt-oss-120b) on the device "
        "you named (your count first) or on the devices of your hardware answer, each figure with its publisher, "
        "dates and engine version. Never part of the ranking.",
    )
    hardware = serializers.CharField(help_text="The hardware answer the rules ran on (a device implies one).")
    hardware_label = serializers.CharField(help_text="Your hardware in words: the answer, or '1× NVIDIA H100 SXM'.")
    links = LinksSerializer(help_text="The fit, break-even and cost answers for the same model, device and count.")


class CheckNamesField(serializers.ListField):
    """A list of compat check names; unknown names are reported once, against the parameter itself."""

    def run_child_validation(self, data):
        allowed = choices.values_of(choices.NEEDS_CHOICES)
        unknown = [value for value in data if value not in allowed]
        if unknown:
            raise serializers.ValidationError(
                f"Unknown check names: {', '.join(map(str, unknown))}. Allowed: {', '.join(allowed)}."
            )
        return super().run_child_validation(data)


class RecommendationQuerySerializer(serializers.Serializer):
    hardware = serializers.CharField(
        max_length=80, help_text="One of the wizard's answers (" + ", ".join(choices.HARDWARE_CLASSES_BY_SLUG)
        + ") or a device slug from /api/v1/hardware/specs/ (for example nvidia-h100-sxm, apple-m3-ultra).",
    )
    gpu_count = serializers.IntegerField(min_value=1, max_value=choices.MAX_DEVICES, required=False,
                                         help_text="How many of the device; default 1.")
    fits_fast_memory = serializers.ChoiceField(choices=choices.FITS_FAST_MEMORY_CHOICES, default="unknown")
    bottleneck = serializers.ChoiceField(choices=choices.BOTTLENECK_CHOICES, default="unknown")
    context_tokens = serializers.IntegerField(min_value=1, max_value=choices.MAX_CONTEXT_TOKENS, default=8192)
    concurrency = serializers.IntegerField(min_value=1, max_value=choices.MAX_CONCURRENCY, default=1)
    shared_prefixes = serializers.BooleanField(default=False)
    architecture = serializers.ChoiceField(choices=choices.ARCHITECTURE_CHOICES, default="dense")
    deployment = serializers.ChoiceField(choices=choices.DEPLOYMENT_CHOICES, default="local")
    quantization = serializers.ChoiceField(choices=choices.QUANTIZATION_CHOICES, default="any")
    interconnect = serializers.ChoiceField(choices=choices.INTERCONNECT_CHOICES, default="none")
    optimize_for = serializers.ChoiceField(choices=choices.OPTIMIZE_FOR_CHOICES, default="latency")
    hosted_ok = serializers.BooleanField(default=False, help_text="May the model run on a hosted API?")
    needs = CheckNamesField(
        child=serializers.ChoiceField(choices=choices.NEEDS_CHOICES), default=list,
        help_text="Compatibility checks that must work (repeat the parameter or separate with commas).",
    )
    model = serializers.SlugField(
        required=False, help_text="Any catalog model's slug (/api/v1/models/); default gpt-oss-120b. The answer "
        "cites published engine benchmarks for it and its links carry it.",
    )
    input_tokens_per_day = serializers.IntegerField(min_value=0, max_value=10**13,
                                                    default=BREAK_EVEN_DEFAULTS["input_tokens_per_day"])
    output_tokens_per_day = serializers.IntegerField(min_value=0, max_value=10**13,
                                                     default=BREAK_EVEN_DEFAULTS["output_tokens_per_day"])


class RecommendationApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="recommendations",
        summary="Rank engines and hosted providers for a hardware and workload profile",
        description="The ranked answer the wizard at /recommend/ gives: each engine or provider with the reasons it "
        "ranks where it does, the ones left out and why, warnings, and the published benchmarks for `model` on that "
        "hardware. Unknown values answer 400 naming the parameter.",
        parameters=[RecommendationQuerySerializer],
        responses={200: RecommendationSerializer},
    )
    @cached_get
    def get(self, request: Request) -> Response:
        values = query_params(RecommendationQuerySerializer, request, lists=("needs",))
        volumes = {name: values.pop(name) for name in ("input_tokens_per_day", "output_tokens_per_day")}
        values["needs"] = tuple(values["needs"])
        try:
            model = model_resolve(values.pop("model", None))
            hardware = hardware_resolve(hardware=values.pop("hardware"), gpu_count=values.pop("gpu_count", None))
            profile = Profile(**values, hardware=hardware.answer, devices=hardware.count)
        except InputError as exc:
            raise _field_errors(exc.errors) from exc
        answer = recommendation_as_dict(recommend(profile, catalog_data()))
        answer["published_evidence"] = published_evidence(
            hardware=hardware, model=model, picked_engine=first_engine(answer["results"]),
        )
        answer.update(hardware=hardware.answer, hardware_label=hardware.label,
                      links=calculator_links(profile=profile, hardware=hardware, model=model, volumes=volumes))
        return Response(answer)


class FitQuerySerializer(serializers.Serializer):
    model = serializers.ChoiceField(
        choices=[CUSTOM] + [preset.slug for preset in MODEL_PRESETS], default=CUSTOM,
        help_text="A preset fills the model numbers below unless you give them.",
    )
    params_b = serializers.FloatField(min_value=0.001, max_value=10_000, required=False)
    active_params_b = serializers.FloatField(min_value=0.001, max_value=10_000, required=False,
                                             help_text="MoE: parameters read per token.")
    layers = serializers.IntegerField(min_value=1, max_value=1000, required=False)
    kv_heads = serializers.IntegerField(min_value=1, max_value=1024, required=False)
    head_dim = serializers.IntegerField(min_value=1, max_value=4096, required=False)
    attention_heads = serializers.IntegerField(
        min_value=1, max_value=4096, required=False,
        help_text="num_attention_heads; suggested tensor-parallel sizes divide it (a preset fills it).",
    )
    weight_format = serializers.ChoiceField(
        choices=[fmt.slug for fmt in WEIGHT_FORMATS], required=False,
        help_text="Default: the preset's published format (MXFP4 for gpt-oss, FP8 for DeepSeek-V3, BF16 for "
        "Llama and Qwen3); required for a custom model.",
    )
    context_tokens = serializers.IntegerField(
        min_value=1, max_value=10_000_000, required=False,
        help_text="Default 8192, or the preset's maximum if shorter; beyond a preset's maximum is a 400.",
    )
    concurrency = serializers.IntegerField(min_value=1, max_value=100_000, default=1)
    kv_cache = serializers.ChoiceField(choices=list(KV_CACHE_BYTES), default="fp16")
    hardware = serializers.SlugField(default=CUSTOM, help_text="A hardware spec slug from the catalog, or custom.")
    memory_gib = serializers.FloatField(min_value=0.1, max_value=100_000, required=False,
                                        help_text="Memory per device in GiB (2^30 bytes), as cards are sold.")
    bandwidth_gb_s = serializers.FloatField(min_value=0.1, max_value=1_000_000, required=False)
    devices = serializers.IntegerField(min_value=1, max_value=4096, default=1)
    system_bandwidth_gb_s = serializers.FloatField(
        min_value=0.1, max_value=100_000, required=False,
        help_text="Host memory bandwidth; prices the llama.cpp CPU+GPU split when the model does not fit.",
    )


class FitInputSerializer(serializers.Serializer):
    params_b = serializers.FloatField()
    layers = serializers.IntegerField()
    attention_heads = serializers.IntegerField(allow_null=True)
    kv_heads = serializers.IntegerField()
    head_dim = serializers.IntegerField()
    bits_per_weight = serializers.FloatField()
    context_tokens = serializers.IntegerField()
    concurrency = serializers.IntegerField()
    memory_gib = serializers.FloatField()
    bandwidth_gb_s = serializers.FloatField()
    devices = serializers.IntegerField()
    kv_bytes_per_element = serializers.FloatField()
    active_params_b = serializers.FloatField(allow_null=True)
    kv_latent_dim = serializers.IntegerField(allow_null=True, help_text="Multi-head latent attention width.")
    shared_params_b = serializers.FloatField(allow_null=True, help_text="Weights outside the quantized experts.")
    shared_bits_per_weight = serializers.FloatField(allow_null=True)
    max_context_tokens = serializers.IntegerField(allow_null=True, help_text="The preset model's own maximum.")
    model_name = serializers.CharField()
    system_bandwidth_gb_s = serializers.FloatField(allow_null=True)
    active_expert_params_b = serializers.FloatField(allow_null=True, help_text="MoE: routed-expert parameters "
                                                    "one token reads.")
    moe_layers = serializers.IntegerField(allow_null=True, help_text="MoE: layers that carry routed experts.")
    unified_memory = serializers.BooleanField()
    weight_format = serializers.CharField()
    weight_format_name = serializers.CharField()
    native_format = serializers.CharField(help_text="The preset's published format; empty for a custom model.")
    sliding_window = serializers.IntegerField(allow_null=True, help_text="Tokens a sliding-window layer attends.")
    sliding_layers = serializers.IntegerField(help_text="Layers that attend only the sliding window.")
    linear_layers = serializers.IntegerField(help_text="Linear-attention layers (constant state per sequence).")
    linear_state_elements = serializers.IntegerField(help_text="One linear layer's state per sequence.")
    gpu_generation = serializers.CharField(help_text="The device's GPU generation; empty for custom hardware.")
    caveats = serializers.ListField(child=serializers.CharField(),
                                    help_text="What the model's own architecture means for these figures.")


class FormatOptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    bits_per_weight = serializers.FloatField()
    total_gib = serializers.FloatField()


class OffloadSerializer(serializers.Serializer):
    gpu_layers = serializers.IntegerField(help_text="Layers that stay on the GPUs (llama.cpp --n-gpu-layers).")
    layers = serializers.IntegerField()
    system_memory_gib = serializers.FloatField(help_text="Weights and KV cache left in system memory.")
    decode_ceiling_tps = serializers.FloatField(allow_null=True)
    slowdown = serializers.FloatField(allow_null=True, help_text="Split ceiling against the all-GPU one.")


class ExpertOffloadSerializer(serializers.Serializer):
    n_cpu_moe = serializers.IntegerField(help_text="llama.cpp --n-cpu-moe: the first N layers keep their routed "
                                         "experts in system memory.")
    expert_layers_on_cpu = serializers.IntegerField()
    moe_layers = serializers.IntegerField()
    all_experts_on_cpu = serializers.BooleanField(help_text="True when --cpu-moe (every expert) is needed.")
    gpu_memory_gib = serializers.FloatField()
    system_memory_gib = serializers.FloatField(help_text="Routed-expert weights kept in system memory.")
    gpu_bytes_per_token_gb = serializers.FloatField()
    system_bytes_per_token_gb = serializers.FloatField(help_text="Active expert bytes read from system memory "
                                                       "per generated token.")
    decode_ceiling_tps = serializers.FloatField(allow_null=True, help_text="Null without system_bandwidth_gb_s.")
    gpu_only_ceiling_tps = serializers.FloatField(allow_null=True)
    system_only_ceiling_tps = serializers.FloatField(allow_null=True)


class KvCacheOptionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    total_gib = serializers.FloatField()
    headroom_gib = serializers.FloatField()


class WhatWouldFitSerializer(serializers.Serializer):
    kv_cache = KvCacheOptionSerializer(allow_null=True, help_text="Tried first: the first smaller KV-cache "
                                       "precision (FP8, then llama.cpp's Q8_0 and Q4_0) that fits.")
    kv_cache_tried = serializers.ListField(child=serializers.CharField(),
                                           help_text="Smaller KV precisions tried that do not fit either.")
    formats = FormatOptionSerializer(many=True, help_text="Smaller formats that fit: the GPU generation's own "
                                     "formats first, largest first, then llama.cpp's GGUF (one sequence only).")
    formats_not_native = serializers.ListField(child=serializers.CharField(),
                                               help_text="Smaller formats left out: no native kernels on this GPU "
                                               "generation (no NVFP4 or MXFP4 before Blackwell).")
    devices_needed = serializers.IntegerField(allow_null=True, help_text="The smallest valid tensor-parallel size "
                                              "(a power of two dividing the attention heads) that holds it.")
    offload = OffloadSerializer(allow_null=True, help_text="Dense models on one GPU: whole layers offloaded.")
    expert_offload = ExpertOffloadSerializer(allow_null=True, help_text="MoE models on one GPU: routed experts "
                                             "kept in system memory.")
    offload_ruled_out = serializers.CharField(allow_blank=True, help_text="Why no CPU offload is offered.")


class FitResultSerializer(serializers.Serializer):
    weights_gib = serializers.FloatField(help_text="All weights, every expert of an MoE included.")
    active_weights_gib = serializers.FloatField(help_text="Weights read per generated token (MoE: active only).")
    kv_per_token_bytes = serializers.FloatField(help_text="Bytes per token of context in the layers whose cache "
                                                "grows with it (full attention or latent).")
    kv_window_bytes_per_sequence = serializers.FloatField(help_text="Sliding-window layers' cache per sequence "
                                                          "once the context passes the window.")
    linear_state_bytes_per_sequence = serializers.FloatField(help_text="Linear-attention state per sequence, "
                                                             "whatever the context.")
    kv_cache_gib = serializers.FloatField()
    kv_replicas = serializers.FloatField(help_text="Copies of the KV cache tensor parallelism keeps (vLLM).")
    overhead_gib = serializers.FloatField(help_text="What is held back: 10% of each device for the engine (vLLM's "
                                          "default), or on Apple silicon the 25% outside macOS's GPU working set.")
    overhead_kind = serializers.ChoiceField(choices=["engine", "working-set"])
    total_gib = serializers.FloatField()
    capacity_gib = serializers.FloatField()
    headroom_gib = serializers.FloatField()
    fits = serializers.BooleanField()
    max_context_tokens = serializers.IntegerField(help_text="Never beyond the model's own maximum.")
    max_context_is_model_limit = serializers.BooleanField()
    max_concurrency = serializers.IntegerField()
    bytes_per_token_gb = serializers.FloatField()
    decode_ceiling_tps = serializers.FloatField(allow_null=True,
                                                help_text="Bandwidth / bytes read per token, one sequence; "
                                                "null when the model does not fit.")
    aggregate_ceiling_tps = serializers.FloatField(allow_null=True)
    layer_split_ceiling_tps = serializers.FloatField(
        allow_null=True, help_text="Several devices under llama.cpp's default layer split: one sequence decodes at "
        "one device's bandwidth. decode_ceiling_tps assumes tensor parallelism.",
    )
    is_moe = serializers.BooleanField()
    tensor_parallel_sizes = serializers.ListField(child=serializers.IntegerField(),
                                                  help_text="Device counts vLLM accepts for this model.")
    devices_valid_for_tensor_parallel = serializers.BooleanField()
    what_would_fit = WhatWouldFitSerializer(allow_null=True)


class FitSerializer(serializers.Serializer):
    input = FitInputSerializer()
    result = FitResultSerializer()


class FitApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(operation_id="fit", summary="Memory fit and decode ceiling for a model on hardware",
                   description="Whether the weights, KV cache and runtime overhead of `model` fit in the memory of "
                   "`hardware` for the context and concurrent sequences asked, the decode ceiling its memory "
                   "bandwidth allows, and what would fit instead. The same calculation as the /fit/ page.",
                   parameters=[FitQuerySerializer], responses={200: FitSerializer})
    @cached_get
    def get(self, request: Request) -> Response:
        query = query_params(FitQuerySerializer, request)
        specs = {spec.slug: spec for spec in hardware_spec_list()}
        try:
            spec = fit_input_from(query, specs=specs)
        except InputError as exc:
            raise _field_errors(exc.errors) from exc
        return Response(fit_as_dict(spec, calculate(spec)))


class BreakEvenQuerySerializer(serializers.Serializer):
    input_tokens_per_day = serializers.IntegerField(min_value=0, max_value=10**13)
    output_tokens_per_day = serializers.IntegerField(min_value=0, max_value=10**13)
    model = serializers.CharField(max_length=200, required=False,
                                  help_text="Priced model; defaults to the one most providers price.")
    utilisation = serializers.FloatField(min_value=0.01, max_value=1, default=0.5,
                                         help_text="Busy share of the day the GPUs may use (0-1].")
    gpu_count = serializers.IntegerField(min_value=1, max_value=4096, default=1)
    own_gpu_usd_per_hour = serializers.FloatField(
        required=False, **OWN_GPU_PRICE_LIMITS,
        help_text="Your own price for one GPU per hour; compared beside the catalog's offers as your figure.",
    )
    hardware = serializers.SlugField(required=False, help_text="The GPU whose evidence says whether it carries the "
                                     f"volume ({DEFAULT_COST_HARDWARE} when left out).")
    max_ttft_ms = serializers.FloatField(required=False, help_text="Target: time to first token p50 at most (ms).")
    min_tokens_per_user = serializers.FloatField(required=False, help_text="Target: tokens/s per user at least.")

    def validate(self, attrs: dict) -> dict:
        if "hardware" in attrs and attrs["hardware"] not in {spec.slug for spec in hardware_spec_list()}:
            raise serializers.ValidationError({"hardware": f'No hardware spec with the slug "{attrs["hardware"]}".'})
        try:
            Slo(max_ttft_ms=attrs.get("max_ttft_ms"), min_tokens_per_user=attrs.get("min_tokens_per_user"))
        except InputError as exc:
            raise serializers.ValidationError(exc.errors) from exc
        return attrs


class BreakEvenAssumptionsSerializer(serializers.Serializer):
    hours_per_month = serializers.IntegerField()
    utilisation = serializers.FloatField()
    note = serializers.CharField()


class BreakEvenWorkloadSerializer(serializers.Serializer):
    input_tokens_per_day = serializers.IntegerField()
    output_tokens_per_day = serializers.IntegerField()
    required_output_tokens_per_second = serializers.FloatField()
    required_input_tokens_per_second = serializers.FloatField()


class ProviderCostSerializer(serializers.Serializer):
    tool = serializers.SlugField()
    name = serializers.CharField()
    item = serializers.CharField()
    input_usd_per_mtok = serializers.FloatField()
    output_usd_per_mtok = serializers.FloatField()
    usd_per_day = serializers.FloatField()
    monthly_usd = serializers.FloatField()
    source = serializers.CharField()
    verified_on = serializers.CharField(allow_null=True)


class GpuCostSerializer(serializers.Serializer):
    tool = serializers.CharField(allow_blank=True, help_text="The tool offering the GPU; empty for your own price.")
    name = serializers.CharField()
    item = serializers.CharField()
    tier = serializers.CharField()
    usd_per_hour = serializers.FloatField()
    gpus = serializers.IntegerField()
    monthly_usd = serializers.FloatField()
    output_tokens_per_second_per_gpu = serializers.FloatField()
    input_tokens_per_second_per_gpu = serializers.FloatField()
    self_hosting_wins = serializers.BooleanField(allow_null=True)
    break_even_tokens_per_day = serializers.IntegerField(allow_null=True)
    source = serializers.CharField()
    verified_on = serializers.CharField(allow_null=True)
    user_supplied = serializers.BooleanField(help_text="True for the row of own_gpu_usd_per_hour, your figure.")


class BreakEvenSerializer(serializers.Serializer):
    model = serializers.CharField(allow_null=True, help_text="The catalog model's slug.")
    model_name = serializers.CharField(allow_null=True)
    assumptions = BreakEvenAssumptionsSerializer()
    workload = BreakEvenWorkloadSerializer()
    providers = ProviderCostSerializer(many=True, help_text="Cheapest first.")
    gpus = GpuCostSerializer(many=True, help_text="Cheapest first.")
    carrying = serializers.DictField(allow_null=True, help_text="Whether the hardware carries the volume and the "
                                     "break-even volume at the target, from the evidence; with the /cost/ link.")


class BreakEvenApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema(operation_id="break_even", summary="Per-token bills against dedicated GPUs for one workload",
                   description="What a daily token volume costs per month at each provider's per-token prices for "
                   "`model`, against renting GPUs by the hour at the utilisation given. The same calculation as "
                   "the /break-even/ page.",
                   parameters=[BreakEvenQuerySerializer], responses={200: BreakEvenSerializer})
    @cached_get
    def get(self, request: Request) -> Response:
        data = query_params(BreakEvenQuerySerializer, request)
        models = priced_models()
        model = priced_model_find(data["model"]) if data.get("model") else (models[0] if models else None)
        if data.get("model") and model is None:
            raise _field_errors({"model": f"No provider prices {data['model']!r}; priced models: "
                                          f"{', '.join(model.slug for model in models)}."})
        try:
            workload = Workload(input_tokens_per_day=data["input_tokens_per_day"],
                                output_tokens_per_day=data["output_tokens_per_day"],
                                utilisation=data["utilisation"])
        except InputError as exc:
            raise _field_errors(exc.errors) from exc
        providers = provider_costs(workload, token_prices(model=model.slug)) if model else []
        offers = gpu_prices() + ([own_gpu_price(data["own_gpu_usd_per_hour"])] if data.get("own_gpu_usd_per_hour")
                                 else [])
        gpus = gpu_costs(workload, offers, gpu_count=data["gpu_count"], providers=providers)
        carrying = break_even_evidence(
            model=model.slug, hardware=data.get("hardware", DEFAULT_COST_HARDWARE), gpu_count=data["gpu_count"],
            own_gpu_usd_per_hour=data.get("own_gpu_usd_per_hour"), max_ttft_ms=data.get("max_ttft_ms"),
            min_tokens_per_user=data.get("min_tokens_per_user"), workload=workload, providers=providers,
        ) if model else None
        return Response({"model": model.slug if model else None, "model_name": model.name if model else None,
                         **break_even_as_dict(workload, providers, gpus),
                         "carrying": carrying.as_dict() if carrying else None})
