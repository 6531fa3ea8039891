"""A small, varied catalog for the page and selector tests (built with the shared factories)."""
from __future__ import annotations

from decimal import Decimal

from catalog.models import Caveat, HardwareSupport, PriceItem, Tool
from tests.factories import (
    ApiSurfaceFactory,
    CaveatFactory,
    FeatureFactory,
    HardwareSupportFactory,
    HardwareTargetFactory,
    LanguageModelFactory,
    LicenceFactory,
    PriceItemFactory,
    QuantFormatFactory,
    SourceFactory,
    ToolFactory,
)


def build_sample_catalog() -> dict[str, Tool]:
    proprietary = LicenceFactory(spdx_id="proprietary-service", name="Proprietary service", is_open_source=False)
    mit = LicenceFactory(spdx_id="MIT", name="MIT License", is_open_source=True)
    seed = SourceFactory(key="seed-002-engine-comparison", title="Inference engines comparison (seed 002)")
    groq_docs = SourceFactory(key="groq-openai-compat", title="Groq docs: OpenAI compatibility",
                              url="https://console.groq.com/docs/openai")
    cuda = HardwareTargetFactory(slug="nvidia-cuda", name="NVIDIA CUDA", position=1)
    apple = HardwareTargetFactory(slug="apple-silicon", name="Apple silicon", position=2)
    lpu = HardwareTargetFactory(slug="groq-lpu", name="Groq LPU", position=3)
    wafer = HardwareTargetFactory(slug="cerebras-wse", name="Cerebras wafer-scale engine", position=4)
    batching = FeatureFactory(slug="continuous-batching", name="Continuous batching", position=1)
    lora = FeatureFactory(slug="multi-lora", name="Multi-LoRA", position=2)
    gguf = QuantFormatFactory(slug="gguf", name="GGUF")
    fp8 = QuantFormatFactory(slug="fp8", name="FP8", hardware_requirement="Ada or Hopper or newer")
    chat = ApiSurfaceFactory(slug="openai-chat", name="OpenAI chat completions")

    def tool(slug: str, name: str, rating: str | None, rank: int | None, **extra) -> Tool:
        return ToolFactory(
            slug=slug, name=name, rating=Decimal(rating) if rating else None, rank=rank,
            rating_source=seed if rating else None, **extra,
        )

    tools = {
        "llama-cpp": tool("llama-cpp", "llama.cpp", "4.8", 1, licence=mit, family="llama.cpp / GGUF",
                          summary="C/C++ inference for GGUF models."),
        "vllm": tool("vllm", "vLLM", "4.7", 2, verdict="The engine for a multi-user API."),
        "mlx": tool("mlx", "MLX", "4.4", 6, licence=mit),
        "groq": tool("groq", "Groq", "4.0", 11, kind=Tool.Kind.PROVIDER, licence=proprietary),
        "cerebras": tool("cerebras", "Cerebras", "4.0", 12, kind=Tool.Kind.PROVIDER, licence=proprietary),
        "tgi": tool("tgi", "Hugging Face TGI", None, None, family="Hugging Face"),
    }
    for slug in ("llama-cpp", "vllm", "tgi"):
        HardwareSupportFactory(tool=tools[slug], hardware=cuda)
    HardwareSupportFactory(tool=tools["llama-cpp"], hardware=apple)
    HardwareSupportFactory(tool=tools["mlx"], hardware=apple)
    HardwareSupportFactory(tool=tools["groq"], hardware=lpu, level=HardwareSupport.Level.PROVIDER)
    HardwareSupportFactory(tool=tools["cerebras"], hardware=wafer, level=HardwareSupport.Level.PROVIDER)
    tools["vllm"].feature_support.create(feature=batching)
    tools["vllm"].feature_support.create(feature=lora)
    tools["tgi"].feature_support.create(feature=batching)
    tools["llama-cpp"].quant_format_support.create(quant_format=gguf)
    tools["vllm"].quant_format_support.create(quant_format=fp8)
    for slug in ("vllm", "groq", "cerebras"):
        tools[slug].api_surface_support.create(api_surface=chat)
    tools["groq"].api_surface_support.filter(api_surface=chat).update(
        gaps="Rejects logprobs and logit_bias.", checks={"logprobs": "rejected", "logit_bias": "rejected"},
        source=groq_docs,
    )
    tools["vllm"].api_surface_support.filter(api_surface=chat).update(checks={"logprobs": "supported"})

    reference_model = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b", source=seed)
    smaller_model = LanguageModelFactory(slug="gpt-oss-20b", name="gpt-oss-20b", source=seed)
    PriceItemFactory(tool=tools["groq"], item="gpt-oss-120b", model=reference_model,
                     input_usd_per_mtok=Decimal("0.15"), output_usd_per_mtok=Decimal("0.60"), source=seed)
    PriceItemFactory(tool=tools["groq"], item="gpt-oss-20b", model=smaller_model,
                     input_usd_per_mtok=Decimal("0.075"), output_usd_per_mtok=Decimal("0.30"), source=seed)
    PriceItemFactory(tool=tools["groq"], item="Whisper large-v3-turbo", unit=PriceItem.Unit.PER_AUDIO_HOUR,
                     input_usd_per_mtok=None, output_usd_per_mtok=None, amount_usd=Decimal("0.04"), source=seed)
    PriceItemFactory(tool=tools["cerebras"], item="gpt-oss-120b", model=reference_model,
                     input_usd_per_mtok=Decimal("0.35"), output_usd_per_mtok=Decimal("0.75"), source=seed)
    PriceItemFactory(tool=tools["cerebras"], item="Trial credit", unit=PriceItem.Unit.CREDIT,
                     tier=PriceItem.Tier.TRIAL, input_usd_per_mtok=None, output_usd_per_mtok=None,
                     amount_usd=Decimal("5"), notes="30 days", source=seed)
    CaveatFactory(tool=tools["vllm"], key="own-upgrades", severity=Caveat.Severity.WARNING,
                  title="Someone must own upgrades and network exposure", source=seed)
    CaveatFactory(tool=tools["llama-cpp"], key="rpc-insecure", severity=Caveat.Severity.SECURITY,
                  title="The RPC backend is an insecure proof of concept", source=seed)
    for item in tools.values():
        item.sources.add(seed)
    return tools
