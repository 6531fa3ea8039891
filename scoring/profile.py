"""The answers to the engine guide's ten questions, plus "may it be hosted?" and "which API features must work?"."""
from __future__ import annotations

from dataclasses import dataclass, field

from scoring.errors import InputError
from scoring.vocabulary import COMPAT_CHECK_CHOICES



@dataclass(frozen=True)
class HardwareClass:
    """One answer to "what hardware do you have?": the one table the wizard, its rules and its links read."""

    slug: str
    label: str
    # Catalog hardware targets a tool needs one of to run here (its HardwareSupport rows).
    targets: tuple[str, ...]
    multi_device: bool = False
    # The catalog device and count the answer's fit and break-even links start from when the visitor names
    # none: the device the engine guide's recipe names. Empty: the class has no device of its own.
    reference_device: str = ""
    reference_count: int = 1


HARDWARE_CLASSES: tuple[HardwareClass, ...] = (
    HardwareClass("mac", "Mac with Apple silicon (MacBook, Mac Studio)", ("apple-silicon",),
                  reference_device="apple-m3-ultra"),
    HardwareClass("laptop_edge", "Laptop, edge device or unusual hardware",
                  ("x86-cpu", "arm-cpu", "other-cpu", "apple-silicon", "vulkan", "windows-directml")),
    HardwareClass("cpu_server", "CPU-only server", ("x86-cpu", "arm-cpu")),
    HardwareClass("rtx_single", "One consumer NVIDIA RTX (3090 / 4090 / 5090)", ("nvidia-cuda",),
                  reference_device="nvidia-rtx-4090"),
    HardwareClass("rtx_multi", "Two to four consumer NVIDIA RTX cards", ("nvidia-cuda",), multi_device=True,
                  reference_device="nvidia-rtx-4090", reference_count=2),
    HardwareClass("nvidia_hopper_node", "NVIDIA 8x H100 / H200 node", ("nvidia-cuda",), multi_device=True,
                  reference_device="nvidia-h100-sxm", reference_count=8),
    HardwareClass("nvidia_blackwell", "NVIDIA B200 / GB200 / GB300 infrastructure", ("nvidia-cuda",),
                  multi_device=True, reference_device="nvidia-b200", reference_count=8),
    HardwareClass("amd_instinct", "AMD Instinct MI300 / MI325 / MI350 / MI355", ("amd-rocm",), multi_device=True,
                  reference_device="amd-mi300x", reference_count=8),
    HardwareClass("intel", "Intel Xeon, Core Ultra or Arc", ("intel-gpu", "intel-npu", "x86-cpu")),
    HardwareClass("browser_app", "Browser, mobile or native app", ("webgpu-browser", "mobile")),
    HardwareClass("none", "No hardware of my own (hosted APIs only)", ()),
)
HARDWARE_CLASSES_BY_SLUG = {hardware.slug: hardware for hardware in HARDWARE_CLASSES}
HARDWARE_CHOICES: tuple[tuple[str, str], ...] = tuple((hardware.slug, hardware.label) for hardware in HARDWARE_CLASSES)
MULTI_GPU_HARDWARE = frozenset(hardware.slug for hardware in HARDWARE_CLASSES if hardware.multi_device)
# The GPU generations a catalog device may state (HardwareSpec.generation).
GPU_GENERATIONS = (
    ("ampere", "NVIDIA Ampere"), ("ada", "NVIDIA Ada Lovelace"), ("hopper", "NVIDIA Hopper"),
    ("blackwell", "NVIDIA Blackwell"), ("cdna3", "AMD CDNA 3"), ("cdna4", "AMD CDNA 4"), ("apple", "Apple silicon"),
)


def hardware_class_of(*, target: str, generation: str, datacenter: bool, devices: int) -> str | None:
    """The class a catalog device belongs to, `devices` of it; None for a device no class describes."""
    if target == "apple-silicon":
        return "mac"
    if target == "amd-rocm":
        return "amd_instinct"
    if target != "nvidia-cuda":
        return None
    if datacenter:
        return "nvidia_blackwell" if generation == "blackwell" else "nvidia_hopper_node"
    return "rtx_single" if devices == 1 else "rtx_multi"


