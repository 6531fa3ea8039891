"""The wizard's answers follow the seeds: every hardware recipe and every line of the one-page guide.

Expected picks are read off the seed text, quoted (translated) in each case's id or comment:
seed 000 = the engine guide, seed 001 = the course lesson built on it.
"""
from __future__ import annotations

import pytest

from scoring.profile import Profile
from scoring.ranking import recommend
from scoring.rules import GUIDE_RULES, RECIPES, RECIPES_BY_HARDWARE


def engines(result) -> list[str]:
    return [item.tool for item in result.results if item.kind != "provider"]


# (profile, expected leading engines in order) — each from a recipe line of seed 000.
RECIPE_CASES = [
    pytest.param(
        Profile(hardware="cpu_server"), ["llama-cpp", "openvino-genai", "onnxruntime-genai"],
        id="000 CPU-only server: llama.cpp first; OpenVINO for Xeon; ONNX Runtime GenAI for app/ONNX",
    ),
    pytest.param(
        Profile(hardware="cpu_server", quantization="onnx"), ["onnxruntime-genai"],
        id="000 CPU-only server: ONNX Runtime GenAI for ONNX deployment",
    ),
    pytest.param(
        Profile(hardware="mac"), ["mlx", "mlx-lm", "llama-cpp"],
        id="000 MacBook/Mac Studio: MLX / MLX-LM for Mac-native workflows; llama.cpp for GGUF",
    ),
    pytest.param(
        Profile(hardware="mac", quantization="gguf"), ["llama-cpp"],
        id="000 MacBook/Mac Studio: llama.cpp for GGUF portability",
    ),
    pytest.param(
        Profile(hardware="rtx_single"), ["exllamav2", "llama-cpp", "vllm"],
        id="000 single RTX 3090/4090/5090: ExLlamaV2 for EXL2; llama.cpp for GGUF; vLLM if serving several",
    ),
    pytest.param(
        Profile(hardware="rtx_single", quantization="gguf"), ["llama-cpp"],
        id="000 single RTX: llama.cpp for GGUF or portability",
    ),
    pytest.param(
        Profile(hardware="rtx_single", fits_fast_memory="unified_only"), ["llama-cpp"],
        id="000 llama.cpp verdict: use it when hybrid CPU+GPU offload matters (model exceeds the card)",
    ),
    pytest.param(
        Profile(hardware="rtx_single", deployment="production", concurrency=16), ["vllm"],
        id="000 single RTX: vLLM if serving several users",
    ),
    pytest.param(
        Profile(hardware="rtx_multi"), ["exllamav3", "vllm", "sglang"],
        id="000 two to four RTX: ExLlamaV3 multi-GPU/MoE; vLLM if serving matters; SGLang for routing/long ctx",
    ),
    pytest.param(
        Profile(hardware="rtx_multi", deployment="production", concurrency=8), ["vllm"],
        id="000 two to four RTX: vLLM if serving behaviour matters",
    ),
    pytest.param(
        Profile(hardware="rtx_multi", context_tokens=131072), ["sglang"],
        id="000 two to four RTX: SGLang if testing long-context patterns",
    ),
    pytest.param(
        Profile(hardware="nvidia_hopper_node", deployment="production"), ["vllm", "sglang"],
        id="000 8xH100/H200: start with vLLM or SGLang",
    ),
    pytest.param(
        Profile(hardware="nvidia_hopper_node", deployment="production", optimize_for="throughput"),
        ["vllm", "sglang", "tensorrt-llm"],
        id="000 8xH100/H200: start with vLLM or SGLang; evaluate TensorRT-LLM if performance justifies tuning",
    ),
    pytest.param(
        Profile(hardware="nvidia_hopper_node", deployment="fleet"), ["vllm", "nvidia-dynamo"],
        id="000 8xH100/H200: Dynamo on top of the engine when multi-node orchestration becomes necessary",
    ),
    pytest.param(
        Profile(hardware="nvidia_blackwell", deployment="production"), ["tensorrt-llm", "sglang", "vllm"],
        id="000 B200/GB200/GB300: evaluate TensorRT-LLM, SGLang and vLLM",
    ),
    pytest.param(
        Profile(hardware="nvidia_blackwell", deployment="fleet"), ["tensorrt-llm", "nvidia-dynamo"],
        id="000 B200/GB200/GB300: add Dynamo to the engine for fleet orchestration",
    ),
    pytest.param(
        Profile(hardware="amd_instinct", deployment="production"), ["vllm", "sglang"],
        id="000 AMD MI300-MI355: start with vLLM or SGLang on ROCm",
    ),
    pytest.param(
        Profile(hardware="intel"), ["openvino-genai", "onnxruntime-genai"],
        id="000 Intel Xeon/Core Ultra/Arc: OpenVINO GenAI; ONNX Runtime GenAI if app embedding matters",
    ),
    pytest.param(
        Profile(hardware="browser_app"), ["mlc-llm", "onnxruntime-genai"],
        id="000 browser, mobile, native app: MLC LLM / WebLLM or ONNX Runtime GenAI",
    ),
]


