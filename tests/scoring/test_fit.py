"""The fit calculator against hand-worked cases, the seeds' figures, and its monotonic properties."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.fit import (
    MODEL_PRESETS_BY_SLUG,
    WEIGHT_FORMATS_BY_SLUG,
    FitError,
    FitInput,
    calculate,
    decode_ceiling,
    kv_bytes_per_token,
)

H100_SXM = {"memory_gb": 80.0, "bandwidth_gb_s": 3350.0}  # seed 000: "H100 SXM lists 3.35 TB/s"
M3_ULTRA = {"memory_gb": 512.0, "bandwidth_gb_s": 819.0}  # seed 000: "M3 Ultra offers up to 819 GB/s"


def preset_input(slug: str, fmt: str, **overrides) -> FitInput:
    preset = MODEL_PRESETS_BY_SLUG[slug]
    values = {
        "params_b": preset.params_b, "active_params_b": preset.active_params_b, "layers": preset.layers,
        "kv_heads": preset.kv_heads, "head_dim": preset.head_dim,
        "bits_per_weight": WEIGHT_FORMATS_BY_SLUG[fmt].bits_per_weight,
        "context_tokens": 8192, "concurrency": 1, **H100_SXM,
    }
    values.update(overrides)
    return FitInput(**values)


def test_llama_3_1_8b_bf16_on_h100_by_hand():
    result = calculate(preset_input("llama-3.1-8b", "bf16"))

    # 8.03e9 params x 2 bytes; KV: 2 x 32 layers x 8 heads x 128 dims x 2 bytes = 131,072 bytes per token.
    assert result.weights_gb == pytest.approx(16.06)
    assert result.kv_per_token_bytes == 131_072
    assert result.kv_cache_gb == pytest.approx(131_072 * 8192 / 1e9)  # 1.0737 GB
    assert result.overhead_gb == pytest.approx(0.5 + 0.05 * 16.06)
    assert result.total_gb == pytest.approx(16.06 + 1.073741824 + 1.303)
    assert result.fits and result.headroom_gb == pytest.approx(80 - result.total_gb)
    # 3,350 GB/s / (16.06 GB + 1.0737 GB) per token.
    assert result.decode_ceiling_tps == pytest.approx(3350 / (16.06 + 1.073741824))


def test_largest_context_and_concurrency_on_a_24_gb_card_by_hand():
    result = calculate(preset_input("llama-3.1-8b", "bf16", memory_gb=24.0, bandwidth_gb_s=1008.0))

    free_bytes = (24 - 16.06 - 1.303) * 1e9
    assert result.max_context_tokens == int(free_bytes // 131_072)  # 50,636 tokens
    assert result.max_concurrency == int(free_bytes // (131_072 * 8192))  # 6 sequences of 8k
    at_limit = calculate(preset_input("llama-3.1-8b", "bf16", memory_gb=24.0, bandwidth_gb_s=1008.0,
                                      context_tokens=result.max_context_tokens))
    beyond = calculate(preset_input("llama-3.1-8b", "bf16", memory_gb=24.0, bandwidth_gb_s=1008.0,
                                    context_tokens=result.max_context_tokens + 1))
    assert at_limit.fits and not beyond.fits


def test_seed_004_seven_b_at_int4_needs_about_4_to_6_gb_and_fits_8_gb():
    # Seed 004 FAQ: "with INT4 a 7B model generally needs about 4-6 GB ... an 8 GB GPU is enough".
    for fmt in ("int4-g128", "q4_k_m"):
        result = calculate(preset_input("mistral-7b", fmt, context_tokens=4096, memory_gb=8.0, bandwidth_gb_s=448.0))
        assert 4.0 <= result.total_gb <= 6.0, fmt
        assert result.fits, fmt


def test_seed_004_seven_b_at_fp16_needs_about_14_gb_and_a_16_gb_gpu():
    # Seed 004: "for FP16 you would need something close to 14 GB, making a 16 GB GPU the minimum".
    seven_b = dataclasses.replace(preset_input("mistral-7b", "bf16", context_tokens=4096), params_b=7.0)
    assert calculate(seven_b).weights_gb == pytest.approx(14.0)
    assert calculate(dataclasses.replace(seven_b, memory_gb=16.0)).fits
    assert not calculate(dataclasses.replace(seven_b, memory_gb=12.0)).fits


def test_seed_000_decode_ceiling_follows_bandwidth_h100_against_m3_ultra():
    # Seed 000: "VRAM decides the fit; bandwidth decides decode speed": same model, same bytes per token.
    h100 = calculate(preset_input("llama-3.1-70b", "fp8", **H100_SXM))
    m3_ultra = calculate(preset_input("llama-3.1-70b", "fp8", **M3_ULTRA))

    assert h100.decode_ceiling_tps / m3_ultra.decode_ceiling_tps == pytest.approx(3350 / 819)
    assert h100.bytes_per_token_gb == pytest.approx(m3_ultra.bytes_per_token_gb)


def test_gguf_bits_per_weight_match_their_sources():
    assert WEIGHT_FORMATS_BY_SLUG["q8_0"].bits_per_weight == 34 * 8 / 32  # 32 int8 + one FP16 scale
    assert WEIGHT_FORMATS_BY_SLUG["q4_0"].bits_per_weight == 18 * 8 / 32  # 16 bytes of nibbles + FP16 scale
    assert WEIGHT_FORMATS_BY_SLUG["q4_k_m"].bits_per_weight == 4.84  # llama.cpp quantize README, Llama 2 7B


def test_moe_memory_counts_all_weights_decode_counts_active_ones():
    result = calculate(preset_input("mixtral-8x7b", "bf16", context_tokens=1))

    assert result.is_moe
    assert result.weights_gb == pytest.approx(46.7 * 2)
    assert result.active_weights_gb == pytest.approx(12.9 * 2)
    dense = calculate(dataclasses.replace(preset_input("mixtral-8x7b", "bf16", context_tokens=1),
                                          active_params_b=None))
    assert dense.total_gb == pytest.approx(result.total_gb)
    assert result.decode_ceiling_tps / dense.decode_ceiling_tps == pytest.approx(
        dense.bytes_per_token_gb / result.bytes_per_token_gb
    )


def test_devices_pool_memory_and_bandwidth():
    one = calculate(preset_input("llama-3.1-70b", "bf16"))
    eight = calculate(preset_input("llama-3.1-70b", "bf16", devices=8))

    assert not one.fits and eight.fits
    assert eight.decode_ceiling_tps == pytest.approx(8 * one.decode_ceiling_tps)


@pytest.mark.parametrize(("field", "value"), [("params_b", 0), ("layers", -1), ("memory_gb", float("nan")),
                                              ("bandwidth_gb_s", 0), ("active_params_b", 500.0)])
def test_invalid_inputs_name_the_field(field, value):
    with pytest.raises(FitError) as caught:
        dataclasses.replace(preset_input("llama-3.1-8b", "bf16"), **{field: value})

    assert field in caught.value.errors


base_inputs = st.builds(
    FitInput,
    params_b=st.floats(0.1, 1000), layers=st.integers(1, 160), kv_heads=st.integers(1, 128),
    head_dim=st.sampled_from([64, 80, 96, 128, 256]), bits_per_weight=st.sampled_from([2.625, 4.25, 4.84, 8.0, 16.0]),
    context_tokens=st.integers(1, 1_000_000), concurrency=st.integers(1, 512), memory_gb=st.floats(1, 2000),
    bandwidth_gb_s=st.floats(10, 10_000), devices=st.integers(1, 16), kv_bytes_per_element=st.sampled_from([1.0, 2.0]),
)
PROPERTY = settings(max_examples=200, deadline=None)


@PROPERTY
@given(spec=base_inputs, factor=st.floats(1.01, 10))
def test_memory_grows_with_parameters(spec, factor):
    assert calculate(dataclasses.replace(spec, params_b=spec.params_b * factor)).total_gb > calculate(spec).total_gb


@PROPERTY
@given(spec=base_inputs, extra=st.integers(1, 100_000))
def test_memory_grows_with_context(spec, extra):
    longer = dataclasses.replace(spec, context_tokens=spec.context_tokens + extra)
    assert calculate(longer).total_gb > calculate(spec).total_gb


@PROPERTY
@given(spec=base_inputs, extra=st.integers(1, 64))
def test_memory_grows_with_concurrency(spec, extra):
    wider = dataclasses.replace(spec, concurrency=spec.concurrency + extra)
    assert calculate(wider).total_gb > calculate(spec).total_gb


@PROPERTY
@given(spec=base_inputs, factor=st.floats(0.1, 10))
def test_decode_ceiling_scales_with_bandwidth(spec, factor):
    scaled = dataclasses.replace(spec, bandwidth_gb_s=spec.bandwidth_gb_s * factor)
    assert calculate(scaled).decode_ceiling_tps == pytest.approx(calculate(spec).decode_ceiling_tps * factor)


@PROPERTY
@given(bandwidth=st.floats(10, 10_000), bytes_per_token=st.floats(1e6, 1e12), factor=st.floats(0.1, 10))
def test_decode_ceiling_is_inverse_to_bytes_per_token(bandwidth, bytes_per_token, factor):
    base = decode_ceiling(bandwidth_gb_s=bandwidth, bytes_per_token=bytes_per_token)
    assert decode_ceiling(bandwidth_gb_s=bandwidth, bytes_per_token=bytes_per_token * factor) == pytest.approx(
        base / factor
    )


@PROPERTY
@given(spec=base_inputs)
def test_fewer_bits_per_weight_never_slow_the_ceiling(spec):
    halved = dataclasses.replace(spec, bits_per_weight=spec.bits_per_weight / 2)
    assert calculate(halved).decode_ceiling_tps > calculate(spec).decode_ceiling_tps


def test_kv_bytes_per_token_formula():
    assert kv_bytes_per_token(layers=80, kv_heads=8, head_dim=128, bytes_per_element=2) == 2 * 80 * 8 * 128 * 2