FITS_FAST_MEMORY_CHOICES = (
    ("yes", "Yes, it fits in GPU memory (VRAM / HBM)"),
    ("unified_only", "Only in system or unified memory"),
    ("unknown", "I don't know yet"),
)
BOTTLENECK_CHOICES = (
    ("decode", "Decode: short prompts, long answers"),
    ("prefill", "Prefill: long prompts, short answers"),
    ("unknown", "I don't know yet"),
)
ARCHITECTURE_CHOICES = (
    ("dense", "Dense"),
    ("moe", "Mixture of experts (MoE)"),
    ("multimodal", "Multimodal"),
    ("hybrid", "Hybrid attention"),
)
DEPLOYMENT_CHOICES = (
    ("local", "Local convenience"),
    ("production", "Production serving"),
    ("fleet", "Fleet orchestration"),
)
QUANTIZATION_CHOICES = (
    ("any", "No preference"),
    ("bf16", "FP16 / BF16 (unquantized)"),
    ("gguf", "GGUF"),
    ("exl2", "EXL2"),
    ("exl3", "EXL3"),
    ("awq", "AWQ"),
    ("gptq", "GPTQ"),
    ("fp8", "FP8"),
    ("fp4", "FP4 (NVFP4 / MXFP4)"),
    ("mlx", "MLX"),
    ("onnx", "ONNX"),
)
INTERCONNECT_CHOICES = (
    ("none", "Single device, no interconnect"),
    ("pcie", "PCIe"),
    ("nvlink", "NVLink"),
    ("nvswitch", "NVSwitch"),
    ("ethernet", "Ethernet"),
    ("rdma", "RDMA (InfiniBand / RoCE)"),
    ("thunderbolt", "Thunderbolt"),
)
OPTIMIZE_FOR_CHOICES = (
    ("latency", "Latency"),
    ("throughput", "Throughput"),
    ("cost", "Cost"),
    ("privacy", "Privacy"),
    ("portability", "Portability"),
    ("developer_speed", "Developer speed"),
)
# A user can require any of the probes' compatibility checks to work.
NEEDS_CHOICES = COMPAT_CHECK_CHOICES

MAX_CONTEXT_TOKENS = 10_000_000
MAX_CONCURRENCY = 100_000
MAX_DEVICES = 4096
LONG_CONTEXT_TOKENS = 32_768
# At or above this many simultaneous requests the guide's "serving several users" qualifiers apply.
SERVING_CONCURRENCY = 4
# More simultaneous users than this, in production, is public serving: local-only servers step aside.
HANDFUL_OF_USERS = 4


def values_of(choices: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    return tuple(value for value, _ in choices)


# The name recommend/ imports the error by.


@dataclass(frozen=True)
class Profile:
    hardware: str
    fits_fast_memory: str = "unknown"
    bottleneck: str = "unknown"
    context_tokens: int = 8192
    concurrency: int = 1
    shared_prefixes: bool = False
    architecture: str = "dense"
    deployment: str = "local"
    quantization: str = "any"
    interconnect: str = "none"
    optimize_for: str = "latency"
    hosted_ok: bool = False
    needs: tuple[str, ...] = field(default_factory=tuple)
    # How many devices the visitor has, when they named a catalog device; 0: the hardware class decides.
    devices: int = 0

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for name, choices in (
            ("hardware", HARDWARE_CHOICES),
            ("fits_fast_memory", FITS_FAST_MEMORY_CHOICES),
            ("bottleneck", BOTTLENECK_CHOICES),
            ("architecture", ARCHITECTURE_CHOICES),
            ("deployment", DEPLOYMENT_CHOICES),
            ("quantization", QUANTIZATION_CHOICES),
            ("interconnect", INTERCONNECT_CHOICES),
            ("optimize_for", OPTIMIZE_FOR_CHOICES),
        ):
            value = getattr(self, name)
            if value not in values_of(choices):
                errors[name] = f"{value!r} is not one of: {', '.join(values_of(choices))}."
        if not 1 <= self.context_tokens <= MAX_CONTEXT_TOKENS:
            errors["context_tokens"] = f"Must be between 1 and {MAX_CONTEXT_TOKENS}."
        if not 0 <= self.devices <= MAX_DEVICES:
            errors["gpu_count"] = f"Must be between 1 and {MAX_DEVICES}."
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            errors["concurrency"] = f"Must be between 1 and {MAX_CONCURRENCY}."
        unknown_needs = [need for need in self.needs if need not in values_of(NEEDS_CHOICES)]
        if unknown_needs:
            errors["needs"] = f"Unknown check names: {', '.join(unknown_needs)}."
        if errors:
            raise InputError(errors)

    @property
    def serves_many(self) -> bool:
        return self.deployment != "local" or self.concurrency >= SERVING_CONCURRENCY

    @property
    def hosted_allowed(self) -> bool:
        """Without hardware of one's own, hosted APIs are the only answer, ticked or not."""
        return self.hosted_ok or self.hardware == "none"

    @property
    def public_serving(self) -> bool:
        return self.deployment != "local" and self.concurrency > HANDFUL_OF_USERS

    @property
    def long_context(self) -> bool:
        return self.context_tokens >= LONG_CONTEXT_TOKENS

    @property
    def complex_serving(self) -> bool:
        """The guide's SGLang territory: long context, MoE, prefix reuse / routing, prefill-heavy prompts."""
        return (
            self.long_context
            or self.architecture == "moe"
            or self.shared_prefixes
            or self.bottleneck == "prefill"
            or bool({"json_schema", "tools_with_json_schema"} & set(self.needs))
        )

    @property
    def multi_device(self) -> bool:
        return self.devices > 1 if self.devices else self.hardware in MULTI_GPU_HARDWARE