# One profile per line of seed 000's one-page decision guide (seed 001's table is the same tree).
GUIDE_CASES = {
    "laptop-edge": Profile(hardware="laptop_edge"),  # "Laptop / edge device / unusual hardware → llama.cpp"
    "mac-first": Profile(hardware="mac"),  # "Mac-focused workflows → MLX / MLX-LM"
    "single-rtx": Profile(hardware="rtx_single"),  # "Local inference with a single RTX → ExLlamaV2"
    "multi-rtx": Profile(hardware="rtx_multi"),  # "2-4+ NVIDIA / CUDA GPUs → ExLlamaV3"
    "production": Profile(hardware="nvidia_hopper_node", deployment="production"),  # "General production → vLLM"
    "long-context-moe-routing": Profile(  # "Long context / MoE / routing → SGLang"
        hardware="nvidia_hopper_node", deployment="production", architecture="moe"
    ),
    "nvidia-max": Profile(hardware="nvidia_blackwell", deployment="production"),  # "Max NVIDIA → TensorRT-LLM"
    "cluster": Profile(hardware="nvidia_hopper_node", deployment="fleet"),  # "Cluster orchestration → Dynamo"
}


def test_every_guide_line_has_a_case():
    assert set(GUIDE_CASES) == {rule.id for rule in GUIDE_RULES}


@pytest.mark.parametrize("rule", GUIDE_RULES, ids=lambda rule: f"000 {rule.situation} -> {rule.tool}")
def test_one_page_guide_line_decides_top_pick(catalog, rule):
    result = recommend(GUIDE_CASES[rule.id], catalog)

    if catalog.tools[rule.tool].kind == "orchestration":
        # An orchestration layer is the answer together with the engine it runs, never alone.
        assert result.top.companion == rule.tool
        assert result.results[1].tool == rule.tool
    else:
        assert result.top.tool == rule.tool
    assert "Decided by the hardware recipe" in result.top.reasons[0].text
    assert result.top.reasons[0].source_key == "seed-000-engine-guide"


@pytest.mark.parametrize("quantization", ["gguf", "fp8", "awq", "any"])
def test_mac_answers_mlx_before_any_question_but_gguf(catalog, quantization):
    # Seed 001: "For a Mac, the answer is MLX before any other question"; seed 000's Mac recipe names
    # llama.cpp for GGUF portability, the one qualifier that changes the lead.
    result = recommend(Profile(hardware="mac", quantization=quantization, deployment="production"), catalog)

    assert result.top.tool == ("llama-cpp" if quantization == "gguf" else "mlx")
    assert "mlx-server-not-for-production" in {warning.code for warning in result.warnings}


def test_first_matching_condition_wins_over_later_ones(catalog):
    # MoE and throughput both hold on a Hopper node; SGLang's qualifier has the higher priority, and the fleet
    # adds Dynamo on top of it.
    result = recommend(Profile(hardware="nvidia_hopper_node", deployment="fleet", architecture="moe",
                               optimize_for="throughput"), catalog)

    assert engines(result)[:2] == ["sglang", "nvidia-dynamo"]
    assert result.top.companion == "nvidia-dynamo"


def test_runner_ups_say_why_they_lost(catalog):
    result = recommend(Profile(hardware="rtx_single"), catalog)

    runner_up = result.results[1]
    assert runner_up.lost_because.startswith("ExLlamaV2 leads because the recipe")
    assert "does not here" in runner_up.reasons[0].text


def test_llama_cpp_demoted_on_multi_gpu_hardware(catalog):
    # Seed 000: "Do NOT use [llama.cpp] with multiple GPUs".
    result = recommend(Profile(hardware="rtx_multi"), catalog)

    llama = next(item for item in result.results if item.tool == "llama-cpp")
    assert any(reason.rule == "guide:llama-cpp-multi-gpu" for reason in llama.reasons)
    assert engines(result).index("llama-cpp") > engines(result).index("exllamav2")


def test_recipe_use_case_orders_match_the_fixture():
    """The use-case pages (fixtures/use_cases.yaml) and the wizard list each recipe in the same order."""
    from pathlib import Path

    import yaml

    fixture = yaml.safe_load((Path(__file__).resolve().parents[2] / "fixtures" / "use_cases.yaml").read_text())
    by_slug = {row["slug"]: row for row in fixture["use_cases"]}
    for recipe in RECIPES:
        listed = [rec["tool"] for rec in by_slug[recipe.use_case]["recommendations"]]
        assert listed == [entry.tool for entry in recipe.entries], recipe.hardware
    assert set(RECIPES_BY_HARDWARE) >= {"cpu_server", "mac", "rtx_single", "rtx_multi", "nvidia_hopper_node",
                                        "nvidia_blackwell", "amd_instinct", "intel", "browser_app"}
