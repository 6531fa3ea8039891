"""Does a model fit, and how fast can it decode? Memory and bandwidth arithmetic with its assumptions stated.

- Weights: parameters x bits per weight / 8. An MoE model keeps every expert in memory. Where a model is
  released with only its experts quantized (gpt-oss: experts in MXFP4, attention, router and embeddings in
  BF16), the shared weights count at their own precision.
- KV cache per token: 2 (K and V) x layers x KV heads x head dimension x bytes per element; with
  multi-head latent attention (DeepSeek-V3) one compressed latent per layer instead. It grows with
  the context and with every concurrent sequence.
- Overhead: the engine keeps part of each device free for its runtime (CUDA context, graphs, activations
  outside the KV pool). vLLM's default `gpu_memory_utilization` of 0.9 leaves 10 % of every GPU unused; the
  calculator holds back the same share. Other engines reserve differently.
- Decode ceiling: each generated token reads the active weights once per batch step plus every
  sequence's KV cache, so tokens/s <= aggregate bandwidth / bytes read per token. Real engines reach a
  fraction of this ceiling; it bounds, it does not predict. When the model does not fit there is no
  ceiling to state: the weights would not be where the bandwidth is.
- Several devices are tensor-parallel: only sizes vLLM accepts are suggested (powers of two dividing the
  attention heads), and past as many devices as KV heads the KV cache is replicated, as vLLM does.
- When it does not fit one GPU: an MoE model keeps its routed experts in system memory (llama.cpp's
  --n-cpu-moe), whose bandwidth then bounds decode; a dense model splits whole layers (--n-gpu-layers).
  Neither is offered on several GPUs, where the engine guide rules llama.cpp out, nor on unified memory.

Capacities are binary (GiB = 2^30 bytes), as memory is built and sold ("a 24 GB card" holds 24 GiB);
bandwidth is decimal GB/s, as vendors state it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from scoring.errors import InputError

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
VLLM_TENSOR_PARALLEL_RULE = "https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py"
GPT_OSS_MODEL_CARD = "https://arxiv.org/abs/2508.10925"


@dataclass(frozen=True)
class WeightFormat:
    slug: str
    name: str
    bits_per_weight: float
    note: str
    source_url: str

    @property
    def is_gguf(self) -> bool:
        """llama.cpp's own formats: no other engine serves them."""
        return self.name.startswith("GGUF")


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
    # num_attention_heads: vLLM refuses a tensor-parallel size that does not divide it.
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_context_tokens: int
    source_url: str
    # The format the weights are published in, and where that is stated: the calculator's default.
    native_format: str
    native_format_source: str
    note: str = ""
    # Multi-head latent attention caches one latent of this width per layer and token (no K/V heads).
    kv_latent_dim: int | None = None
    # MoE: parameters outside the routed experts (attention, router, norms, embeddings, shared experts),
    # the routed-expert parameters one token reads, and how many layers carry routed experts.
    shared_params_b: float | None = None
    active_expert_params_b: float | None = None
    moe_layers: int | None = None
    # Precision the shared weights keep in the native release when only the experts are quantized (gpt-oss).
    shared_bits_per_weight: float | None = None

    @property
    def is_moe(self) -> bool:
        return self.active_expert_params_b is not None


HF = "https://huggingface.co"
GPT_OSS_README = "https://github.com/openai/gpt-oss/blob/main/README.md"
DEEPSEEK_V3_README = "https://github.com/deepseek-ai/DeepSeek-V3/blob/main/README.md"
SLIDING_WINDOW_NOTE = "Half the layers use a 128-token sliding window, so the real KV cache is smaller than shown."
MISTRAL_WINDOW_NOTE = ("Every layer uses a 4,096-token sliding window (config.json), so engines that implement it "
                       "keep at most 4,096 tokens of KV cache per sequence.")
MLA_NOTE = ("Multi-head latent attention: the KV cache holds one 576-wide latent per layer and token "
            "(kv_lora_rank 512 + rope dimension 64).")
