"""The engine guide's reasoning as data: the one-page decision guide and the hardware strategy recipes.

Every rule carries the seed it comes from. The wording is ours; the choices and their order are the
seeds'. For each hardware profile the recipe's qualified entries are tried in priority order and the
first whose condition holds decides the top pick; when none holds, the recipe's default leads.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scoring.profile import HARDWARE_CLASSES, Profile

# Catalog Source keys of the seed documents (created by the catalog fixtures).
ENGINE_GUIDE = "seed-000-engine-guide"
ENGINE_LESSON = "seed-001-engine-lesson"
COMPARISON = "seed-002-engine-comparison"
QUANTIZATION_GUIDE = "seed-004-quantization-guide"

Condition = Callable[[Profile], bool]


@dataclass(frozen=True)
class Citation:
    source_key: str
    locator: str


@dataclass(frozen=True)
class GuideRule:
    """One line of the one-page decision guide."""

    id: str
    situation: str
    tool: str
    citation: Citation


GUIDE_RULES: tuple[GuideRule, ...] = tuple(
    GuideRule(id=rule_id, situation=situation, tool=tool, citation=Citation(ENGINE_GUIDE, "One-page decision guide"))
    for rule_id, situation, tool in (
        ("laptop-edge", "Laptop, edge device or unusual hardware", "llama-cpp"),
        ("mac-first", "Mac-first workflows", "mlx"),
        ("single-rtx", "Local inference on one RTX card", "exllamav2"),
        ("multi-rtx", "Two to four or more NVIDIA / CUDA GPUs", "exllamav3"),
        ("production", "General production serving", "vllm"),
        ("long-context-moe-routing", "Long context, MoE or routing", "sglang"),
        ("nvidia-max", "Maximum NVIDIA performance", "tensorrt-llm"),
        ("cluster", "Cluster orchestration", "nvidia-dynamo"),
    )
)
GUIDE_RULES_BY_ID = {rule.id: rule for rule in GUIDE_RULES}


# What a recipe entry is for. Only picks can decide the top answer: an "evaluate" entry is a candidate to
# test against the pick for peak performance, and an orchestration layer runs on top of an engine.
PICK = "pick"
EVALUATE = "evaluate"
ORCHESTRATE = "orchestrate"


@dataclass(frozen=True)
class RecipeEntry:
    tool: str
    reason: str
    guide_rule: str | None = None
    when: Condition | None = None
    condition: str = ""
    priority: int = 0
    role: str = PICK


@dataclass(frozen=True)
class Recipe:
    """A hardware strategy recipe: entries in the order the guide lists them."""

    hardware: str
    title: str
    entries: tuple[RecipeEntry, ...]
    citation: Citation
    use_case: str

    def decide(self, profile: Profile) -> RecipeEntry:
        qualified = sorted((entry for entry in self.picks if entry.when), key=lambda entry: entry.priority)
        for entry in qualified:
            if entry.when(profile):
                return entry
        return next(entry for entry in self.picks if entry.when is None)

    @property
    def picks(self) -> tuple[RecipeEntry, ...]:
        return tuple(entry for entry in self.entries if entry.role == PICK)

    def orchestration_for(self, profile: Profile) -> RecipeEntry | None:
        """The orchestration layer the recipe adds for these answers, if any."""
        return next((entry for entry in self.entries if entry.role == ORCHESTRATE and entry.when
                     and entry.when(profile)), None)


def _gguf_or_portability(profile: Profile) -> bool:
    return profile.quantization == "gguf" or profile.optimize_for == "portability"


def _gguf_portability_or_offload(profile: Profile) -> bool:
    # The guide's llama.cpp verdict adds hybrid CPU+GPU offload to GGUF and portability.
    return _gguf_or_portability(profile) or profile.fits_fast_memory == "unified_only"


def _onnx(profile: Profile) -> bool:
    return profile.quantization == "onnx"


def _fleet(profile: Profile) -> bool:
    return profile.deployment == "fleet"


def _serving_many(profile: Profile) -> bool:
    return profile.serves_many


def _complex_serving(profile: Profile) -> bool:
    return profile.complex_serving


def _long_context_or_routing(profile: Profile) -> bool:
    return profile.long_context or profile.shared_prefixes


def _throughput(profile: Profile) -> bool:
    return profile.optimize_for == "throughput"


def _flexibility(profile: Profile) -> bool:
    return profile.optimize_for in {"portability", "developer_speed"}


def _recipe(hardware: str, use_case: str, title: str, *entries: RecipeEntry) -> Recipe:
    return Recipe(
        hardware=hardware,
        title=title,
        entries=entries,
        citation=Citation(ENGINE_GUIDE, f"Hardware strategy recipes: {title}"),
        use_case=use_case,
    )


RECIPES: tuple[Recipe, ...] = (
    _recipe(
        "cpu_server",
        "recipe-cpu-only-server",
        "CPU-only server",
        RecipeEntry("llama-cpp", "The guide's first choice for a server without a GPU: GGUF kernels tuned for "
                    "AVX/AVX2/AVX-512/AMX and ARM NEON.", guide_rule="laptop-edge"),
        RecipeEntry("openvino-genai", "Intel's optimized stack, named for Intel Xeon servers."),
        RecipeEntry("onnxruntime-genai", "Named for application or ONNX-based deployment.", when=_onnx,
                    condition="the model ships as ONNX"),
    ),
    _recipe(
        "mac",
        "recipe-mac",
        "MacBook / Mac Studio",
        RecipeEntry("mlx", "Apple's array framework runs natively on Metal and keeps weights in unified memory; "
                    "the guide answers MLX for a Mac before asking anything else.", guide_rule="mac-first"),
        RecipeEntry("mlx-lm", "The LLM package on top of MLX: Hugging Face Hub models, quantization, LoRA "
                    "fine-tuning and a local server."),
        RecipeEntry("llama-cpp", "Named for GGUF checkpoints and portability on a Mac.", when=_gguf_or_portability,
                    condition="you run GGUF files or need portability"),
    ),
    _recipe(
        "rtx_single",
        "recipe-single-rtx",
        "Single RTX 3090 / 4090 / 5090",
        RecipeEntry("exllamav2", "Tuned CUDA kernels for quantized EXL2 weights on one consumer card: the "
                    "enthusiast's local engine.", guide_rule="single-rtx"),
        RecipeEntry("llama-cpp", "Named for GGUF files or when portability matters; its hybrid CPU+GPU offload "
                    "also runs models that do not fit in the card's memory.", when=_gguf_portability_or_offload,
                    condition="you run GGUF files, need portability or must offload to system memory",
                    priority=2),
        RecipeEntry("vllm", "Named once the card serves several users: continuous batching and paged KV cache.",
                    guide_rule="production", when=_serving_many, condition="you serve several users", priority=1),
    ),
    _recipe(
        "rtx_multi",
        "recipe-two-to-four-rtx",
        "Two to four consumer RTX cards",
        RecipeEntry("exllamav3", "Tensor and expert parallelism on consumer cards for quantized multi-GPU and "
                    "local MoE inference (expect rough edges; not every model supports TP or EP).",
                    guide_rule="multi-rtx"),
        RecipeEntry("vllm", "Named when serving behaviour matters; the lesson measured about 4.4x more tokens/s on "
                    "the same pair of RTX 3090s after moving to vLLM with TP=2.", guide_rule="production",
                    when=_serving_many, condition="serving behaviour matters", priority=2),
        RecipeEntry("sglang", "Named when you are testing routing or long-context patterns.",
                    guide_rule="long-context-moe-routing", when=_long_context_or_routing,
                    condition="you test long-context or routing patterns (shared prefixes)", priority=1),
    ),
    _recipe(
        "nvidia_hopper_node",
        "recipe-8x-h100-h200",
        "8x H100 / H200 node",
        RecipeEntry("vllm", "Start here: the default open-source production server, with PagedAttention, "
                    "continuous batching, chunked prefill and FP8.", guide_rule="production"),
        RecipeEntry("sglang", "The other starting point, strongest for long context, MoE, prefix reuse and "
                    "prefill-heavy traffic (RadixAttention, prefill/decode disaggregation).",
                    guide_rule="long-context-moe-routing", when=_complex_serving,
                    condition="you need long context, MoE, shared prefixes, prefill-heavy traffic or structured output",
                    priority=2),
        RecipeEntry("tensorrt-llm", "Evaluate it for peak performance: worth testing against your vLLM or SGLang "
                    "baseline on an NVIDIA-only node when the throughput gain justifies the tuning.",
                    guide_rule="nvidia-max", when=_throughput, condition="you optimize for throughput",
                    priority=3, role=EVALUATE),
        RecipeEntry("nvidia-dynamo", "Add it on top of the engine when multi-node orchestration becomes necessary.",
                    guide_rule="cluster", when=_fleet, condition="you orchestrate a fleet", priority=1,
                    role=ORCHESTRATE),
    ),
    _recipe(
        "nvidia_blackwell",
        "recipe-blackwell",
        "B200 / GB200 / GB300 infrastructure",
        RecipeEntry("tensorrt-llm", "Evaluated first: NVIDIA's new silicon gets its first serious optimizations "
                    "here (FP4 kernels on B200).", guide_rule="nvidia-max"),
        RecipeEntry("sglang", "Evaluate it for complex serving: long context, MoE, routing, disaggregation.",
                    guide_rule="long-context-moe-routing", when=_complex_serving,
                    condition="you need long context, MoE, shared prefixes, prefill-heavy traffic or structured output",
                    priority=2),
        RecipeEntry("vllm", "Evaluate it for flexibility.", guide_rule="production", when=_flexibility,
                    condition="you optimize for portability or developer speed", priority=3),
        RecipeEntry("nvidia-dynamo", "Add it on top of the engine for fleet-level orchestration, KV-aware routing "
                    "and autoscaling.", guide_rule="cluster", when=_fleet, condition="you orchestrate a fleet",
                    priority=1, role=ORCHESTRATE),
    ),
    _recipe(
        "amd_instinct",
        "recipe-amd-instinct",
        "AMD MI300 / MI325 / MI350 / MI355",
        RecipeEntry("vllm", "Start with vLLM on ROCm.", guide_rule="production"),
        RecipeEntry("sglang", "The other ROCm starting point, for long context, MoE and routing.",
                    guide_rule="long-context-moe-routing", when=_complex_serving,
                    condition="you need long context, MoE, shared prefixes, prefill-heavy traffic or structured output"),
    ),
    _recipe(
        "intel",
        "recipe-intel",
        "Intel Xeon / Core Ultra / Arc",
        RecipeEntry("openvino-genai", "Intel's optimized path for Xeon, Arc, Core Ultra and NPUs, with an "
                    "OpenAI-compatible server, continuous batching and paged attention."),
        RecipeEntry("onnxruntime-genai", "Named when embedding the model in an application matters.", when=_onnx,
                    condition="the model ships as ONNX or is embedded in an app"),
    ),
    _recipe(
        "browser_app",
        "recipe-browser-mobile-app",
        "Browser, mobile, native app",
        RecipeEntry("mlc-llm", "The compiler-first universal deployment engine: REST, Python, JavaScript, "
                    "iOS and Android (WebLLM in the browser)."),
        RecipeEntry("onnxruntime-genai", "The generate loop on ONNX Runtime behind Windows ML and Foundry Local; "
                    "CPU, CUDA, DirectML, WebGPU and more.", when=_onnx, condition="the model ships as ONNX"),
    ),
    _recipe(
        "laptop_edge",
        "edge-app-browser-windows",
        "Laptop, edge device or unusual hardware",
        RecipeEntry("llama-cpp", "Runs almost anywhere: CPU, Metal, CUDA, HIP, Vulkan, SYCL and hybrid CPU+GPU "
                    "offload, with GGUF low-bit weights.", guide_rule="laptop-edge"),
        RecipeEntry("mlc-llm", "For shipping the model inside an app or browser."),
        RecipeEntry("onnxruntime-genai", "For ONNX and Windows application stacks.", when=_onnx,
                    condition="the model ships as ONNX"),
        RecipeEntry("openvino-genai", "For Intel client hardware."),
    ),
)
RECIPES_BY_HARDWARE = {recipe.hardware: recipe for recipe in RECIPES}

# Tools the wizard considers beyond a recipe's own list: the engines the guide discusses.
GUIDE_ENGINES: tuple[str, ...] = (
    "llama-cpp", "mlx", "mlx-lm", "exllamav2", "exllamav3", "vllm", "sglang", "tensorrt-llm", "hugging-face-tgi",
    "lmdeploy", "mlc-llm", "onnxruntime-genai", "openvino-genai", "nvidia-dynamo",
)

# Which catalog hardware targets let a tool run on each wizard hardware answer (any one is enough).
HARDWARE_TARGETS: dict[str, tuple[str, ...]] = {hardware.slug: hardware.targets for hardware in HARDWARE_CLASSES}


@dataclass(frozen=True)
class NeverRecommended:
    tool: str
    reason: str
    citation: Citation


NEVER_RECOMMENDED: dict[str, NeverRecommended] = {
    "ollama": NeverRecommended(
        tool="ollama",
        reason="The engine guide says plainly not to use Ollama, and the lesson built on it explains why: its "
        "convenience abstracts away the engine and the kernels, the layer you need to control. The comparison "
        "rates it and lists it for private on-device AI; that listing stays visible, but llama.cpp or MLX is "
        "recommended instead.",
        citation=Citation(ENGINE_LESSON, "Direct warning: do not use Ollama"),
    ),
}


# Servers meant for one person on one machine. Seed 000 lists treating them as production servers among
# its common mistakes; the MLX-LM server itself says it is not for production.
LOCAL_ONLY_SERVERS: dict[str, str] = {
    "mlx": "its MLX-LM server implements only basic security checks and is not recommended for production by "
    "its authors",
    "mlx-lm": "its server implements only basic security checks and is not recommended for production by its "
    "authors",
    "lm-studio": "it is a desktop app for local convenience",
    "jan": "it is a desktop app for local convenience",
    "harbor": "it is a local convenience toolkit",
    "ollama": "it is a local convenience wrapper",
}
LOCAL_ONLY_CITATION = Citation(ENGINE_GUIDE, "Common mistakes: treating local engines as production servers")


@dataclass(frozen=True)
class DocumentedSpeed:
    tool: str
    claim: str
    citation: Citation


# Hosted providers a seed sells on speed per user: the documented tier, used only when no provider has a
# measured or reported figure.
DOCUMENTED_SPEED: dict[str, DocumentedSpeed] = {
    slug: DocumentedSpeed(slug, f"The engine comparison names {name} among the specialised chips sold on very high "
                          "speed per user (low time to first token, fast output for each request).",
                          Citation(COMPARISON, "Throughput or latency: decide what you are buying"))
    for slug, name in (("groq", "Groq"), ("cerebras", "Cerebras"))
}


@dataclass(frozen=True)
class ProfileWarning:
    code: str
    message: str
    citation: Citation


def profile_warnings(profile: Profile) -> list[ProfileWarning]:
    """Cautions the seeds attach to a situation, independent of which tool wins."""
    warnings: list[ProfileWarning] = []
    if profile.hardware == "mac" and profile.deployment != "local":
        warnings.append(ProfileWarning(
            "mlx-server-not-for-production",
            "The MLX-LM server only implements basic security checks and its authors do not recommend it for "
            "production; put a gateway in front of it or use a production engine for a public endpoint.",
            Citation(ENGINE_LESSON, "04 · The map of the territory"),
        ))
    if profile.multi_device and profile.interconnect in {"pcie", "ethernet"}:
        warnings.append(ProfileWarning(
            "weak-interconnect",
            "Without NVLink or NVSwitch, tensor parallelism pays for frequent all-reduces; test pipeline "
            "parallelism too (vLLM's documentation notes it can win on setups like L40S).",
            Citation(ENGINE_GUIDE, "Common mistakes: tensor parallelism on a weak interconnect"),
        ))
    if profile.hardware == "amd_instinct":
        warnings.append(ProfileWarning(
            "amd-benchmarks",
            "Do not assume NVIDIA benchmark results carry over to ROCm; measure on your own MI-series hardware.",
            Citation(ENGINE_GUIDE, "Hardware strategy recipes: AMD MI300 / MI325 / MI350 / MI355"),
        ))
    if profile.quantization == "fp8" and profile.hardware in {"rtx_single", "rtx_multi", "amd_instinct", "mac",
                                                             "cpu_server", "laptop_edge", "intel", "browser_app"}:
        warnings.append(ProfileWarning(
            "fp8-hardware",
            "FP8 needs NVIDIA Ada or Hopper or newer for native speed (an RTX 3090 is Ampere and has no FP8 "
            "tensor cores); check that your exact card and engine have FP8 kernels.",
            Citation(COMPARISON, "What to look for · 04 Quantization formats"),
        ))
    if profile.quantization == "fp4" and profile.hardware != "nvidia_blackwell":
        warnings.append(ProfileWarning(
            "fp4-hardware",
            "NVFP4 and MXFP4 need Blackwell for native speed; elsewhere they are emulated or upcast.",
            Citation(COMPARISON, "What to look for · 04 Quantization formats"),
        ))
    if profile.fits_fast_memory == "unified_only" and profile.hardware not in {"mac", "cpu_server", "laptop_edge",
                                                                                "none"}:
        warnings.append(ProfileWarning(
            "offload",
            "If the model only fits in system memory, layers spill off the GPU and decode speed falls to what "
            "system memory bandwidth allows; fitting is not speed.",
            Citation(ENGINE_GUIDE, "The real bottlenecks: memory bandwidth"),
        ))
    if profile.long_context or profile.concurrency >= 32:
        warnings.append(ProfileWarning(
            "kv-cache",
            "At this context length or concurrency the KV cache, not the weights, may run out first; measure "
            "memory headroom at the target context (the fit calculator estimates it).",
            Citation(ENGINE_GUIDE, "Benchmarking rule 6; Common mistakes: ignoring the KV cache"),
        ))
    if profile.bottleneck == "decode":
        warnings.append(ProfileWarning(
            "decode-bound",
            "Decode-bound work (short prompts, long answers) runs at the speed memory bandwidth allows, more "
            "than peak compute: compare devices by GB/s and batching, and see the fit calculator's ceiling.",
            Citation(ENGINE_GUIDE, "What an inference engine actually does: prefill and decode"),
        ))
    if profile.bottleneck == "prefill":
        warnings.append(ProfileWarning(
            "prefill-bound",
            "Prefill-bound work (long prompts, short answers) depends on attention kernels and chunked prefill; "
            "measure time to first token at your real prompt length.",
            Citation(ENGINE_LESSON, "05 · Decode vs. prefill"),
        ))
    if profile.hardware == "none" and not profile.hosted_ok:
        warnings.append(ProfileWarning(
            "hosted-implied",
            "You have no hardware of your own, so the answer is a hosted API even though you did not tick it; "
            "hosted providers choose the hardware for you.",
            Citation(COMPARISON, "What to look for · 03 Hardware support"),
        ))
    if profile.public_serving and profile.hardware != "none":
        warnings.append(ProfileWarning(
            "local-servers-not-for-production",
            "Production with more than a handful of simultaneous users needs security, observability, "
            "backpressure, routing and autoscaling: start from a real serving stack (vLLM, SGLang, TGI) rather "
            "than a local convenience server.",
            LOCAL_ONLY_CITATION,
        ))
    return warnings
