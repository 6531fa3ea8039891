"""Does a model fit, and how fast can it decode? Memory and bandwidth arithmetic with its assumptions stated.

- Weights: parameters x bits per weight / 8. An MoE model keeps every expert in memory. Where a model is
  released with only its experts quantized (gpt-oss: experts in MXFP4, attention, router and embeddings in
  BF16), the shared weights count at their own precision.
- KV cache per token: 2 (K and V) x layers x KV heads x head dimension x bytes per element; with
  multi-head latent attention (DeepSeek-V3, Kimi K2) one compressed latent per layer instead. It grows with
  the context and with every concurrent sequence.
- Overhead: the engine keeps part of each device free for its runtime (CUDA context, graphs, activations
  outside the KV pool). vLLM's default `gpu_memory_utilization` of 0.9 leaves 10 % of every GPU unused; the
  calculator holds back the same share. Other engines reserve differently.
- Decode ceiling: each generated token reads the active weights once per batch step plus every
  sequence's KV cache, so tokens/s <= aggregate bandwidth / bytes read per token. Real engines reach a
  fraction of this ceiling; it bounds, it does not predict. When the model does not fit there is no
  ceiling to state: the weights would not be where the bandwidth is.

Capacities are binary (GiB = 2^30 bytes), as memory is built and sold ("a 24 GB card" holds 24 GiB);
bandwidth is decimal GB/s, as vendors state it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

GIB = 2**30
GB = 1e9
ENGINE_RESERVED_FRACTION = 0.10
ENGINE_RESERVED_SOURCE = "https://docs.vllm.ai/en/latest/configuration/engine_args.html"
MAX_DEVICES_SUGGESTED = 64

LLAMA_CPP_QUANTIZE_README = "https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md"
GGML_BLOCK_LAYOUT = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h"
OCP_MX_SPEC = "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"
NVFP4_BLOG = "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
AWQ_REPO = "https://github.com/mit-han-lab/llm-awq"
LLAMA_CPP_OFFLOAD = "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"
GPT_OSS_MODEL_CARD = "https://arxiv.org/abs/2508.10925"


@dataclass(frozen=True)
class WeightFormat:
    slug: str
    name: str
    bits_per_weight: float
    note: str
    source_url: str


# Effective bits per weight, scales included. K-quant mixes are the llama.cpp README's measured BPW for
# Llama 2 7B; single-type GGUF blocks follow from their byte layout.
WEIGHT_FORMATS: tuple[WeightFormat, ...] = (
    WeightFormat("bf16", "FP16 / BF16", 16.0, "Two bytes per weight.", ""),
    WeightFormat("fp8", "FP8 (E4M3)", 8.0, "One byte per weight; per-tensor scales are negligible.", ""),
    WeightFormat("int8", "INT8 (per-channel)", 8.0, "One byte per weight; per-channel scales are negligible.", ""),
    WeightFormat("int4-g128", "INT4 AWQ / GPTQ, group 128", 4.25,
                 "4 bits plus an FP16 scale and a 4-bit zero point per group of 128 weights: 4 + 20/128 ≈ 4.16, "
                 "rounded up for unquantized embeddings and norms.", AWQ_REPO),
    WeightFormat("mxfp4", "MXFP4", 4.25, "4-bit E2M1 values plus one 8-bit E8M0 scale per block of 32.", OCP_MX_SPEC),
    WeightFormat("nvfp4", "NVFP4", 4.5, "4-bit E2M1 values plus one FP8 E4M3 scale per block of 16.", NVFP4_BLOG),
    WeightFormat("q8_0", "GGUF Q8_0", 8.5, "Blocks of 32 int8 weights with one FP16 scale: 34 bytes per 32.",
                 GGML_BLOCK_LAYOUT),
    WeightFormat("q6_k", "GGUF Q6_K", 6.56, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q5_k_m", "GGUF Q5_K_M", 5.68, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q5_k_s", "GGUF Q5_K_S", 5.52, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q4_k_m", "GGUF Q4_K_M", 4.84, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q4_k_s", "GGUF Q4_K_S", 4.58, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q4_0", "GGUF Q4_0", 4.5, "Blocks of 32 4-bit weights with one FP16 scale: 18 bytes per 32.",
                 GGML_BLOCK_LAYOUT),
    WeightFormat("q3_k_m", "GGUF Q3_K_M", 3.91, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
    WeightFormat("q2_k", "GGUF Q2_K", 3.35, "llama.cpp's measured BPW for Llama 2 7B.", LLAMA_CPP_QUANTIZE_README),
)
WEIGHT_FORMATS_BY_SLUG = {fmt.slug: fmt for fmt in WEIGHT_FORMATS}

KV_CACHE_BYTES: dict[str, tuple[str, float]] = {
    "fp16": ("FP16 / BF16", 2.0),
    "fp8": ("FP8", 1.0),
    "q8_0": ("Q8_0 (llama.cpp)", 34 / 32),
    "q4_0": ("Q4_0 (llama.cpp)", 18 / 32),
}


@dataclass(frozen=True)
class ModelPreset:
    """A model's geometry as its card and config.json state it; `max_context_tokens` is what it was built for."""

    slug: str
    name: str
    params_b: float
    active_params_b: float | None
    layers: int
    kv_heads: int
    head_dim: int
    max_context_tokens: int
    source_url: str
    note: str = ""
    # Multi-head latent attention caches one latent of this width per layer and token (no K/V heads).
    kv_latent_dim: int | None = None
    # Parameters released outside the quantized experts, and the precision they keep (gpt-oss: BF16).
    shared_params_b: float | None = None
    shared_bits_per_weight: float | None = None
    native_format: str = ""