QWEN3_CONTEXT_NOTE = "32,768 tokens natively; the card extends it to 131,072 with YaRN."

# Geometry from each model's config.json (num_hidden_layers, num_attention_heads, num_key_value_heads,
# head_dim) and card. MoE splits are derived from config.json: routed experts = MoE layers x experts x
# 3 x hidden x expert FFN width (plus expert biases for gpt-oss); shared = total - routed experts; routed
# parameters read per token = MoE layers x experts per token x one expert's parameters. The copies read
# and the arithmetic are listed in docs/recommendations.md ("Model presets").
MODEL_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset("gpt-oss-20b", "gpt-oss-20b (MoE)", params_b=20.91, active_params_b=3.61, layers=24,
                attention_heads=64, kv_heads=8, head_dim=64, max_context_tokens=131_072,
                source_url=f"{HF}/openai/gpt-oss-20b/blob/main/config.json",
                native_format="mxfp4", native_format_source=GPT_OSS_README, note=SLIDING_WINDOW_NOTE,
                shared_params_b=1.80, active_expert_params_b=2.39, moe_layers=24, shared_bits_per_weight=16.0),
    ModelPreset("gpt-oss-120b", "gpt-oss-120b (MoE)", params_b=116.83, active_params_b=5.13, layers=36,
                attention_heads=64, kv_heads=8, head_dim=64, max_context_tokens=131_072,
                source_url=f"{HF}/openai/gpt-oss-120b/blob/main/config.json",
                native_format="mxfp4", native_format_source=GPT_OSS_README, note=SLIDING_WINDOW_NOTE,
                shared_params_b=2.13, active_expert_params_b=3.58, moe_layers=36, shared_bits_per_weight=16.0),
    ModelPreset("llama-3.1-8b", "Llama 3.1 8B", params_b=8.03, active_params_b=None, layers=32, attention_heads=32,
                kv_heads=8, head_dim=128, max_context_tokens=131_072,
                source_url=f"{HF}/meta-llama/Llama-3.1-8B/blob/main/config.json",
                native_format="bf16", native_format_source=f"{HF}/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    ModelPreset("llama-3.1-70b", "Llama 3.1 70B", params_b=70.6, active_params_b=None, layers=80, attention_heads=64,
                kv_heads=8, head_dim=128, max_context_tokens=131_072,
                source_url=f"{HF}/meta-llama/Llama-3.1-70B/blob/main/config.json",
                native_format="bf16", native_format_source=f"{HF}/meta-llama/Llama-3.1-70B/blob/main/config.json"),
    ModelPreset("llama-3.3-70b", "Llama 3.3 70B", params_b=70.6, active_params_b=None, layers=80, attention_heads=64,
                kv_heads=8, head_dim=128, max_context_tokens=131_072,
                source_url=f"{HF}/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json",
                native_format="bf16",
                native_format_source=f"{HF}/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json"),
    ModelPreset("qwen3-8b", "Qwen3 8B", params_b=8.19, active_params_b=None, layers=36, attention_heads=32,
                kv_heads=8, head_dim=128, max_context_tokens=32_768, source_url=f"{HF}/Qwen/Qwen3-8B",
                native_format="bf16", native_format_source=f"{HF}/Qwen/Qwen3-8B/blob/main/config.json",
                note=QWEN3_CONTEXT_NOTE),
    ModelPreset("qwen3-14b", "Qwen3 14B", params_b=14.8, active_params_b=None, layers=40, attention_heads=40,
                kv_heads=8, head_dim=128, max_context_tokens=32_768, source_url=f"{HF}/Qwen/Qwen3-14B",
                native_format="bf16", native_format_source=f"{HF}/Qwen/Qwen3-14B/blob/main/config.json",
                note=QWEN3_CONTEXT_NOTE),
    ModelPreset("qwen3-32b", "Qwen3 32B", params_b=32.8, active_params_b=None, layers=64, attention_heads=64,
                kv_heads=8, head_dim=128, max_context_tokens=32_768, source_url=f"{HF}/Qwen/Qwen3-32B",
                native_format="bf16", native_format_source=f"{HF}/Qwen/Qwen3-32B/blob/main/config.json",
                note=QWEN3_CONTEXT_NOTE),
    ModelPreset("qwen3-30b-a3b", "Qwen3 30B-A3B (MoE)", params_b=30.5, active_params_b=3.3, layers=48,
                attention_heads=32, kv_heads=4, head_dim=128, max_context_tokens=32_768,
                source_url=f"{HF}/Qwen/Qwen3-30B-A3B", native_format="bf16",
                native_format_source=f"{HF}/Qwen/Qwen3-30B-A3B/blob/main/config.json", note=QWEN3_CONTEXT_NOTE,
                shared_params_b=1.54, active_expert_params_b=1.81, moe_layers=48),
    ModelPreset("qwen3-235b-a22b", "Qwen3 235B-A22B (MoE)", params_b=235.09, active_params_b=22.19, layers=94,
                attention_heads=64, kv_heads=4, head_dim=128, max_context_tokens=32_768,
                source_url=f"{HF}/Qwen/Qwen3-235B-A22B", native_format="bf16",
                native_format_source=f"{HF}/Qwen/Qwen3-235B-A22B/blob/main/config.json", note=QWEN3_CONTEXT_NOTE,
                shared_params_b=8.00, active_expert_params_b=14.19, moe_layers=94),
    # The first 3 of 61 layers are dense (first_k_dense_replace 3); shared = the card's 671 B main model
    # minus the routed experts, so it includes the shared experts, which llama.cpp keeps on the GPU.
    ModelPreset("deepseek-v3", "DeepSeek-V3 (MoE)", params_b=671.0, active_params_b=37.0, layers=61,
                attention_heads=128, kv_heads=1, head_dim=576, max_context_tokens=131_072,
                source_url=f"{HF}/deepseek-ai/DeepSeek-V3", native_format="fp8",
                native_format_source=DEEPSEEK_V3_README, note=MLA_NOTE, kv_latent_dim=576,
                shared_params_b=17.09, active_expert_params_b=20.44, moe_layers=58),
    ModelPreset("mixtral-8x7b", "Mixtral 8x7B (MoE)", params_b=46.7, active_params_b=12.9, layers=32,
                attention_heads=32, kv_heads=8, head_dim=128, max_context_tokens=32_768,
                source_url=f"{HF}/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json", native_format="bf16",
                native_format_source=f"{HF}/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
                shared_params_b=1.61, active_expert_params_b=11.27, moe_layers=32),
    ModelPreset("llama-2-7b", "Llama 2 7B", params_b=6.74, active_params_b=None, layers=32, attention_heads=32,
                kv_heads=32, head_dim=128, max_context_tokens=4_096,
                source_url=f"{HF}/meta-llama/Llama-2-7b-hf/blob/main/config.json", native_format="bf16",
                native_format_source=f"{HF}/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    ModelPreset("mistral-7b", "Mistral 7B v0.1", params_b=7.24, active_params_b=None, layers=32, attention_heads=32,
                kv_heads=8, head_dim=128, max_context_tokens=32_768,
                source_url=f"{HF}/mistralai/Mistral-7B-v0.1/blob/main/config.json", native_format="bf16",
                native_format_source=f"{HF}/mistralai/Mistral-7B-v0.1/blob/main/config.json",
                note=MISTRAL_WINDOW_NOTE),
)
MODEL_PRESETS_BY_SLUG = {preset.slug: preset for preset in MODEL_PRESETS}


