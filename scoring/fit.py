"""Does a model fit, and how fast can it decode? Memory and bandwidth arithmetic with its assumptions stated.

- Weights: parameters x bits per weight / 8. An MoE model keeps every expert in memory.
- KV cache: 2 (K and V) x layers x KV heads x head dimension x bytes per element, per token of context,
  for every concurrent sequence.
- Overhead: a fixed runtime allowance per device (CUDA context, kernels, buffers) plus a share of the
  weights for activations and fragmentation. It is an estimate; engines reserve differently.
- Decode ceiling: each generated token reads the active weights once per batch step plus every
  sequence's KV cache, so tokens/s <= aggregate bandwidth / bytes read per token. Real engines reach a
  fraction of this ceiling; it bounds, it does not predict.

Units are decimal: 1 GB = 10^9 bytes, bandwidth in GB/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GB = 1e9
RUNTIME_OVERHEAD_GB_PER_DEVICE = 0.5
ACTIVATION_OVERHEAD_FRACTION = 0.05

LLAMA_CPP_QUANTIZE_README = "https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md"
GGML_BLOCK_LAYOUT = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h"
OCP_MX_SPEC = "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"
NVFP4_BLOG = "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
AWQ_REPO = "https://github.com/mit-han-lab/llm-awq"


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
    slug: str
    name: str
    params_b: float
    active_params_b: float | None
    layers: int
    kv_heads: int
    head_dim: int
    source_url: str
    note: str = ""


MODEL_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset("llama-2-7b", "Llama 2 7B", 6.74, None, 32, 32, 128,
                "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    ModelPreset("mistral-7b", "Mistral 7B v0.1", 7.24, None, 32, 8, 128,
                "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"),
    ModelPreset("llama-3.1-8b", "Llama 3.1 8B", 8.03, None, 32, 8, 128,
                "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    ModelPreset("qwen2.5-7b", "Qwen2.5 7B", 7.62, None, 28, 4, 128,
                "https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json"),
    ModelPreset("llama-3.1-70b", "Llama 3.1 70B", 70.6, None, 80, 8, 128,
                "https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json"),
    ModelPreset("qwen2.5-72b", "Qwen2.5 72B", 72.7, None, 80, 8, 128,
                "https://huggingface.co/Qwen/Qwen2.5-72B/blob/main/config.json"),
    ModelPreset("mixtral-8x7b", "Mixtral 8x7B (MoE)", 46.7, 12.9, 32, 8, 128,
                "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json"),
    ModelPreset("gpt-oss-20b", "gpt-oss-20b (MoE)", 20.9, 3.6, 24, 8, 64,
                "https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json",
                "Half the layers use a 128-token sliding window, so the real KV cache is smaller than shown."),
    ModelPreset("gpt-oss-120b", "gpt-oss-120b (MoE)", 116.8, 5.1, 36, 8, 64,
                "https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json",
                "Half the layers use a 128-token sliding window, so the real KV cache is smaller than shown."),
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
    memory_gb: float
    bandwidth_gb_s: float
    devices: int = 1
    kv_bytes_per_element: float = 2.0
    active_params_b: float | None = None

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        positive = {
            "params_b": self.params_b, "layers": self.layers, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
            "bits_per_weight": self.bits_per_weight, "context_tokens": self.context_tokens,
            "concurrency": self.concurrency, "memory_gb": self.memory_gb, "bandwidth_gb_s": self.bandwidth_gb_s,
            "devices": self.devices, "kv_bytes_per_element": self.kv_bytes_per_element,
        }
        for name, value in positive.items():
            if value is None or not math.isfinite(value) or value <= 0:
                errors[name] = "Must be a positive number."
        if self.active_params_b is not None and not (0 < self.active_params_b <= self.params_b):
            errors["active_params_b"] = "Must be positive and no larger than the total parameters."
        if errors:
            raise FitError(errors)


@dataclass(frozen=True)
class FitResult:
    weights_gb: float
    active_weights_gb: float
    kv_per_token_bytes: float
    kv_cache_gb: float
    overhead_gb: float
    total_gb: float
    capacity_gb: float
    headroom_gb: float
    fits: bool
    max_context_tokens: int
    max_concurrency: int
    bytes_per_token_gb: float
    decode_ceiling_tps: float
    aggregate_ceiling_tps: float
    is_moe: bool


def kv_bytes_per_token(*, layers: int, kv_heads: int, head_dim: int, bytes_per_element: float) -> float:
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def calculate(spec: FitInput) -> FitResult:
    weights = spec.params_b * 1e9 * spec.bits_per_weight / 8
    active = (spec.active_params_b or spec.params_b) * 1e9 * spec.bits_per_weight / 8
    per_token = kv_bytes_per_token(
        layers=spec.layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
        bytes_per_element=spec.kv_bytes_per_element,
    )
    kv_cache = per_token * spec.context_tokens * spec.concurrency
    overhead = RUNTIME_OVERHEAD_GB_PER_DEVICE * GB * spec.devices + ACTIVATION_OVERHEAD_FRACTION * weights
    total = weights + kv_cache + overhead
    capacity = spec.memory_gb * GB * spec.devices
    free_for_kv = capacity - weights - overhead
    max_context = max(0, int(free_for_kv // (per_token * spec.concurrency))) if free_for_kv > 0 else 0
    max_concurrency = max(0, int(free_for_kv // (per_token * spec.context_tokens))) if free_for_kv > 0 else 0
    bandwidth = spec.bandwidth_gb_s * GB * spec.devices
    # One decode step reads the active weights once for the whole batch and each sequence's own KV cache.
    single_bytes = active + per_token * spec.context_tokens
    batch_bytes = active + per_token * spec.context_tokens * spec.concurrency
    return FitResult(
        weights_gb=weights / GB,
        active_weights_gb=active / GB,
        kv_per_token_bytes=per_token,
        kv_cache_gb=kv_cache / GB,
        overhead_gb=overhead / GB,
        total_gb=total / GB,
        capacity_gb=capacity / GB,
        headroom_gb=(capacity - total) / GB,
        fits=total <= capacity,
        max_context_tokens=max_context,
        max_concurrency=max_concurrency,
        bytes_per_token_gb=single_bytes / GB,
        decode_ceiling_tps=decode_ceiling(bandwidth_gb_s=bandwidth / GB, bytes_per_token=single_bytes),
        aggregate_ceiling_tps=bandwidth / batch_bytes * spec.concurrency,
        is_moe=spec.active_params_b is not None and spec.active_params_b < spec.params_b,
    )


def decode_ceiling(*, bandwidth_gb_s: float, bytes_per_token: float) -> float:
    """Upper bound on tokens/s for one sequence when every token must stream `bytes_per_token` from memory."""
    return bandwidth_gb_s * GB / bytes_per_token