HF = "https://huggingface.co"
SLIDING_WINDOW_NOTE = "Half the layers use a 128-token sliding window, so the real KV cache is smaller than shown."
MLA_NOTE = ("Multi-head latent attention: the KV cache holds one 576-wide latent per layer and token "
            "(kv_lora_rank 512 + rope dimension 64).")

MODEL_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset("gpt-oss-20b", "gpt-oss-20b (MoE)", 20.91, 3.61, 24, 8, 64, 131_072,
                f"{HF}/openai/gpt-oss-20b/blob/main/config.json", SLIDING_WINDOW_NOTE,
                shared_params_b=1.79, shared_bits_per_weight=16.0, native_format="mxfp4"),
    ModelPreset("gpt-oss-120b", "gpt-oss-120b (MoE)", 116.83, 5.13, 36, 8, 64, 131_072,
                f"{HF}/openai/gpt-oss-120b/blob/main/config.json", SLIDING_WINDOW_NOTE,
                shared_params_b=2.12, shared_bits_per_weight=16.0, native_format="mxfp4"),
    ModelPreset("qwen3-32b", "Qwen3 32B", 32.8, None, 64, 8, 128, 32_768,
                f"{HF}/Qwen/Qwen3-32B", "32,768 tokens natively; the card extends it to 131,072 with YaRN."),
    ModelPreset("qwen3-30b-a3b", "Qwen3 30B-A3B (MoE)", 30.5, 3.3, 48, 4, 128, 32_768,
                f"{HF}/Qwen/Qwen3-30B-A3B", "32,768 tokens natively; the card extends it to 131,072 with YaRN."),
    ModelPreset("llama-3.1-8b", "Llama 3.1 8B", 8.03, None, 32, 8, 128, 131_072,
                f"{HF}/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    ModelPreset("llama-3.3-70b", "Llama 3.3 70B", 70.6, None, 80, 8, 128, 131_072,
                f"{HF}/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json"),
    ModelPreset("llama-3.1-70b", "Llama 3.1 70B", 70.6, None, 80, 8, 128, 131_072,
                f"{HF}/meta-llama/Llama-3.1-70B/blob/main/config.json"),
    ModelPreset("deepseek-v3", "DeepSeek-V3 (MoE)", 671.0, 37.0, 61, 1, 576, 131_072,
                f"{HF}/deepseek-ai/DeepSeek-V3", MLA_NOTE, kv_latent_dim=576),
    ModelPreset("kimi-k2", "Kimi K2 (MoE)", 1000.0, 32.0, 61, 1, 576, 131_072,
                f"{HF}/moonshotai/Kimi-K2-Instruct", MLA_NOTE, kv_latent_dim=576),
    ModelPreset("llama-2-7b", "Llama 2 7B", 6.74, None, 32, 32, 128, 4_096,
                f"{HF}/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    ModelPreset("mistral-7b", "Mistral 7B v0.1", 7.24, None, 32, 8, 128, 32_768,
                f"{HF}/mistralai/Mistral-7B-v0.1/blob/main/config.json"),
    ModelPreset("mixtral-8x7b", "Mixtral 8x7B (MoE)", 46.7, 12.9, 32, 8, 128, 32_768,
                f"{HF}/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json"),
)
MODEL_PRESETS_BY_SLUG = {preset.slug: preset for preset in MODEL_PRESETS}