# The name recommend/ imports the error by.
FitError = InputError


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
    # Unknown for a custom model: tensor-parallel sizes are then only required to be powers of two.
    attention_heads: int | None = None
    # MoE: routed-expert parameters read per token and the layers carrying experts (preset models).
    active_expert_params_b: float | None = None
    moe_layers: int | None = None
    # Unified memory (Apple silicon): the GPU already works from system memory, so nothing is offloaded.
    unified_memory: bool = False
    # The format's slug, and the model's published one (empty for a custom model).
    weight_format: str = ""
    native_format: str = ""

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
        if self.attention_heads is not None and self.attention_heads <= 0:
            errors["attention_heads"] = "Must be a positive number."
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
            raise InputError(errors)

    @property
    def splits_experts(self) -> bool:
        """Whether the routed experts can be told apart from the rest (preset MoE models)."""
        return bool(self.active_expert_params_b and self.moe_layers and self.shared_params_b)


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
class ExpertOffload:
    """llama.cpp keeps the routed experts of the first layers in system memory, everything else on the GPU.

    `--n-cpu-moe N` moves the expert tensors of layers 0 .. N-1 (`--cpu-moe`, or `-ot ".ffn_.*_exps.=CPU"`,
    moves all of them); attention, router, norms, embeddings and shared experts stay in VRAM.
    """

    n_cpu_moe: int
    expert_layers_on_cpu: int
    moe_layers: int
    all_experts_on_cpu: bool
    gpu_memory_gib: float
    system_memory_gib: float
    # Bytes one generated token reads from VRAM and from system memory.
    gpu_bytes_per_token_gb: float
    system_bytes_per_token_gb: float
    # Decode ceiling of the split, when the host's memory bandwidth is known; None otherwise.
    decode_ceiling_tps: float | None
    gpu_only_ceiling_tps: float | None
    system_only_ceiling_tps: float | None


