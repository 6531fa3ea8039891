"""The fit calculator against hand-worked cases, the seeds' figures, and its monotonic properties."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.errors import InputError
from scoring.fit import (
    MODEL_PRESETS,
    MODEL_PRESETS_BY_SLUG,
    WEIGHT_FORMATS_BY_SLUG,
    FitInput,
    calculate,
    decode_ceiling,
    kv_bytes_per_token,
    tensor_parallel_sizes,
)

H100_SXM = {"memory_gib": 80.0, "bandwidth_gb_s": 3350.0}  # seed 000: "H100 SXM lists 3.35 TB/s"
M3_ULTRA = {"memory_gib": 512.0, "bandwidth_gb_s": 819.0}  # seed 000: "M3 Ultra offers up to 819 GB/s"
GIB = 2**30


def preset_input(slug: str, fmt: str | None = None, **overrides) -> FitInput:
    """The preset as the form and the API build it: in its published format unless `fmt` says otherwise."""
    preset = MODEL_PRESETS_BY_SLUG[slug]
    fmt = fmt or preset.native_format
    values = {
        "params_b": preset.params_b, "active_params_b": preset.active_params_b, "layers": preset.layers,
        "attention_heads": preset.attention_heads, "kv_heads": preset.kv_heads, "head_dim": preset.head_dim,
        "kv_latent_dim": preset.kv_latent_dim, "bits_per_weight": WEIGHT_FORMATS_BY_SLUG[fmt].bits_per_weight,
        "weight_format": fmt, "native_format": preset.native_format,
        "max_context_tokens": preset.max_context_tokens, "model_name": preset.name,
        "context_tokens": min(8192, preset.max_context_tokens), "concurrency": 1, **H100_SXM,
        "shared_params_b": preset.shared_params_b, "active_expert_params_b": preset.active_expert_params_b,
        "moe_layers": preset.moe_layers,
    }
    if fmt == preset.native_format:
        values.update(shared_bits_per_weight=preset.shared_bits_per_weight)
    values.update(overrides)
    return FitInput(**values)


def test_llama_3_1_8b_bf16_on_h100_by_hand():
    result = calculate(preset_input("llama-3.1-8b", "bf16"))

    # 8.03e9 params x 2 bytes; KV: 2 x 32 layers x 8 heads x 128 dims x 2 bytes = 131,072 bytes per token.
    assert result.weights_gib == pytest.approx(16.06e9 / GIB)
    assert result.kv_per_token_bytes == 131_072
    assert result.kv_cache_gib == pytest.approx(131_072 * 8192 / GIB)  # exactly 1 GiB
    assert result.overhead_gib == pytest.approx(8.0)  # vLLM's default leaves 10% of the 80 GiB
    assert result.total_gib == pytest.approx(16.06e9 / GIB + 1 + 8)
    assert result.fits and result.headroom_gib == pytest.approx(80 - result.total_gib)
    # 3,350 GB/s / (16.06 GB + 1.0737 GB) per token.
    assert result.decode_ceiling_tps == pytest.approx(3350 / (16.06 + 1.073741824))


def test_capacities_are_gib_as_cards_are_sold():
    # A "16 GB" card holds 16 GiB = 17.18 GB: 15.5 GB of weights and cache fit beside the 10% reserve.
    spec = preset_input("llama-3.1-8b", "bf16", params_b=7.0, context_tokens=1, memory_gib=16.0,
                        bandwidth_gb_s=448.0)
    result = calculate(spec)

    assert result.capacity_gib == 16.0
    assert result.capacity_gib * GIB == pytest.approx(17.18e9, rel=1e-3)
    assert result.weights_gib == pytest.approx(14e9 / GIB)  # 13.04 GiB
    assert result.fits


def test_largest_context_and_concurrency_on_a_24_gib_card_by_hand():
    result = calculate(preset_input("llama-3.1-8b", "bf16", memory_gib=24.0, bandwidth_gb_s=1008.0))

    free_bytes = 24 * GIB * 0.9 - 16.06e9
    assert result.max_context_tokens == int(free_bytes // 131_072)
    assert result.max_concurrency == int(free_bytes // (131_072 * 8192))
    at_limit = calculate(preset_input("llama-3.1-8b", "bf16", memory_gib=24.0, bandwidth_gb_s=1008.0,
                                      context_tokens=result.max_context_tokens))
    beyond = calculate(preset_input("llama-3.1-8b", "bf16", memory_gib=24.0, bandwidth_gb_s=1008.0,
                                    context_tokens=result.max_context_tokens + 1))
    assert at_limit.fits and not beyond.fits


def test_a_context_beyond_the_models_maximum_is_refused_with_a_message():
    with pytest.raises(InputError) as caught:
        preset_input("llama-2-7b", "q4_k_m", context_tokens=8192)

    assert "at most 4,096 tokens" in caught.value.errors["context_tokens"]
    assert "Llama 2 7B" in caught.value.errors["context_tokens"]


def test_seed_004_llama_2_7b_at_int4_fits_an_8_gb_card_at_its_own_context():
    # Seed 004 FAQ: "with INT4 a 7B model generally needs about 4-6 GB ... an 8 GB GPU is enough".
    result = calculate(preset_input("llama-2-7b", "q4_k_m", context_tokens=4096, memory_gib=8.0,
                                    bandwidth_gb_s=448.0))

    assert result.fits
    assert 4.0 <= result.weights_gib + result.kv_cache_gib <= 6.5


def test_seed_004_seven_b_at_int4_needs_about_4_to_6_gb():
    for fmt in ("int4-g128", "q4_k_m"):
        result = calculate(preset_input("mistral-7b", fmt, context_tokens=4096, memory_gib=8.0, bandwidth_gb_s=448.0))
        assert 4.0 <= (result.weights_gib + result.kv_cache_gib) * GIB / 1e9 <= 6.0, fmt
        assert result.fits, fmt


def test_seed_004_seven_b_at_fp16_needs_about_14_gb_and_a_16_gb_gpu():
    # Seed 004: "for FP16 you would need something close to 14 GB, making a 16 GB GPU the minimum".
    seven_b = dataclasses.replace(preset_input("mistral-7b", "bf16", context_tokens=1024), params_b=7.0)
    assert calculate(seven_b).weights_gib * GIB == pytest.approx(14.0e9)
    assert calculate(dataclasses.replace(seven_b, memory_gib=16.0)).fits
    assert not calculate(dataclasses.replace(seven_b, memory_gib=12.0)).fits


def test_seed_000_decode_ceiling_follows_bandwidth_h100_against_m3_ultra():
    # Seed 000: "VRAM decides the fit; bandwidth decides decode speed": same model, same bytes per token.
    h100 = calculate(preset_input("llama-3.1-70b", "fp8", **H100_SXM))
    m3_ultra = calculate(preset_input("llama-3.1-70b", "fp8", **M3_ULTRA))

    assert h100.decode_ceiling_tps / m3_ultra.decode_ceiling_tps == pytest.approx(3350 / 819)
    assert h100.bytes_per_token_gb == pytest.approx(m3_ultra.bytes_per_token_gb)


def test_no_decode_ceiling_when_it_does_not_fit_and_what_would_fit_instead():
    # Llama 3.1 70B at Q4_K_M (42.7 GB of weights) on one 24 GiB RTX 4090.
    result = calculate(preset_input("llama-3.1-70b", "q4_k_m", memory_gib=24.0, bandwidth_gb_s=1008.0,
                                    system_bandwidth_gb_s=89.6))

    assert not result.fits
    assert result.decode_ceiling_tps is None and result.aggregate_ceiling_tps is None
    options = result.what_would_fit
    assert all(option.bits_per_weight < 4.84 and option.total_gib <= 24.0 for option in options.formats)
    # 39.8 GiB of weights + 2.5 GiB of KV cache need two cards' 2 x 21.6 GiB after the reserve.
    assert options.devices_needed == 2
    assert calculate(preset_input("llama-3.1-70b", "q4_k_m", memory_gib=24.0, bandwidth_gb_s=1008.0,
                                  devices=2)).fits
    offload = options.offload
    assert 0 < offload.gpu_layers < 80
    # The split's ceiling sits between system-memory speed and VRAM speed, and costs a stated factor.
    assert offload.decode_ceiling_tps < 1008 / result.bytes_per_token_gb
    assert offload.slowdown > 1


def test_offload_cost_is_unknown_without_the_hosts_bandwidth():
    result = calculate(preset_input("llama-3.1-70b", "q4_k_m", memory_gib=24.0, bandwidth_gb_s=1008.0))

    assert result.what_would_fit.offload.decode_ceiling_tps is None


def test_gguf_bits_per_weight_match_their_sources():
    assert WEIGHT_FORMATS_BY_SLUG["q8_0"].bits_per_weight == 34 * 8 / 32  # 32 int8 + one FP16 scale
    assert WEIGHT_FORMATS_BY_SLUG["q4_0"].bits_per_weight == 18 * 8 / 32  # 16 bytes of nibbles + FP16 scale
    assert WEIGHT_FORMATS_BY_SLUG["q4_k_m"].bits_per_weight == 4.84  # llama.cpp quantize README, Llama 2 7B


def test_moe_memory_counts_all_weights_decode_counts_active_ones():
    result = calculate(preset_input("mixtral-8x7b", "bf16", context_tokens=1, devices=2))

    assert result.is_moe
    assert result.weights_gib * GIB == pytest.approx(46.7e9 * 2)
    assert result.active_weights_gib * GIB == pytest.approx(12.9e9 * 2)
    dense = calculate(dataclasses.replace(preset_input("mixtral-8x7b", "bf16", context_tokens=1, devices=2),
                                          active_params_b=None))
    assert dense.total_gib == pytest.approx(result.total_gib)
    assert result.decode_ceiling_tps / dense.decode_ceiling_tps == pytest.approx(
        dense.bytes_per_token_gb / result.bytes_per_token_gb
    )


def test_gpt_oss_shared_weights_count_at_bf16_as_released():
    # 114.70 B routed-expert parameters in MXFP4, the other 2.13 B in BF16 (derived from config.json:
    # 116.829 B total - 36 layers x 128 experts x 24,891,840 = 2.128 B); the card's checkpoint is 60.8 GiB.
    result = calculate(preset_input("gpt-oss-120b", "mxfp4", context_tokens=1))

    assert result.weights_gib * GIB == pytest.approx((114.70e9 * 4.25 + 2.13e9 * 16) / 8)
    assert result.weights_gib == pytest.approx(60.8, abs=0.3)
    small = calculate(preset_input("gpt-oss-20b", "mxfp4", context_tokens=1))
    assert small.weights_gib == pytest.approx(12.8, abs=0.3)  # the card's 12.8 GiB checkpoint
    assert calculate(preset_input("gpt-oss-120b", "mxfp4", memory_gib=80.0)).fits  # "fits one 80 GB GPU"


def test_latent_attention_caches_one_latent_per_layer():
    result = calculate(preset_input("deepseek-v3", "fp8", context_tokens=1000, devices=8, memory_gib=141.0))

    assert result.kv_per_token_bytes == 61 * 576 * 2


def test_devices_pool_memory_and_bandwidth():
    one = calculate(preset_input("llama-3.1-70b", "bf16"))
    eight = calculate(preset_input("llama-3.1-70b", "bf16", devices=8))
    eight_fast = calculate(preset_input("llama-3.1-70b", "bf16", devices=8, bandwidth_gb_s=6700.0))

    assert not one.fits and eight.fits
    assert eight_fast.decode_ceiling_tps == pytest.approx(2 * eight.decode_ceiling_tps)


@pytest.mark.parametrize(("field", "value"), [("params_b", 0), ("layers", -1), ("memory_gib", float("nan")),
                                              ("bandwidth_gb_s", 0), ("active_params_b", 500.0)])
def test_invalid_inputs_name_the_field(field, value):
    with pytest.raises(InputError) as caught:
        dataclasses.replace(preset_input("llama-3.1-8b", "bf16"), **{field: value})

    assert field in caught.value.errors


base_inputs = st.builds(
    FitInput,
    params_b=st.floats(0.1, 1000), layers=st.integers(1, 160), kv_heads=st.integers(1, 128),
    head_dim=st.sampled_from([64, 80, 96, 128, 256]), bits_per_weight=st.sampled_from([2.625, 4.25, 4.84, 8.0, 16.0]),
    context_tokens=st.integers(1, 1_000_000), concurrency=st.integers(1, 512), memory_gib=st.floats(1, 2000),
    bandwidth_gb_s=st.floats(10, 10_000), devices=st.integers(1, 16), kv_bytes_per_element=st.sampled_from([1.0, 2.0]),
)
# Memory large enough that every generated case fits, so a decode ceiling exists.
fitting_inputs = base_inputs.map(lambda spec: dataclasses.replace(spec, memory_gib=1e9))
PROPERTY = settings(max_examples=200, deadline=None)


@PROPERTY
@given(spec=base_inputs, factor=st.floats(1.01, 10))
def test_memory_grows_with_parameters(spec, factor):
    assert calculate(dataclasses.replace(spec, params_b=spec.params_b * factor)).total_gib > calculate(spec).total_gib


@PROPERTY
@given(spec=base_inputs, extra=st.integers(1, 100_000))
def test_memory_grows_with_context(spec, extra):
    longer = dataclasses.replace(spec, context_tokens=spec.context_tokens + extra)
    assert calculate(longer).total_gib > calculate(spec).total_gib


@PROPERTY
@given(spec=base_inputs, extra=st.integers(1, 64))
def test_memory_grows_with_concurrency(spec, extra):
    wider = dataclasses.replace(spec, concurrency=spec.concurrency + extra)
    assert calculate(wider).total_gib > calculate(spec).total_gib


@PROPERTY
@given(spec=fitting_inputs, factor=st.floats(0.1, 10))
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
@given(spec=fitting_inputs)
def test_fewer_bits_per_weight_never_slow_the_ceiling(spec):
    halved = dataclasses.replace(spec, bits_per_weight=spec.bits_per_weight / 2)
    assert calculate(halved).decode_ceiling_tps > calculate(spec).decode_ceiling_tps


@PROPERTY
@given(spec=base_inputs)
def test_a_ceiling_only_when_it_fits(spec):
    result = calculate(spec)
    assert (result.decode_ceiling_tps is not None) == result.fits
    assert (result.what_would_fit is None) == result.fits


def test_kv_bytes_per_token_formula():
    assert kv_bytes_per_token(layers=80, kv_heads=8, head_dim=128, bytes_per_element=2) == 2 * 80 * 8 * 128 * 2


RTX_4090 = {"memory_gib": 24.0, "bandwidth_gb_s": 1008.0}  # catalog: NVIDIA Ada whitepaper
DDR5_5600_DUAL_CHANNEL = 89.6  # 5,600 MT/s x 8 bytes x 2 channels, the form's own example


def test_gpt_oss_120b_fits_one_h100_in_its_published_mxfp4():
    # README: "native MXFP4 precision for the MoE layer, making gpt-oss-120b run on a single H100 GPU".
    spec = preset_input("gpt-oss-120b")
    result = calculate(spec)

    assert spec.weight_format == "mxfp4" and spec.shared_bits_per_weight == 16.0
    assert result.fits and result.decode_ceiling_tps > 0
    # The card's 60.8 GiB checkpoint (65.3 GB); the "about 63 GB" is a rounded secondary figure.
    assert result.weights_gib == pytest.approx(60.8, abs=0.3)


@pytest.mark.parametrize("preset", MODEL_PRESETS, ids=lambda preset: preset.slug)
def test_every_preset_is_consistent(preset):
    assert preset.native_format in WEIGHT_FORMATS_BY_SLUG
    assert preset.native_format_source.startswith("https://")
    assert preset.attention_heads >= preset.kv_heads or preset.kv_latent_dim
    if preset.is_moe:
        assert preset.active_expert_params_b < preset.active_params_b < preset.params_b
        assert 0 < preset.shared_params_b < preset.params_b and 0 < preset.moe_layers <= preset.layers
    else:
        assert preset.shared_params_b is None and preset.moe_layers is None


def test_a_moe_model_that_misses_a_24_gb_card_keeps_its_experts_in_system_memory():
    result = calculate(preset_input("gpt-oss-120b", **RTX_4090, system_bandwidth_gb_s=DDR5_5600_DUAL_CHANNEL))

    assert not result.fits
    experts = result.what_would_fit.expert_offload
    assert result.what_would_fit.offload is None, "MoE: --n-cpu-moe, not whole layers"
    # 24 GiB less the 10% reserve, 4.26 GB of BF16 shared weights and 0.56 GiB of KV cache leaves room for
    # 10 of 36 expert layers (1.69 GB each at MXFP4), so the experts of the first 26 go to system memory.
    assert (experts.n_cpu_moe, experts.expert_layers_on_cpu, experts.moe_layers) == (26, 26, 36)
    assert not experts.all_experts_on_cpu
    assert experts.gpu_memory_gib <= 24.0
    per_layer_gib = 114.70e9 * 4.25 / 8 / 36 / GIB
    assert experts.system_memory_gib == pytest.approx(26 * per_layer_gib)
    # Per token: 26/36 of the 3.58 B active expert parameters stream from system memory.
    assert experts.system_bytes_per_token_gb == pytest.approx(26 / 36 * 3.58 * 4.25 / 8)
    seconds = (experts.gpu_bytes_per_token_gb / 1008 + experts.system_bytes_per_token_gb / DDR5_5600_DUAL_CHANNEL)
    assert experts.decode_ceiling_tps == pytest.approx(1 / seconds)
    assert experts.decode_ceiling_tps < min(experts.system_only_ceiling_tps, experts.gpu_only_ceiling_tps)


def test_expert_offload_counts_dense_leading_layers_in_the_flag():
    # DeepSeek-V3's first 3 layers have no experts: --n-cpu-moe counts them, so N = 3 + expert layers moved.
    result = calculate(preset_input("deepseek-v3", "q2_k", memory_gib=96.0, bandwidth_gb_s=1792.0))

    experts = result.what_would_fit.expert_offload
    assert experts.n_cpu_moe == 3 + experts.expert_layers_on_cpu and experts.moe_layers == 58


def test_a_dense_model_that_misses_a_24_gb_card_splits_layers_and_keeps_no_experts_anywhere():
    result = calculate(preset_input("llama-3.3-70b", "q4_k_m", **RTX_4090))

    assert result.what_would_fit.expert_offload is None
    assert 0 < result.what_would_fit.offload.gpu_layers < 80


def test_llama_3_3_70b_on_eight_h100_proposes_no_llama_cpp_offload():
    # The engine guide (seed 000): llama.cpp "NÃO use com Múltiplas GPUs" (do not use with multiple GPUs).
    result = calculate(preset_input("llama-3.3-70b", devices=8, context_tokens=131_072, concurrency=64))

    options = result.what_would_fit
    assert not result.fits
    assert options.offload is None and options.expert_offload is None
    assert "engine guide rules llama.cpp out" in options.offload_ruled_out
    assert not any(WEIGHT_FORMATS_BY_SLUG[option.slug].is_gguf for option in options.formats)


def test_unified_memory_offers_no_offload():
    result = calculate(preset_input("gpt-oss-120b", memory_gib=64.0, bandwidth_gb_s=273.0, unified_memory=True))

    assert result.what_would_fit.offload is None and result.what_would_fit.expert_offload is None
    assert "unified memory" in result.what_would_fit.offload_ruled_out


def test_tensor_parallel_sizes_are_powers_of_two_dividing_the_heads():
    assert tensor_parallel_sizes(64) == [1, 2, 4, 8, 16, 32, 64]
    assert tensor_parallel_sizes(40) == [1, 2, 4, 8]  # Qwen3 14B: vLLM refuses 3, 6 and 7
    assert tensor_parallel_sizes(None) == [1, 2, 4, 8, 16, 32, 64]


def test_three_devices_are_flagged_and_never_suggested():
    # Qwen3 32B in BF16 (61.1 GiB of weights + 2 GiB of KV cache) would squeeze into three 24 GiB cards
    # (3 x 21.6 GiB after the reserve), but vLLM refuses 3-way tensor parallelism over 64 heads: 4 it is.
    result = calculate(preset_input("qwen3-32b", **RTX_4090))
    assert result.what_would_fit.devices_needed == 4
    three = calculate(preset_input("qwen3-32b", **RTX_4090, devices=3))
    assert three.fits and not three.devices_valid_for_tensor_parallel
    assert three.tensor_parallel_sizes == [1, 2, 4, 8, 16, 32, 64]


@PROPERTY
@given(preset=st.sampled_from(MODEL_PRESETS), memory=st.sampled_from([8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 80.0, 141.0]),
       devices=st.sampled_from([1, 2, 3, 4, 6]), fmt=st.sampled_from(["bf16", "fp8", "q4_k_m", "mxfp4", "q2_k"]))
def test_suggested_device_counts_are_valid_tensor_parallel_sizes(preset, memory, devices, fmt):
    result = calculate(preset_input(preset.slug, fmt, memory_gib=memory, devices=devices))

    needed = result.what_would_fit and result.what_would_fit.devices_needed
    if needed:
        assert needed > devices and needed & (needed - 1) == 0, "a power of two"
        assert preset.attention_heads % needed == 0, "vLLM: it must divide the attention heads"


def test_kv_cache_is_replicated_past_as_many_devices_as_kv_heads():
    # vLLM's get_num_kv_heads: max(1, KV heads // TP) per GPU, and 1 (the whole latent) with MLA.
    qwen = calculate(preset_input("qwen3-235b-a22b", devices=8))
    assert qwen.kv_replicas == 2.0  # 4 KV heads on 8 GPUs
    assert qwen.kv_cache_gib == pytest.approx(2 * 192_512 * 8192 / GIB)
    assert calculate(preset_input("qwen3-235b-a22b", devices=4)).kv_replicas == 1.0
    assert calculate(preset_input("deepseek-v3", devices=8, memory_gib=141.0)).kv_replicas == 8.0
