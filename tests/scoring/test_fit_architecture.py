"""The fit calculator reads each model's own attention layout: sliding windows, local/global layers, latent (MLA)
caches and linear-attention state; and it suggests what a practitioner tries first."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.fit import (
    APPLE_WORKING_SET_FRACTION,
    LINEAR_STATE_BYTES,
    MODEL_PRESETS,
    MODEL_PRESETS_BY_SLUG,
    NATIVE_WEIGHT_FORMATS,
    PRESETS_BY_CATALOG_MODEL,
    WEIGHT_FORMATS_BY_SLUG,
    FitInput,
    calculate,
)

GIB = 2**30
H100 = {"memory_gib": 80.0, "bandwidth_gb_s": 3350.0, "gpu_generation": "hopper"}
RTX_4090 = {"memory_gib": 24.0, "bandwidth_gb_s": 1008.0, "gpu_generation": "ada"}
M3_ULTRA = {"memory_gib": 512.0, "bandwidth_gb_s": 819.0, "gpu_generation": "apple", "unified_memory": True}


def preset_input(slug: str, fmt: str | None = None, **overrides) -> FitInput:
    """The preset as the form builds it, per-layer attention included."""
    preset = MODEL_PRESETS_BY_SLUG[slug]
    fmt = fmt or preset.native_format
    values = {
        "params_b": preset.params_b, "active_params_b": preset.active_params_b, "layers": preset.layers,
        "attention_heads": preset.attention_heads, "kv_heads": preset.kv_heads, "head_dim": preset.head_dim,
        "kv_latent_dim": preset.kv_latent_dim, "bits_per_weight": WEIGHT_FORMATS_BY_SLUG[fmt].bits_per_weight,
        "weight_format": fmt, "native_format": preset.native_format, "max_context_tokens": preset.max_context_tokens,
        "model_name": preset.name, "context_tokens": min(8192, preset.max_context_tokens), "concurrency": 1,
        "shared_params_b": preset.shared_params_b, "active_expert_params_b": preset.active_expert_params_b,
        "moe_layers": preset.moe_layers, "sliding_window": preset.sliding_window,
        "sliding_layers": preset.sliding_layers, "linear_layers": preset.linear_layers,
        "linear_state_elements": preset.linear_state_elements,
        "shared_bits_per_weight": preset.shared_bits_per_weight if fmt == preset.native_format else None,
        **H100,
    }
    values.update(overrides)
    return FitInput(**values)


def test_gpt_oss_120b_on_one_h100_counts_its_sliding_window_layers():
    result = calculate(preset_input("gpt-oss-120b", context_tokens=8192, concurrency=50))

    # 18 full-attention layers keep every token: 2 x 18 x 8 KV heads x 64 x 2 bytes = 36,864 bytes per token;
    # the 18 sliding layers keep at most 128 tokens at the same rate.
    assert result.kv_per_token_bytes == 36_864
    assert result.kv_window_bytes_per_sequence == 36_864 * 128
    assert result.kv_cache_gib == pytest.approx(36_864 * (8192 + 128) * 50 / GIB)
    assert 14.0 < result.kv_cache_gib < 14.5
    assert not result.fits and result.max_concurrency == 39


def test_gpt_oss_120b_suggests_an_fp8_kv_cache_before_anything_else():
    wwf = calculate(preset_input("gpt-oss-120b", context_tokens=8192, concurrency=50)).what_would_fit

    assert wwf.kv_cache.slug == "fp8" and wwf.kv_cache.headroom_gib > 0
    # 50 sequences are a served endpoint: no GGUF file, no CPU offload.
    assert not any(option.slug.startswith("q") for option in wwf.formats)
    assert wwf.offload is None and wwf.expert_offload is None and "50 concurrent" in wwf.offload_ruled_out


def test_gemma_3_local_layers_stop_growing_at_their_window():
    short = calculate(preset_input("gemma-3-27b", context_tokens=1024))
    long = calculate(preset_input("gemma-3-27b", context_tokens=32_768))

    # 10 global layers: 2 x 10 x 16 x 128 x 2 = 81,920 bytes per token; 52 local ones hold 1,024 tokens at most.
    assert long.kv_per_token_bytes == 81_920
    local = 2 * 52 * 16 * 128 * 2 * 1024
    assert long.kv_cache_gib == pytest.approx((81_920 * 32_768 + local) / GIB)
    assert short.kv_cache_gib == pytest.approx((81_920 + 2 * 52 * 16 * 128 * 2) * 1024 / GIB)


def test_deepseek_mla_caches_one_latent_per_layer_and_every_gpu_keeps_it():
    one = calculate(preset_input("deepseek-r1", context_tokens=32_768, devices=8, memory_gib=141.0))

    assert one.kv_per_token_bytes == 61 * (512 + 64) * 2
    assert one.kv_replicas == 8
    assert one.kv_cache_gib == pytest.approx(61 * 576 * 2 * 32_768 * 8 / GIB)


def test_qwen35_hybrid_keeps_a_constant_state_in_its_linear_layers():
    spec = preset_input("qwen3.5-35b-a3b", "bf16", context_tokens=4096)
    result = calculate(spec)

    # 10 gated-attention layers: 2 x 10 x 2 KV heads x 256 x 2 bytes = 20,480 bytes per token.
    assert result.kv_per_token_bytes == 20_480
    assert result.linear_state_bytes_per_sequence == 30 * 548_864 * LINEAR_STATE_BYTES
    assert result.kv_cache_gib == pytest.approx((20_480 * 4096 + 30 * 548_864 * 2) / GIB)


@settings(max_examples=60, deadline=None)
@given(context=st.integers(min_value=1, max_value=100_000), extra=st.integers(min_value=1, max_value=100_000))
def test_past_the_window_only_full_layers_grow(context, extra):
    for slug in ("gpt-oss-120b", "gemma-3-27b", "qwen3.5-35b-a3b", "mistral-7b"):
        preset = MODEL_PRESETS_BY_SLUG[slug]
        base = max(context, preset.sliding_window or 0)
        if base + extra > preset.max_context_tokens:
            continue
        shorter = calculate(preset_input(slug, "bf16", context_tokens=base))
        longer = calculate(preset_input(slug, "bf16", context_tokens=base + extra))
        assert longer.kv_cache_gib - shorter.kv_cache_gib == pytest.approx(
            shorter.kv_per_token_bytes * extra / GIB, rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(preset=st.sampled_from(MODEL_PRESETS), memory=st.floats(min_value=8, max_value=4096),
       concurrency=st.integers(min_value=1, max_value=64))
def test_largest_context_never_exceeds_the_models_own_limit(preset, memory, concurrency):
    spec = preset_input(preset.slug, concurrency=concurrency, memory_gib=memory)

    result = calculate(spec)

    assert 0 <= result.max_context_tokens <= preset.max_context_tokens
    if result.max_context_is_model_limit:
        assert result.max_context_tokens == preset.max_context_tokens


def test_qwen3_30b_on_one_h100_stops_at_its_context_limit():
    result = calculate(preset_input("qwen3-30b-a3b", "bf16"))

    assert result.max_context_tokens == 32_768 and result.max_context_is_model_limit


@settings(max_examples=80, deadline=None)
@given(preset=st.sampled_from(MODEL_PRESETS), generation=st.sampled_from(["ampere", "ada", "hopper", "cdna3"]),
       context=st.integers(min_value=1024, max_value=32_768))
def test_no_fp4_format_is_suggested_before_blackwell(preset, generation, context):
    spec = preset_input(preset.slug, "bf16", context_tokens=min(context, preset.max_context_tokens),
                        memory_gib=24.0, gpu_generation=generation)

    wwf = calculate(spec).what_would_fit

    if wwf is not None:
        suggested = {option.slug for option in wwf.formats}
        assert not suggested & {"nvfp4", "mxfp4"}
        assert suggested <= NATIVE_WEIGHT_FORMATS[generation] | {
            slug for slug, fmt in WEIGHT_FORMATS_BY_SLUG.items() if fmt.is_gguf}


def test_qwen3_32b_int4_at_32k_on_a_4090_tries_an_fp8_kv_cache_first():
    wwf = calculate(preset_input("qwen3-32b", "int4-g128", context_tokens=32_768, **RTX_4090)).what_would_fit

    assert wwf.kv_cache.slug == "fp8"
    assert wwf.kv_cache.headroom_gib == pytest.approx(1.37, abs=0.01)


def test_with_a_q8_kv_cache_an_ada_card_gets_no_nvfp4():
    spec = preset_input("qwen3-32b", "fp8", context_tokens=8192, kv_bytes_per_element=34 / 32, **RTX_4090)

    wwf = calculate(spec).what_would_fit

    assert {"NVFP4", "MXFP4"} <= set(wwf.formats_not_native)
    assert wwf.formats[0].slug == "int4-g128" and all(option.slug != "nvfp4" for option in wwf.formats)


def test_a_mac_keeps_within_macos_gpu_working_set():
    spec = preset_input("deepseek-v3", "q4_k_m", context_tokens=8192, **M3_ULTRA)

    result = calculate(spec)

    assert result.overhead_kind == "working-set"
    assert result.overhead_gib == pytest.approx(512 * (1 - APPLE_WORKING_SET_FRACTION))
    assert result.capacity_gib - result.overhead_gib == pytest.approx(384.0)


def test_a_mac_that_does_not_fit_gets_no_fp8_cache_and_no_more_devices():
    wwf = calculate(preset_input("deepseek-v3", "bf16", **M3_ULTRA)).what_would_fit

    assert wwf.kv_cache is None or wwf.kv_cache.slug != "fp8"
    assert wwf.devices_needed is None and "unified memory" in wwf.offload_ruled_out


def test_two_gpus_state_the_layer_split_ceiling_beside_tensor_parallelism():
    result = calculate(preset_input("qwen3-32b", "int4-g128", devices=2, **RTX_4090))

    # Tensor parallelism pools both cards' bandwidth; llama.cpp's default layer split reads them in turn.
    assert result.layer_split_ceiling_tps == pytest.approx(result.decode_ceiling_tps / 2, rel=0.01)
    assert calculate(preset_input("qwen3-32b", "int4-g128", **RTX_4090)).layer_split_ceiling_tps is None


def test_every_catalog_model_with_a_preset_names_one_geometry():
    assert PRESETS_BY_CATALOG_MODEL["gpt-oss-120b"].slug == "gpt-oss-120b"
    assert PRESETS_BY_CATALOG_MODEL["deepseek-r1-0528"].kv_latent_dim == 576
    assert PRESETS_BY_CATALOG_MODEL["qwen3-5-35b-a3b"].linear_layers == 30
