"""Factories the API tests need beyond tests/factories.py, and a builder for a catalog of any size."""
import datetime
from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from catalog import models as catalog
from probes import models as probes
from tests.factories import (
    ApiSurfaceFactory,
    CaveatFactory,
    CompatStatusFactory,
    FeatureFactory,
    HardwareSpecFactory,
    HardwareSupportFactory,
    HardwareTargetFactory,
    LicenceFactory,
    MeasurementSummaryFactory,
    PriceItemFactory,
    ProbeTargetFactory,
    QuantFormatFactory,
    SourceFactory,
    ToolFactory,
)


class UseCaseFactory(DjangoModelFactory):
    class Meta:
        model = catalog.UseCase
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"use-case-{n}")
    title = factory.Sequence(lambda n: f"Use case {n}")
    question = "Which engine should I pick?"
    group = catalog.UseCase.Group.FINAL_MAP


class UseCaseRecommendationFactory(DjangoModelFactory):
    class Meta:
        model = catalog.UseCaseRecommendation

    use_case = factory.SubFactory(UseCaseFactory)
    tool = factory.SubFactory(ToolFactory)
    position = factory.Sequence(lambda n: n)
    reason = "Fits the workload."
    source = factory.SubFactory(SourceFactory)


def build_catalog(n_tools: int, *, start: int = 0) -> list[catalog.Tool]:
    """n tools, each with everything a tool page shows: prices, hardware, formats, surfaces, features,
    caveats, sources, a use-case recommendation, a probe target with summaries and compat cells."""
    source = SourceFactory(key="catalog-source")
    licence = LicenceFactory()
    cuda = HardwareTargetFactory(slug="nvidia-cuda", name="NVIDIA CUDA")
    HardwareSpecFactory(slug="h100", name="H100", hardware_target=cuda, source=source)
    fp8 = QuantFormatFactory(slug="fp8", name="FP8", hardware_requirement="Ada or Hopper or newer")
    openai = ApiSurfaceFactory(slug="openai-chat", name="OpenAI chat completions")
    batching = FeatureFactory(slug="continuous-batching", name="Continuous batching")
    use_case = UseCaseFactory(slug="multi-user-serving", title="Multi-user serving")
    tools = []
    for index in range(start, start + n_tools):
        tool = ToolFactory(
            slug=f"engine-{index:03d}", name=f"Engine {index:03d}", licence=licence,
            rating=Decimal("4.0") + Decimal(index % 10) / 10, rating_source=source, rank=index + 1,
        )
        tool.sources.add(source)
        PriceItemFactory(tool=tool, item=f"model-{index}", source=source)
        HardwareSupportFactory(tool=tool, hardware=cuda, source=source)
        catalog.ToolQuantFormat.objects.create(tool=tool, quant_format=fp8, source=source)
        catalog.ToolApiSurface.objects.create(tool=tool, api_surface=openai, gaps="No logprobs.", source=source)
        catalog.ToolFeature.objects.create(tool=tool, feature=batching, source=source)
        CaveatFactory(tool=tool, source=source)
        UseCaseRecommendationFactory(use_case=use_case, tool=tool, position=index, source=source)
        target = ProbeTargetFactory(slug=f"target-{index:03d}", name=f"Target {index:03d}", tool=tool)
        MeasurementSummaryFactory(target=target)
        CompatStatusFactory(target=target, check_name="logprobs")
        tools.append(tool)
    return tools


def build_runs(target: probes.ProbeTarget, n_runs: int, *, measurements_per_run: int = 0) -> list[probes.ProbeRun]:
    base = datetime.datetime(2026, 11, 1, tzinfo=datetime.UTC)
    runs = probes.ProbeRun.objects.bulk_create(
        [
            probes.ProbeRun(
                target=target, suite=probes.ProbeRun.Suite.SPEED, workload="in-100", status="succeeded",
                summary={"ttft_ms": {"p50": 100.0 + index}},
            )
            for index in range(n_runs)
        ]
    )
    # auto_now_add stamps every row with "now"; spread them out so time filters have something to cut.
    for index, run in enumerate(runs):
        run.queued_at = base + datetime.timedelta(minutes=index)
    probes.ProbeRun.objects.bulk_update(runs, ["queued_at"])
    return runs

