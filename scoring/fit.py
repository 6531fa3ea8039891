"""Does a model fit, and how fast can it decode? Memory and bandwidth arithmetic with its assumptions stated.

- Weights: parameters x bits per weight / 8. An MoE model keeps every expert in memory. Where a model is
  released with only its experts quantized (gpt-oss: experts in MXFP4, attention, router and embeddings in
  BF16), the shared weights count at their own precision.
- KV cache, layer by layer as the model's config.json declares them (`layer_types`, `sliding_window`):
  a full-attention layer keeps 2 (K and V) x KV heads x head dimension x bytes per element for every token of
  the context; a sliding-window layer keeps the same but for at most `sliding_window` tokens (vLLM's hybrid
  KV cache manager and llama.cpp's SWA cache allocate no more); with multi-head latent attention (DeepSeek)
  one latent of kv_lora_rank + qk_rope_head_dim per layer and token; a linear-attention layer (Gated
  DeltaNet in Qwen3.5) keeps a recurrent state of constant size per sequence, whatever the context. All of
  it is per concurrent sequence. The largest context never exceeds the model's own maximum.
- Overhead: the engine keeps part of each device free for its runtime (CUDA context, graphs, activations
  outside the KV pool). vLLM's default `gpu_memory_utilization` of 0.9 leaves 10 % of every GPU unused; the
  calculator holds back the same share. On Apple silicon macOS itself caps what the GPU may keep resident
  (Metal's `recommendedMaxWorkingSetSize`, about 75 % of memory by default): that cap replaces the reserve.
- Decode ceiling: each generated token reads the active weights once per batch step plus every
  sequence's KV cache, so tokens/s <= aggregate bandwidth / bytes read per token. Real engines reach a
  fraction of this ceiling; it bounds, it does not predict. When the model does not fit there is no
  ceiling to state: the weights would not be where the bandwidth is.
- Several devices: tensor parallelism (vLLM, SGLang) reads every device's share at once, so its decode
  ceiling pools their bandwidth; llama.cpp's default layer split (`--split-mode layer`) runs the devices one
  after another, so one sequence decodes no faster than on one device. Both ceilings are stated. Only
  tensor-parallel sizes vLLM accepts are suggested (powers of two dividing the attention heads), and past as
  many devices as KV heads the KV cache is replicated, as vLLM does.
- When it does not fit, the suggestions come in the order a practitioner tries them: a smaller KV-cache
  precision (FP8 first), then a shorter context or fewer sequences, then weight formats the GPU generation
  runs natively (no NVFP4 before Blackwell), then more GPUs. CPU offload (llama.cpp's --n-cpu-moe for MoE
  models, --n-gpu-layers for dense ones) comes last and only for one sequence on one GPU: it trades speed
  for memory, which a single local user may accept and a served endpoint may not. Never on unified memory.

Capacities are binary (GiB = 2^30 bytes), as memory is built and sold ("a 24 GB card" holds 24 GiB);
bandwidth is decimal GB/s, as vendors state it.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from scoring.errors import InputError

GIB = 2**30
GB = 1e9
ENGINE_RESERVED_FRACTION = 0.10
ENGINE_RESERVED_SOURCE = "https://docs.vllm.ai/en/latest/configuration/engine_args.html"
MAX_DEVICES_SUGGESTED = 64
# The longest context the calculator takes (the form's own limit); a model's maximum is usually far lower.
MAX_CONTEXT_TOKENS = 10_000_000

LLAMA_CPP_QUANTIZE_README = "https://github.com/ggml-org/llama.cpp/blob/master/tools/quantize/README.md"
GGML_BLOCK_LAYOUT = "https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml-common.h"
OCP_MX_SPEC = "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"
NVFP4_BLOG = "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
AWQ_REPO = "https://github.com/mit-han-lab/llm-awq"
LLAMA_CPP_OFFLOAD = "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"
VLLM_TENSOR_PARALLEL_RULE = "https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py"
GPT_OSS_MODEL_CARD = "https://arxiv.org/abs/2508.10925"
LLAMA_CPP_MULTI_GPU = "https://github.com/ggml-org/llama.cpp/blob/master/docs/multi-gpu.md"
# Apple documents the property, not its default value; MLX's maintainers state the default ("the recommended
# working set is usually 0.75 * the total ram available on the system"); `sudo sysctl iogpu.wired_limit_mb`
# raises it (MLX's set_wired_limit documentation).
APPLE_WORKING_SET_FRACTION = 0.75
APPLE_WORKING_SET_SOURCE = "https://developer.apple.com/documentation/metal/mtldevice/recommendedmaxworkingsetsize"
APPLE_WORKING_SET_DEFAULT_SOURCE = "https://github.com/ml-explore/mlx/pull/64"
APPLE_WIRED_LIMIT_SOURCE = "https://ml-explore.github.io/mlx/build/html/python/_autosummary/mlx.core.set_wired_limit.html"


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

# The non-GGUF weight formats each GPU generation has matrix-unit support for (the engine guide: FP8 needs
# Ada/Hopper or newer, NVFP4 and MXFP4 need Blackwell). Weight-only INT4 and INT8 run on every generation
# listed. GGUF formats are llama.cpp's own kernels and run wherever llama.cpp does.
NATIVE_WEIGHT_FORMATS: dict[str, frozenset[str]] = {
    "ampere": frozenset({"bf16", "int8", "int4-g128"}),
    "ada": frozenset({"bf16", "fp8", "int8", "int4-g128"}),
    "hopper": frozenset({"bf16", "fp8", "int8", "int4-g128"}),
    "blackwell": frozenset({"bf16", "fp8", "int8", "int4-g128", "mxfp4", "nvfp4"}),
    "cdna3": frozenset({"bf16", "fp8", "int8", "int4-g128"}),
    "cdna4": frozenset({"bf16", "fp8", "int8", "int4-g128"}),
    "apple": frozenset({"bf16"}),
}

# In the order a practitioner tries them: FP8 (vLLM and SGLang's --kv-cache-dtype fp8) before llama.cpp's
# quantized caches.
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
    # Per-layer attention (config.json `layer_types`): layers that attend only the last `sliding_window`
    # tokens, and linear-attention layers that keep a state of constant size per sequence instead of a KV cache.
    sliding_window: int | None = None
    sliding_layers: int = 0
    linear_layers: int = 0
    # One linear-attention layer's state per sequence, in elements: the recurrent state (value heads x key
    # head dim x value head dim) and the short convolution's last (kernel - 1) inputs.
    linear_state_elements: int = 0
    # The catalog models (LanguageModel slugs) this geometry describes: the wizard's links start here from them.
    catalog_models: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return self.active_expert_params_b is not None

    @property
    def full_attention_layers(self) -> int:
        return self.layers - self.sliding_layers - self.linear_layers


HF = "https://huggingface.co"
GPT_OSS_README = "https://github.com/openai/gpt-oss/blob/main/README.md"
DEEPSEEK_V3_README = "https://github.com/deepseek-ai/DeepSeek-V3/blob/main/README.md"
GPT_OSS_WINDOW_NOTE = ("Layers alternate between a 128-token sliding window and full attention (config.json "
                       "layer_types): half the layers keep at most 128 tokens per sequence. Engines with a windowed "
                       "KV cache (vLLM, SGLang, llama.cpp unless --swa-full) hold that; one without it holds twice "
                       "the full-attention share.")
MISTRAL_WINDOW_NOTE = ("Every layer uses a 4,096-token sliding window (config.json sliding_window): past 4,096 tokens "
                       "the KV cache stops growing where the engine implements the window, and the model sees only "
                       "the last 4,096 tokens directly.")
GEMMA3_WINDOW_NOTE = ("Five local layers for every global one (config.json sliding_window_pattern 6): 52 of the 62 "
                      "layers keep at most 1,024 tokens per sequence; only the 10 global layers grow with the context.")
MLA_NOTE = ("Multi-head latent attention: the KV cache holds one 576-wide latent per layer and token "
            "(kv_lora_rank 512 + qk_rope_head_dim 64), and with tensor parallelism every GPU keeps all of it.")
QWEN3_CONTEXT_NOTE = "32,768 tokens natively; the card extends it to 131,072 with YaRN."
QWEN35_HYBRID_NOTE = ("Hybrid attention: 30 of the 40 layers are Gated DeltaNet linear attention (config.json "
                      "full_attention_interval 4) with a state of constant size per sequence (about 33 MB at BF16, "
                      "whatever the context); only the 10 gated-attention layers keep a KV cache. Parameters count "
                      "the text decoder, not the vision encoder.")
# The first 3 of 61 layers are dense (first_k_dense_replace 3); shared = the card's 671 B main model
# minus the routed experts, so it includes the shared experts, which llama.cpp keeps on the GPU. The latent
# is kv_lora_rank 512 + qk_rope_head_dim 64.
DEEPSEEK_V3 = ModelPreset("deepseek-v3", "DeepSeek-V3 (MoE)", params_b=671.0, active_params_b=37.0, layers=61,
                          attention_heads=128, kv_heads=1, head_dim=576, max_context_tokens=131_072,
                          source_url=f"{HF}/deepseek-ai/DeepSeek-V3/blob/main/config.json", native_format="fp8",
                          native_format_source=DEEPSEEK_V3_README, note=MLA_NOTE, kv_latent_dim=512 + 64,
                          shared_params_b=17.09, active_expert_params_b=20.44, moe_layers=58)

# Geometry from each model's config.json (num_hidden_layers, num_attention_heads, num_key_value_heads,
# head_dim) and card. MoE splits are derived from config.json: routed experts = MoE layers x experts x
# 3 x hidden x expert FFN width (plus expert biases for gpt-oss); shared = total - routed experts; routed
# parameters read per token = MoE layers x experts per token x one expert's parameters. The copies read
# and the arithmetic are listed in docs/recommendations.md ("Model presets").
MODEL_PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset("gpt-oss-20b", "gpt-oss-20b (MoE)", params_b=20.91, active_params_b=3.61, layers=24,
                attention_heads=64, kv_heads=8, head_dim=64, max_context_tokens=131_072,
                source_url=f"{HF}/openai/gpt-oss-20b/blob/main/config.json",
                native_format="mxfp4", native_format_source=GPT_OSS_README, note=GPT_OSS_WINDOW_NOTE,
                shared_params_b=1.80, active_expert_params_b=2.39, moe_layers=24, shared_bits_per_weight=16.0,
                sliding_window=128, sliding_layers=12, catalog_models=("gpt-oss-20b",)),
    ModelPreset("gpt-oss-120b", "gpt-oss-120b (MoE)", params_b=116.83, active_params_b=5.13, layers=36,
                attention_heads=64, kv_heads=8, head_dim=64, max_context_tokens=131_072,
                source_url=f"{HF}/openai/gpt-oss-120b/blob/main/config.json",
                native_format="mxfp4", native_format_source=GPT_OSS_README, note=GPT_OSS_WINDOW_NOTE,
                shared_params_b=2.13, active_expert_params_b=3.58, moe_layers=36, shared_bits_per_weight=16.0,
                sliding_window=128, sliding_layers=18, catalog_models=("gpt-oss-120b",)),
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
                native_format_source=f"{HF}/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json",
                catalog_models=("llama-3-3-70b-instruct",)),
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
                shared_params_b=1.54, active_expert_params_b=1.81, moe_layers=48, catalog_models=("qwen3-30b-a3b",)),
    ModelPreset("qwen3-235b-a22b", "Qwen3 235B-A22B (MoE)", params_b=235.09, active_params_b=22.19, layers=94,
                attention_heads=64, kv_heads=4, head_dim=128, max_context_tokens=32_768,
                source_url=f"{HF}/Qwen/Qwen3-235B-A22B", native_format="bf16",
                native_format_source=f"{HF}/Qwen/Qwen3-235B-A22B/blob/main/config.json", note=QWEN3_CONTEXT_NOTE,
                shared_params_b=8.00, active_expert_params_b=14.19, moe_layers=94,
                catalog_models=("qwen3-235b-a22b",)),
    DEEPSEEK_V3,
    # DeepSeek-R1's config.json declares the same DeepseekV3ForCausalLM geometry (61 layers, kv_lora_rank 512,
    # first_k_dense_replace 3); its card: trained from DeepSeek-V3-Base, 671 B total, 37 B active, 128K context.
    dataclasses.replace(DEEPSEEK_V3, slug="deepseek-r1", name="DeepSeek-R1 (MoE)",
                        source_url=f"{HF}/deepseek-ai/DeepSeek-R1/blob/main/config.json",
                        native_format_source=f"{HF}/deepseek-ai/DeepSeek-R1",
                        catalog_models=("deepseek-r1", "deepseek-r1-0528")),
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
                note=MISTRAL_WINDOW_NOTE, sliding_window=4096, sliding_layers=32),
    # 62 layers, every 6th global (layers 6, 12, ..., 60): 10 global, 52 local with a 1,024-token window.
    ModelPreset("gemma-3-27b", "Gemma 3 27B", params_b=27.0, active_params_b=None, layers=62, attention_heads=32,
                kv_heads=16, head_dim=128, max_context_tokens=131_072,
                source_url=f"{HF}/google/gemma-3-27b-it/blob/main/config.json", native_format="bf16",
                native_format_source=f"{HF}/google/gemma-3-27b-it/blob/main/config.json",
                note=GEMMA3_WINDOW_NOTE, sliding_window=1024, sliding_layers=52),
    # text_config: 40 layers, every 4th full attention (16 heads, 2 KV heads x 256), 30 Gated DeltaNet layers
    # (16 key heads and 32 value heads of 128, conv kernel 4), 256 experts of width 512 (8 per token) plus a
    # shared expert, 262,144 positions. Routed experts = 40 x 256 x 3 x 2048 x 512 = 32.21 B of 34.66 B; a
    # token reads 40 x 8 x 3 x 2048 x 512 = 1.01 B of them. Linear state per layer: 32 x 128 x 128 recurrent
    # + 3 x (2 x 16 x 128 + 32 x 128) convolution = 548,864 elements.
    ModelPreset("qwen3.5-35b-a3b", "Qwen3.5 35B-A3B (MoE, hybrid)", params_b=34.66, active_params_b=3.46,
                layers=40, attention_heads=16, kv_heads=2, head_dim=256, max_context_tokens=262_144,
                source_url=f"{HF}/Qwen/Qwen3.5-35B-A3B/blob/main/config.json", native_format="bf16",
                native_format_source=f"{HF}/Qwen/Qwen3.5-35B-A3B/blob/main/config.json", note=QWEN35_HYBRID_NOTE,
                shared_params_b=2.45, active_expert_params_b=1.01, moe_layers=40,
                linear_layers=30, linear_state_elements=548_864, catalog_models=("qwen3-5-35b-a3b",)),
)
MODEL_PRESETS_BY_SLUG = {preset.slug: preset for preset in MODEL_PRESETS}
PRESETS_BY_CATALOG_MODEL = {model: preset for preset in MODEL_PRESETS for model in preset.catalog_models}
# Linear-attention state is counted at the model's published BF16 precision.
LINEAR_STATE_BYTES = 2.0


# The name recommend/ imports the error by.


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
    # Per-layer attention (preset models): see ModelPreset.
    sliding_window: int | None = None
    sliding_layers: int = 0
    linear_layers: int = 0
    linear_state_elements: int = 0
    # The GPU generation (catalog hardware: "hopper", "ada", ...), for the weight formats it runs natively;
    # empty when unknown (custom hardware), and then no format is ruled out.
    gpu_generation: str = ""
    # What the model's own architecture means for these figures, stated beside the verdict.
    caveats: tuple[str, ...] = ()

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
        if self.sliding_layers + self.linear_layers > self.layers or (self.sliding_layers and not self.sliding_window):
            errors["layers"] = "Sliding-window and linear-attention layers must be among the layers, with a window."
        if errors:
            raise InputError(errors)

    @property
    def full_attention_layers(self) -> int:
        return self.layers - self.sliding_layers - self.linear_layers

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
class KvCacheOption:
    """A smaller KV-cache precision with which the model fits as entered."""

    slug: str
    name: str
    total_gib: float
    headroom_gib: float


@dataclass(frozen=True)
class WhatWouldFit:
    # In the order a practitioner tries them: the KV cache's precision, then (FitResult's largest context and
    # concurrency), then weight formats, then devices, then CPU offload.
    kv_cache: KvCacheOption | None = None
    # Smaller KV precisions tried, none of which fits (names), when kv_cache is None.
    kv_cache_tried: list[str] = field(default_factory=list)
    formats: list[FormatOption] = field(default_factory=list)
    # Smaller formats left out because the GPU generation has no native kernels for them (names).
    formats_not_native: list[str] = field(default_factory=list)
    # The smallest valid tensor-parallel size above the current device count that holds the model.
    devices_needed: int | None = None
    offload: Offload | None = None
    expert_offload: ExpertOffload | None = None
    # Why no CPU offload is offered (several GPUs, unified memory, several sequences); empty when one is.
    offload_ruled_out: str = ""


@dataclass(frozen=True)
class FitResult:
    weights_gib: float
    active_weights_gib: float
    # Bytes per token of context in the layers whose cache grows with it (full attention or latent).
    kv_per_token_bytes: float
    # Per sequence, whatever its length past the window: the sliding-window layers' cache when full, and the
    # linear-attention layers' state.
    kv_window_bytes_per_sequence: float
    linear_state_bytes_per_sequence: float
    kv_cache_gib: float
    # Copies of the KV cache tensor parallelism keeps (vLLM replicates KV heads when the devices outnumber them).
    kv_replicas: float
    overhead_gib: float
    # What the overhead is: "engine" (vLLM's 10 % reserve) or "working-set" (macOS's GPU limit).
    overhead_kind: str
    total_gib: float
    capacity_gib: float
    headroom_gib: float
    fits: bool
    max_context_tokens: int
    # Whether the largest context stops at the model's own maximum rather than at memory.
    max_context_is_model_limit: bool
    max_concurrency: int
    bytes_per_token_gb: float
    # None when the model does not fit: a ceiling for weights that are not there would mislead.
    decode_ceiling_tps: float | None
    aggregate_ceiling_tps: float | None
    # Several devices under llama.cpp's default layer split: they run one after another, so one sequence
    # decodes at one device's bandwidth. None on one device or when it does not fit.
    layer_split_ceiling_tps: float | None
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


def weights_gib(*, params_b: float, bits_per_weight: float) -> float:
    """Weights alone: parameters x bits per weight, in GiB."""
    return params_b * bits_per_weight * 1e9 / 8 / GIB


def usable_memory_gib(*, memory_gib: float, unified_memory: bool = False) -> float:
    """What one device leaves for weights and KV cache once the engine's reserve (or macOS's cap) is held back."""
    reserve = 1 - APPLE_WORKING_SET_FRACTION if unified_memory else ENGINE_RESERVED_FRACTION
    return memory_gib * (1 - reserve)


def _weight_bytes(spec: FitInput, params_b: float, bits_per_weight: float) -> float:
    """Bytes for `params_b` parameters, the shared (non-expert) part at its own precision when given."""
    shared = min(spec.shared_params_b or 0.0, params_b)
    shared_bits = spec.shared_bits_per_weight or bits_per_weight
    return ((params_b - shared) * bits_per_weight + shared * shared_bits) * 1e9 / 8


def _kv_per_token(spec: FitInput, kv_bytes: float | None = None) -> float:
    """Bytes per token of context in the full-attention (or latent) layers: the part that grows with it."""
    return kv_bytes_per_token(layers=spec.full_attention_layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                              bytes_per_element=kv_bytes or spec.kv_bytes_per_element, latent_dim=spec.kv_latent_dim)


def _window_per_token(spec: FitInput, kv_bytes: float | None = None) -> float:
    return kv_bytes_per_token(layers=spec.sliding_layers, kv_heads=spec.kv_heads, head_dim=spec.head_dim,
                              bytes_per_element=kv_bytes or spec.kv_bytes_per_element)


def _linear_state(spec: FitInput) -> float:
    return spec.linear_layers * spec.linear_state_elements * LINEAR_STATE_BYTES


def _kv_per_sequence(spec: FitInput, context_tokens: int, kv_bytes: float | None = None) -> float:
    """One sequence's cache: full layers hold every token, windowed layers at most the window, linear layers a
    state of constant size."""
    windowed = min(context_tokens, spec.sliding_window or 0)
    return (_kv_per_token(spec, kv_bytes) * context_tokens + _window_per_token(spec, kv_bytes) * windowed
            + _linear_state(spec))


def _kv_replicas(spec: FitInput, devices: int) -> float:
    return kv_replicas(devices=devices, kv_heads=spec.kv_heads, latent=bool(spec.kv_latent_dim))


def _memory(spec: FitInput, bits_per_weight: float, devices: int,
            kv_bytes: float | None = None) -> tuple[float, float, float, float]:
    """(weights, kv cache, overhead, capacity) in bytes."""
    weights = _weight_bytes(spec, spec.params_b, bits_per_weight)
    kv_cache = _kv_per_sequence(spec, spec.context_tokens, kv_bytes) * spec.concurrency * _kv_replicas(spec, devices)
    capacity = spec.memory_gib * GIB * devices
    usable = usable_memory_gib(memory_gib=spec.memory_gib, unified_memory=spec.unified_memory) * GIB * devices
    return weights, kv_cache, capacity - usable, capacity


def _fits(spec: FitInput, bits_per_weight: float, devices: int, kv_bytes: float | None = None) -> tuple[bool, float]:
    weights, kv_cache, overhead, capacity = _memory(spec, bits_per_weight, devices, kv_bytes)
    total = weights + kv_cache + overhead
    return total <= capacity, total


def _largest_context(spec: FitInput, free: float, replicas: float) -> tuple[int, bool]:
    """The longest context every sequence can have in `free` bytes, and whether the model's own limit set it."""
    budget = free / (replicas * spec.concurrency) - _linear_state(spec)
    limit = spec.max_context_tokens or MAX_CONTEXT_TOKENS
    if budget <= 0:
        return 0, False
    full, windowed, window = _kv_per_token(spec), _window_per_token(spec), spec.sliding_window or 0
    if full == 0:
        tokens = limit if windowed == 0 or budget >= windowed * window else int(budget // windowed)
    elif budget >= (full + windowed) * window:
        tokens = int((budget - windowed * window) // full)
    else:
        tokens = int(budget // (full + windowed))
    return min(tokens, limit), tokens >= limit


def _offload_ruled_out(spec: FitInput) -> str:
    if spec.unified_memory:
        return ("No CPU offload: with unified memory the GPU already works from system memory, so there is "
                "no faster memory to keep part of the model in.")
    if spec.devices > 1:
        return ("No llama.cpp CPU offload on several GPUs: the engine guide rules llama.cpp out for multiple "
                "GPUs. Add devices or choose a smaller format, and serve with vLLM or SGLang.")
    if spec.concurrency > 1:
        return (f"No CPU offload for {spec.concurrency} concurrent sequences: every token would wait on system "
                "memory, a trade one local user may accept and a served endpoint should not.")
    return ""


def _kv_cache_options(spec: FitInput) -> tuple[KvCacheOption | None, list[str]]:
    """The first smaller KV precision that fits, in the order KV_CACHE_BYTES lists them, and those tried.

    llama.cpp's quantized caches only where llama.cpp is an answer (one device); FP8 is vLLM's and SGLang's,
    which do not run on Apple silicon.
    """
    tried = []
    for slug, (name, kv_bytes) in KV_CACHE_BYTES.items():
        llama_cpp_only = slug.startswith("q")
        if kv_bytes >= spec.kv_bytes_per_element or (llama_cpp_only and spec.devices > 1) \
                or (slug == "fp8" and spec.unified_memory):
            continue
        fits, total = _fits(spec, spec.bits_per_weight, spec.devices, kv_bytes)
        if fits:
            capacity = spec.memory_gib * GIB * spec.devices
            return KvCacheOption(slug, name, total / GIB, (capacity - total) / GIB), tried
        tried.append(name)
    return None, tried


def what_would_fit(spec: FitInput, formats: tuple[WeightFormat, ...] = ()) -> WhatWouldFit:
    """What to try, in order: KV precision, smaller native formats, more devices, then llama.cpp's offload."""
    ruled_out = _offload_ruled_out(spec)
    kv_option, kv_tried = _kv_cache_options(spec)
    native = NATIVE_WEIGHT_FORMATS.get(spec.gpu_generation)
    options, not_native = [], []
    # The GPU's own formats first, largest first; llama.cpp's GGUF files after them.
    for fmt in sorted(formats or WEIGHT_FORMATS, key=lambda fmt: (fmt.is_gguf, -fmt.bits_per_weight)):
        # A GGUF file means llama.cpp: the engine guide rules it out for several GPUs, and it serves one
        # local user, not many sequences at once.
        if fmt.bits_per_weight >= spec.bits_per_weight or (fmt.is_gguf and (spec.devices > 1 or spec.concurrency > 1)):
            continue
        if native is not None and not fmt.is_gguf and fmt.slug not in native:
            not_native.append(fmt.name)
            continue
        fits, total = _fits(spec, fmt.bits_per_weight, spec.devices)
        if fits:
            options.append(FormatOption(fmt.slug, fmt.name, fmt.bits_per_weight, total / GIB))
    devices_needed = None if spec.unified_memory else next(
        (count for count in tensor_parallel_sizes(spec.attention_heads)
         if count > spec.devices and _fits(spec, spec.bits_per_weight, count)[0]),
        None,
    )
    expert_offload = None if ruled_out else _expert_offload(spec)
    # For MoE models llama.cpp's own help points to --n-cpu-moe rather than splitting whole layers.
    offload = None if ruled_out or expert_offload else _offload(spec)
    return WhatWouldFit(kv_cache=kv_option, kv_cache_tried=kv_tried, formats=options[:3],
                        formats_not_native=not_native, devices_needed=devices_needed, offload=offload,
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
    gpu_bytes = active_shared + active_experts * (1 - cpu_share) + _kv_per_sequence(spec, spec.context_tokens)
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
    replicas = _kv_replicas(spec, spec.devices)
    total = weights + kv_cache + overhead
    fits = total <= capacity
    free_for_kv = capacity - weights - overhead
    max_context, model_limit = _largest_context(spec, free_for_kv, replicas)
    sequence = _kv_per_sequence(spec, spec.context_tokens)
    max_concurrency = max(0, int(free_for_kv // (sequence * replicas)))
    bandwidth = spec.bandwidth_gb_s * GB * spec.devices
    # One decode step reads the active weights once for the whole batch and each sequence's own KV cache
    # (every replica of it, each on its own device).
    single_bytes = active + sequence * replicas
    batch_bytes = active + sequence * replicas * spec.concurrency
    sizes = tensor_parallel_sizes(spec.attention_heads)
    # A layer split keeps one copy of the cache and reads the devices' shares one after another.
    layer_split = spec.bandwidth_gb_s * GB / (active + sequence) if fits and spec.devices > 1 else None
    return FitResult(
        weights_gib=weights / GIB,
        active_weights_gib=active / GIB,
        kv_per_token_bytes=_kv_per_token(spec),
        kv_window_bytes_per_sequence=_window_per_token(spec) * (spec.sliding_window or 0),
        linear_state_bytes_per_sequence=_linear_state(spec),
        kv_cache_gib=kv_cache / GIB,
        kv_replicas=replicas,
        overhead_gib=overhead / GIB,
        overhead_kind="working-set" if spec.unified_memory else "engine",
        total_gib=total / GIB,
        capacity_gib=capacity / GIB,
        headroom_gib=(capacity - total) / GIB,
        fits=fits,
        max_context_tokens=max_context,
        max_context_is_model_limit=model_limit,
        max_concurrency=max_concurrency,
        bytes_per_token_gb=single_bytes / GB,
        decode_ceiling_tps=decode_ceiling(bandwidth_gb_s=bandwidth / GB, bytes_per_token=single_bytes) if fits else None,
        aggregate_ceiling_tps=bandwidth / batch_bytes * spec.concurrency if fits else None,
        layer_split_ceiling_tps=layer_split,
        is_moe=spec.active_params_b is not None and spec.active_params_b < spec.params_b,
        tensor_parallel_sizes=sizes,
        devices_valid_for_tensor_parallel=spec.devices in sizes,
        what_would_fit=None if fits else what_would_fit(spec),
    )


def decode_ceiling(*, bandwidth_gb_s: float, bytes_per_token: float) -> float:
    """Upper bound on tokens/s for one sequence when every token must stream `bytes_per_token` from memory."""
    return bandwidth_gb_s * GB / bytes_per_token