@dataclass(frozen=True)
class WhatWouldFit:
    formats: list[FormatOption] = field(default_factory=list)
    # The smallest valid tensor-parallel size above the current device count that holds the model.
    devices_needed: int | None = None
    offload: Offload | None = None
    expert_offload: ExpertOffload | None = None
    # Why no CPU offload is offered (several GPUs, unified memory); empty when one is.
    offload_ruled_out: str = ""


@dataclass(frozen=True)
class FitResult:
    weights_gib: float
    active_weights_gib: float
    kv_per_token_bytes: float
    kv_cache_gib: float
    # Copies of the KV cache tensor parallelism keeps (vLLM replicates KV heads when the devices outnumber them).
    kv_replicas: float
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
    # The tensor-parallel sizes vLLM accepts for this model up to MAX_DEVICES_SUGGESTED, and whether the
    # chosen device count is one of them.
    tensor_parallel_sizes: list[int]
    devices_valid_for_tensor_parallel: bool
    what_would_fit: WhatWouldFit | None


def kv_bytes_per_token(*, layers: int, kv_heads: int, head_dim: int, bytes_per_element: float,
                       latent_dim: int | None = None) -> float:
    if latent_dim:
        return layers * latent_dim * bytes_per_element
    return 2 * layers * kv_heads * head_dim * bytes_per_element


def tensor_parallel_sizes(attention_heads: int | None, limit: int = MAX_DEVICES_SUGGESTED) -> list[int]:
    """Powers of two up to `limit` that divide the attention heads (any power of two when they are unknown).

    vLLM refuses a tensor-parallel size that does not divide num_attention_heads ("Total number of attention
    heads (40) must be divisible by tensor parallel size (3)", vllm/config/model.py); powers of two are the
    sizes the GPUs of one node are built and sold in.
    """
    sizes = [2**power for power in range(int(math.log2(limit)) + 1)]
    return [size for size in sizes if attention_heads is None or attention_heads % size == 0]