class FitError(ValueError):
    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class FitInput:
    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    bits_per_weight: float
    context_tokens: int
    concurrency: int
    memory_gib: float
    bandwidth_gb_s: float
    devices: int = 1
    kv_bytes_per_element: float = 2.0
    active_params_b: float | None = None
    kv_latent_dim: int | None = None
    shared_params_b: float | None = None
    shared_bits_per_weight: float | None = None
    # The model's own maximum context; a longer context is an error, never a silent cap.
    max_context_tokens: int | None = None
    model_name: str = ""
    # Bandwidth of the host's system memory, for the cost of a llama.cpp CPU+GPU split (optional).
    system_bandwidth_gb_s: float | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        positive = {
            "params_b": self.params_b, "layers": self.layers, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
            "bits_per_weight": self.bits_per_weight, "context_tokens": self.context_tokens,
            "concurrency": self.concurrency, "memory_gib": self.memory_gib, "bandwidth_gb_s": self.bandwidth_gb_s,
            "devices": self.devices, "kv_bytes_per_element": self.kv_bytes_per_element,
        }
        for name, value in positive.items():
            if value is None or not math.isfinite(value) or value <= 0:
                errors[name] = "Must be a positive number."
        if self.active_params_b is not None and not (0 < self.active_params_b <= self.params_b):
            errors["active_params_b"] = "Must be positive and no larger than the total parameters."
        if self.system_bandwidth_gb_s is not None and not (
            math.isfinite(self.system_bandwidth_gb_s) and self.system_bandwidth_gb_s > 0
        ):
            errors["system_bandwidth_gb_s"] = "Must be a positive number."
        if (self.max_context_tokens and "context_tokens" not in errors
                and self.context_tokens > self.max_context_tokens):
            errors["context_tokens"] = (
                f"{self.model_name or 'This model'} handles at most {self.max_context_tokens:,} tokens of context "
                f"(its config.json); {self.context_tokens:,} is longer. Enter {self.max_context_tokens:,} or less."
            )
        if errors:
            raise FitError(errors)


@dataclass(frozen=True)
class FormatOption:
    """A smaller weight format with which the model fits the same hardware at the same context."""

    slug: str
    name: str
    bits_per_weight: float
    total_gib: float


@dataclass(frozen=True)
class Offload:
    """llama.cpp's CPU+GPU split: the layers that fit stay on the GPUs, the rest run from system memory."""

    gpu_layers: int
    layers: int
    system_memory_gib: float
    # Decode ceiling with the split, when the host's memory bandwidth is known; None otherwise.
    decode_ceiling_tps: float | None
    # How much slower than the all-GPU ceiling the split is, for the same bandwidth figures.
    slowdown: float | None


@dataclass(frozen=True)
class WhatWouldFit:
    formats: list[FormatOption] = field(default_factory=list)
    devices_needed: int | None = None
    offload: Offload | None = None


@dataclass(frozen=True)
class FitResult:
    weights_gib: float
    active_weights_gib: float
    kv_per_token_bytes: float
    kv_cache_gib: float
    overhead_gib: float
    total_gib: float
    capacity_gib: float
    headroom_gib: float
    fits: bool
    max_context_tokens: int
    max_concurrency: int
    bytes_per_token_gb: float
    # None when the model does not fit: a ceiling for weights that are not there would mislead.
    decode_ceiling_tps: float | None
    aggregate_ceiling_tps: float | None
    is_moe: bool
    what_would_fit: WhatWouldFit | None


def kv_bytes_per_token(*, layers: int, kv_heads: int, head_dim: int, bytes_per_element: float,
                       latent_dim: int | None = None) -> float:
    if latent_dim:
        return layers * latent_dim * bytes_per_element
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def _weight_bytes(spec: FitInput, params_b: float, bits_per_weight: float) -> float:
    """Bytes for `params_b` parameters, the shared (non-expert) part at its own precision when given."""
    shared = min(spec.shared_params_b or 0.0, params_b)
    shared_bits = spec.shared_bits_per_weight or bits_per_weight
    return ((params_b - shared) * bits_per_weight + shared * shared_bits) * 1e9 / 8


def _memory(spec: FitInput, bits_per_weight: float, devices: int) -> tuple[float, float, float, float]:
    """(weights, kv cache, overhead, capacity) in bytes."""
    weights = _weight_bytes(spec, spec.params_b, bits_per_weight)
    kv_cache = _kv_per_token(spec) * spec.context_tokens * spec.concurrency
    capacity = spec.memory_gib * GIB * devices
    return weights, kv_cache, ENGINE_RESERVED_FRACTION * capacity, capacity


def _kv_per_token(spec: FitInput) -> float:
    return kv_bytes_per_token(layers=spec.layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                              bytes_per_element=spec.kv_bytes_per_element, latent_dim=spec.kv_latent_dim)


