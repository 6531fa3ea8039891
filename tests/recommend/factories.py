"""Rows for the recommendation tests: engines, providers, prices and probe results, grown by a count."""
from __future__ import annotations

from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from catalog.models import HardwareSupport, Tool, UseCase, UseCaseRecommendation
from tests.factories import (
    CaveatFactory,
    CompatStatusFactory,
    HardwareSupportFactory,
    HardwareTargetFactory,
    MeasurementSummaryFactory,
    PriceItemFactory,
    ProbeTargetFactory,
    QuantFormatFactory,
    SourceFactory,
    ToolFactory,
)


class UseCaseFactory(DjangoModelFactory):
    class Meta:
        model = UseCase
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"use-case-{n}")
    title = factory.Sequence(lambda n: f"Use case {n}")
    question = "Which engine?"
    group = UseCase.Group.FINAL_MAP


class UseCaseRecommendationFactory(DjangoModelFactory):
    class Meta:
        model = UseCaseRecommendation

    use_case = factory.SubFactory(UseCaseFactory)
    tool = factory.SubFactory(ToolFactory)
    position = factory.Sequence(lambda n: n)
    reason = "Because the test says so."
    source = factory.SubFactory(SourceFactory)


def grow_catalog(n: int, *, start: int = 0, tps: float = 400.0) -> None:
    """n extra engines on CUDA and n hosted providers, each provider priced, measured and compat-checked."""
    cuda = HardwareTargetFactory(slug="nvidia-cuda", name="NVIDIA CUDA")
    gguf = QuantFormatFactory(slug="gguf", name="GGUF")
    seed = SourceFactory(key="seed-002-engine-comparison", title="Comparison (seed 002)")
    for index in range(start, start + n):
        engine = ToolFactory(slug=f"engine-{index}", name=f"Engine {index}")
        HardwareSupportFactory(tool=engine, hardware=cuda)
        engine.quant_format_support.create(quant_format=gguf)
        CaveatFactory(tool=engine, source=seed)
        provider = ToolFactory(slug=f"provider-{index}", name=f"Provider {index}", kind=Tool.Kind.PROVIDER)
        HardwareSupportFactory(tool=provider, hardware=cuda, level=HardwareSupport.Level.PROVIDER)
        PriceItemFactory(tool=provider, item="gpt-oss-120b", input_usd_per_mtok=Decimal("0.15"),
                         output_usd_per_mtok=Decimal("0.60"), source=seed)
        PriceItemFactory(tool=provider, item=f"H100 {index}", unit="per_hour", tier="dedicated",
                         input_usd_per_mtok=None, output_usd_per_mtok=None, amount_usd=Decimal("3.99"), source=seed)
        target = ProbeTargetFactory(slug=f"provider-{index}-gpt-oss", tool=provider)
        MeasurementSummaryFactory(target=target, workload="in-1k", metrics={
            "output_speed_tps": {"p50": tps + index, "median_72h": tps + index},
            "ttft_ms": {"p50": 200.0, "median_72h": 200.0},
        })
        CompatStatusFactory(target=target, check_name="logprobs", outcome="supported")