def kv_replicas(*, devices: int, kv_heads: int, latent: bool) -> float:
    """How many copies of the KV cache `devices`-way tensor parallelism stores, as vLLM's get_num_kv_heads does.

    Each GPU keeps max(1, KV heads // devices) heads, so beyond as many devices as KV heads every head is
    replicated; with multi-head latent attention each GPU keeps the whole latent cache.
    """
    if latent:
        return float(devices)
    return max(1.0, devices * max(1, kv_heads // devices) / kv_heads)


def _weight_bytes(spec: FitInput, params_b: float, bits_per_weight: float) -> float:
    """Bytes for `params_b` parameters, the shared (non-expert) part at its own precision when given."""
    shared = min(spec.shared_params_b or 0.0, params_b)
    shared_bits = spec.shared_bits_per_weight or bits_per_weight
    return ((params_b - shared) * bits_per_weight + shared * shared_bits) * 1e9 / 8


def _kv_per_token(spec: FitInput) -> float:
    return kv_bytes_per_token(layers=spec.layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                              bytes_per_element=spec.kv_bytes_per_element, latent_dim=spec.kv_latent_dim)


def _kv_replicas(spec: FitInput, devices: int) -> float:
    return kv_replicas(devices=devices, kv_heads=spec.kv_heads, latent=bool(spec.kv_latent_dim))


def _memory(spec: FitInput, bits_per_weight: float, devices: int) -> tuple[float, float, float, float]:
    """(weights, kv cache, overhead, capacity) in bytes."""
    weights = _weight_bytes(spec, spec.params_b, bits_per_weight)
    kv_cache = _kv_per_token(spec) * spec.context_tokens * spec.concurrency * _kv_replicas(spec, devices)
    capacity = spec.memory_gib * GIB * devices
    return weights, kv_cache, ENGINE_RESERVED_FRACTION * capacity, capacity


def _fits(spec: FitInput, bits_per_weight: float, devices: int) -> tuple[bool, float]:
    weights, kv_cache, overhead, capacity = _memory(spec, bits_per_weight, devices)
    total = weights + kv_cache + overhead
    return total <= capacity, total


def _offload_ruled_out(spec: FitInput) -> str:
    if spec.unified_memory:
        return ("No CPU offload: with unified memory the GPU already works from system memory, so there is "
                "no faster memory to keep part of the model in.")
    if spec.devices > 1:
        return ("No llama.cpp CPU offload on several GPUs: the engine guide rules llama.cpp out for multiple "
                "GPUs. Add devices or choose a smaller format, and serve with vLLM or SGLang.")
    return ""


def what_would_fit(spec: FitInput, formats: tuple[WeightFormat, ...] = ()) -> WhatWouldFit:
    """Smaller formats that fit, the device count that fits, and llama.cpp's CPU+GPU split with its cost."""
    ruled_out = _offload_ruled_out(spec)
    options = []
    for fmt in sorted(formats or WEIGHT_FORMATS, key=lambda fmt: -fmt.bits_per_weight):
        # A GGUF file means llama.cpp, which the engine guide rules out for several GPUs.
        if fmt.bits_per_weight >= spec.bits_per_weight or (fmt.is_gguf and spec.devices > 1):
            continue
        fits, total = _fits(spec, fmt.bits_per_weight, spec.devices)
        if fits:
            options.append(FormatOption(fmt.slug, fmt.name, fmt.bits_per_weight, total / GIB))
    devices_needed = next(
        (count for count in tensor_parallel_sizes(spec.attention_heads)
         if count > spec.devices and _fits(spec, spec.bits_per_weight, count)[0]),
        None,
    )
    expert_offload = None if ruled_out else _expert_offload(spec)
    # For MoE models llama.cpp's own help points to --n-cpu-moe rather than splitting whole layers.
    offload = None if ruled_out or expert_offload else _offload(spec)
    return WhatWouldFit(formats=options[:3], devices_needed=devices_needed, offload=offload,
                        expert_offload=expert_offload, offload_ruled_out=ruled_out)


def _offload(spec: FitInput) -> Offload:
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


def _expert_offload(spec: FitInput) -> ExpertOffload | None:
    """The fewest expert layers to keep in system memory so the rest fits the GPU; None if even all do not."""
    if not spec.splits_experts:
        return None
    weights, kv_cache, overhead, capacity = _memory(spec, spec.bits_per_weight, spec.devices)
    expert_bytes = (spec.params_b - spec.shared_params_b) * spec.bits_per_weight * 1e9 / 8
    per_moe_layer = expert_bytes / spec.moe_layers
    room = capacity - overhead - kv_cache - (weights - expert_bytes)
    if room < 0:
        return None
    on_cpu = max(1, spec.moe_layers - int(room // per_moe_layer))
    # Layers before the first MoE layer (DeepSeek-V3's dense ones) have no experts for --n-cpu-moe to move.
    n_cpu_moe = spec.layers - spec.moe_layers + on_cpu
    cpu_share = on_cpu / spec.moe_layers
    active_experts = spec.active_expert_params_b * spec.bits_per_weight * 1e9 / 8
    # What a token reads outside the routed experts stays in VRAM, at the shared weights' precision.
    active_shared = ((spec.active_params_b - spec.active_expert_params_b)
                     * (spec.shared_bits_per_weight or spec.bits_per_weight) * 1e9 / 8)
    gpu_bytes = active_shared + active_experts * (1 - cpu_share) + _kv_per_token(spec) * spec.context_tokens
    system_bytes = active_experts * cpu_share
    ceiling = gpu_ceiling = system_ceiling = None
    if spec.system_bandwidth_gb_s:
        gpu_seconds = gpu_bytes / (spec.bandwidth_gb_s * GB * spec.devices)
        system_seconds = system_bytes / (spec.system_bandwidth_gb_s * GB)
        ceiling = 1 / (gpu_seconds + system_seconds)
        gpu_ceiling, system_ceiling = 1 / gpu_seconds, 1 / system_seconds
    return ExpertOffload(
        n_cpu_moe=n_cpu_moe, expert_layers_on_cpu=on_cpu, moe_layers=spec.moe_layers,
        all_experts_on_cpu=on_cpu == spec.moe_layers,
        gpu_memory_gib=(weights - per_moe_layer * on_cpu + kv_cache + overhead) / GIB,
        system_memory_gib=per_moe_layer * on_cpu / GIB,
        gpu_bytes_per_token_gb=gpu_bytes / GB, system_bytes_per_token_gb=system_bytes / GB,
        decode_ceiling_tps=ceiling, gpu_only_ceiling_tps=gpu_ceiling, system_only_ceiling_tps=system_ceiling,
    )


def calculate(spec: FitInput) -> FitResult:
    weights, kv_cache, overhead, capacity = _memory(spec, spec.bits_per_weight, spec.devices)
    active = _weight_bytes(spec, spec.active_params_b or spec.params_b, spec.bits_per_weight)
    per_token = _kv_per_token(spec)
    replicas = _kv_replicas(spec, spec.devices)
    total = weights + kv_cache + overhead
    fits = total <= capacity
    free_for_kv = capacity - weights - overhead
    max_context = max(0, int(free_for_kv // (per_token * replicas * spec.concurrency)))
    max_concurrency = max(0, int(free_for_kv // (per_token * replicas * spec.context_tokens)))
    bandwidth = spec.bandwidth_gb_s * GB * spec.devices
    # One decode step reads the active weights once for the whole batch and each sequence's own KV cache
    # (every replica of it, each on its own device).
    single_bytes = active + per_token * replicas * spec.context_tokens
    batch_bytes = active + per_token * replicas * spec.context_tokens * spec.concurrency
    sizes = tensor_parallel_sizes(spec.attention_heads)
    return FitResult(
        weights_gib=weights / GIB,
        active_weights_gib=active / GIB,
        kv_per_token_bytes=per_token,
        kv_cache_gib=kv_cache / GIB,
        kv_replicas=replicas,
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
        tensor_parallel_sizes=sizes,
        devices_valid_for_tensor_parallel=spec.devices in sizes,
        what_would_fit=None if fits else what_would_fit(spec),
    )


def decode_ceiling(*, bandwidth_gb_s: float, bytes_per_token: float) -> float:
    """Upper bound on tokens/s for one sequence when every token must stream `bytes_per_token` from memory."""
    return bandwidth_gb_s * GB / bytes_per_token