def _fits(spec: FitInput, bits_per_weight: float, devices: int) -> tuple[bool, float]:
    weights, kv_cache, overhead, capacity = _memory(spec, bits_per_weight, devices)
    total = weights + kv_cache + overhead
    return total <= capacity, total


def what_would_fit(spec: FitInput, formats: tuple[WeightFormat, ...] = ()) -> WhatWouldFit:
    """Smaller formats that fit, the device count that fits, and llama.cpp's CPU+GPU split with its cost."""
    options = []
    for fmt in sorted(formats or WEIGHT_FORMATS, key=lambda fmt: -fmt.bits_per_weight):
        if fmt.bits_per_weight >= spec.bits_per_weight:
            continue
        fits, total = _fits(spec, fmt.bits_per_weight, spec.devices)
        if fits:
            options.append(FormatOption(fmt.slug, fmt.name, fmt.bits_per_weight, total / GIB))
    devices_needed = next(
        (count for count in range(spec.devices + 1, MAX_DEVICES_SUGGESTED + 1)
         if _fits(spec, spec.bits_per_weight, count)[0]),
        None,
    )
    return WhatWouldFit(formats=options[:3], devices_needed=devices_needed, offload=_offload(spec))


def _offload(spec: FitInput) -> Offload | None:
    weights, kv_cache, overhead, capacity = _memory(spec, spec.bits_per_weight, spec.devices)
    # Each repeating layer carries an equal share of the weights and of the KV cache (embeddings ignored).
    per_layer = (weights + kv_cache) / spec.layers
    gpu_layers = max(0, min(spec.layers - 1, int((capacity - overhead) // per_layer)))
    cpu_bytes = per_layer * (spec.layers - gpu_layers)
    ceiling = slowdown = None
    if spec.system_bandwidth_gb_s:
        active_share = (spec.active_params_b or spec.params_b) / spec.params_b
        read_per_layer = per_layer * active_share if spec.active_params_b else per_layer
        seconds = (read_per_layer * gpu_layers / (spec.bandwidth_gb_s * GB * spec.devices)
                   + read_per_layer * (spec.layers - gpu_layers) / (spec.system_bandwidth_gb_s * GB))
        ceiling = 1 / seconds
        all_gpu = read_per_layer * spec.layers / (spec.bandwidth_gb_s * GB * spec.devices)
        slowdown = seconds / all_gpu
    return Offload(gpu_layers=gpu_layers, layers=spec.layers, system_memory_gib=cpu_bytes / GIB,
                   decode_ceiling_tps=ceiling, slowdown=slowdown)


def calculate(spec: FitInput) -> FitResult:
    weights, kv_cache, overhead, capacity = _memory(spec, spec.bits_per_weight, spec.devices)
    active = _weight_bytes(spec, spec.active_params_b or spec.params_b, spec.bits_per_weight)
    per_token = _kv_per_token(spec)
    total = weights + kv_cache + overhead
    fits = total <= capacity
    free_for_kv = capacity - weights - overhead
    max_context = max(0, int(free_for_kv // (per_token * spec.concurrency))) if free_for_kv > 0 else 0
    max_concurrency = max(0, int(free_for_kv // (per_token * spec.context_tokens))) if free_for_kv > 0 else 0
    bandwidth = spec.bandwidth_gb_s * GB * spec.devices
    # One decode step reads the active weights once for the whole batch and each sequence's own KV cache.
    single_bytes = active + per_token * spec.context_tokens
    batch_bytes = active + per_token * spec.context_tokens * spec.concurrency
    return FitResult(
        weights_gib=weights / GIB,
        active_weights_gib=active / GIB,
        kv_per_token_bytes=per_token,
        kv_cache_gib=kv_cache / GIB,
        overhead_gib=overhead / GIB,
        total_gib=total / GIB,
        capacity_gib=capacity / GIB,
        headroom_gib=(capacity - total) / GIB,
        fits=fits,
        max_context_tokens=max_context,
        max_concurrency=max_concurrency,
        bytes_per_token_gb=single_bytes / GB,
        decode_ceiling_tps=decode_ceiling(bandwidth_gb_s=bandwidth / GB, bytes_per_token=single_bytes) if fits else None,
        aggregate_ceiling_tps=bandwidth / batch_bytes * spec.concurrency if fits else None,
        is_moe=spec.active_params_b is not None and spec.active_params_b < spec.params_b,
        what_would_fit=None if fits else what_would_fit(spec),
    )


def decode_ceiling(*, bandwidth_gb_s: float, bytes_per_token: float) -> float:
    """Upper bound on tokens/s for one sequence when every token must stream `bytes_per_token` from memory."""
    return bandwidth_gb_s * GB / bytes_per_token
