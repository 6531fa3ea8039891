"""factory_boy factories shared by every test package, and builders of a catalog of any size."""
import datetime
from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from catalog import models as catalog
from core import cache as page_cache
from lab import models as lab
from probes import models as probes


class Factory(DjangoModelFactory):
    """Rows written as a service writes them: the page cache's generation moves."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        instance = super()._create(model_class, *args, **kwargs)
        page_cache.generation_bump()
        return instance


class SourceFactory(Factory):
    class Meta:
        model = catalog.Source
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"source-{n}")
    title = factory.Sequence(lambda n: f"Source document {n}")
    url = factory.Sequence(lambda n: f"https://example.org/source/{n}")
    verified_on = datetime.date(2026, 10, 19)


class LicenceFactory(Factory):
    class Meta:
        model = catalog.Licence
        django_get_or_create = ("spdx_id",)

    spdx_id = "Apache-2.0"
    name = "Apache License 2.0"
    is_open_source = True


class HardwareTargetFactory(Factory):
    class Meta:
        model = catalog.HardwareTarget
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"hardware-{n}")
    name = factory.Sequence(lambda n: f"Hardware {n}")
    category = catalog.HardwareTarget.Category.GPU


class QuantFormatFactory(Factory):
    class Meta:
        model = catalog.QuantFormat
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"format-{n}")
    name = factory.Sequence(lambda n: f"Format {n}")


class ApiSurfaceFactory(Factory):
    class Meta:
        model = catalog.ApiSurface
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"api-{n}")
    name = factory.Sequence(lambda n: f"API {n}")


class FeatureFactory(Factory):
    class Meta:
        model = catalog.Feature
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"feature-{n}")
    name = factory.Sequence(lambda n: f"Feature {n}")


class ToolFactory(Factory):
    class Meta:
        model = catalog.Tool
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tool-{n}")
    name = factory.Sequence(lambda n: f"Tool {n}")
    kind = catalog.Tool.Kind.ENGINE
    verdict = "A verdict written for the test."
    ideal_for = "Teams that test things."
    licence = factory.SubFactory(LicenceFactory)
    last_verified = datetime.date(2026, 10, 19)


class PriceItemFactory(Factory):
    class Meta:
        model = catalog.PriceItem

    tool = factory.SubFactory(ToolFactory, kind=catalog.Tool.Kind.PROVIDER)
    item = factory.Sequence(lambda n: f"model-{n}")
    unit = catalog.PriceItem.Unit.PER_MTOK
    tier = catalog.PriceItem.Tier.ON_DEMAND
    input_usd_per_mtok = Decimal("0.15")
    output_usd_per_mtok = Decimal("0.60")
    verified_on = datetime.date(2026, 10, 19)
    source = factory.SubFactory(SourceFactory)


class HardwareSupportFactory(Factory):
    class Meta:
        model = catalog.HardwareSupport

    tool = factory.SubFactory(ToolFactory)
    hardware = factory.SubFactory(HardwareTargetFactory)
    level = catalog.HardwareSupport.Level.NATIVE


class CaveatFactory(Factory):
    class Meta:
        model = catalog.Caveat

    tool = factory.SubFactory(ToolFactory)
    key = factory.Sequence(lambda n: f"caveat-{n}")
    title = factory.Sequence(lambda n: f"Caveat {n}")
    body = "Something to know before deploying."
    source = factory.SubFactory(SourceFactory)


class HardwareSpecFactory(Factory):
    class Meta:
        model = catalog.HardwareSpec
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"device-{n}")
    name = factory.Sequence(lambda n: f"Device {n}")
    vendor = "NVIDIA"
    memory_gb = Decimal("80")
    bandwidth_gb_s = Decimal("3350")
    source = factory.SubFactory(SourceFactory)


class LanguageModelFactory(Factory):
    class Meta:
        model = catalog.LanguageModel
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"model-{n}")
    name = factory.Sequence(lambda n: f"Model {n}")
    publisher = "OpenAI"
    source = factory.SubFactory(SourceFactory)


class ModelOfferingFactory(Factory):
    class Meta:
        model = catalog.ModelOffering

    tool = factory.SubFactory(ToolFactory, kind=catalog.Tool.Kind.PROVIDER)
    model = factory.SubFactory(LanguageModelFactory)
    api_model_id = factory.LazyAttribute(lambda offering: offering.model.slug)
    context_tokens = 128000
    verified_on = datetime.date(2026, 12, 1)
    source = factory.SubFactory(SourceFactory)


class ReportedFigureFactory(Factory):
    class Meta:
        model = catalog.ReportedFigure

    key = factory.Sequence(lambda n: f"figure-{n}")
    tool = factory.SubFactory(ToolFactory, kind=catalog.Tool.Kind.PROVIDER)
    model = factory.SubFactory(LanguageModelFactory)
    metric = catalog.ReportedFigure.Metric.OUTPUT_SPEED
    value = Decimal("500")
    workload = "The publisher's standard prompt."
    publisher = "Example Benchmarks"
    url = factory.Sequence(lambda n: f"https://benchmarks.example.org/figure/{n}")
    observed_on = datetime.date(2026, 11, 30)
    verified_on = datetime.date(2026, 12, 1)


class UseCaseFactory(Factory):
    class Meta:
        model = catalog.UseCase
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"use-case-{n}")
    title = factory.Sequence(lambda n: f"Use case {n}")
    question = "Which engine should I pick?"
    group = catalog.UseCase.Group.FINAL_MAP


class UseCaseRecommendationFactory(Factory):
    class Meta:
        model = catalog.UseCaseRecommendation

    use_case = factory.SubFactory(UseCaseFactory)
    tool = factory.SubFactory(ToolFactory)
    position = factory.Sequence(lambda n: n)
    reason = "Fits the workload."
    source = factory.SubFactory(SourceFactory)


class ProbeTargetFactory(Factory):
    class Meta:
        model = probes.ProbeTarget
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"target-{n}")
    name = factory.Sequence(lambda n: f"Target {n}")
    tool = factory.SubFactory(ToolFactory, kind=catalog.Tool.Kind.PROVIDER)
    base_url = "http://127.0.0.1:9/v1"
    model_id = "gpt-oss-120b"
    api_key_env = "ATLAS_TEST_API_KEY"
    enabled = True


class ProbeRunFactory(Factory):
    class Meta:
        model = probes.ProbeRun

    target = factory.SubFactory(ProbeTargetFactory)
    suite = probes.ProbeRun.Suite.SPEED
    workload = "in-100"
    input_tokens = 100
    max_output_tokens = 128
    concurrency = 1
    request_count = 3
    status = probes.ProbeRun.Status.SUCCEEDED


class RequestMeasurementFactory(Factory):
    class Meta:
        model = probes.RequestMeasurement

    run = factory.SubFactory(ProbeRunFactory)
    index = factory.Sequence(lambda n: n)
    started_at = factory.LazyFunction(lambda: datetime.datetime.now(datetime.UTC))
    http_status = 200
    headers_ms = 40.0
    ttft_ms = 120.0
    ttfat_ms = 120.0
    e2e_ms = 1400.0
    tpot_ms = 10.0
    output_speed_tps = 100.0
    output_tokens = 128
    output_tokens_source = "usage"
    chunks = 128


class CompatOutcomeFactory(Factory):
    class Meta:
        model = probes.CompatOutcome

    run = factory.SubFactory(ProbeRunFactory, suite=probes.ProbeRun.Suite.COMPAT, workload="")
    check_name = "logprobs"
    outcome = probes.CompatOutcome.Outcome.SUPPORTED


class MeasurementSummaryFactory(Factory):
    class Meta:
        model = probes.MeasurementSummary

    target = factory.SubFactory(ProbeTargetFactory)
    workload = "in-100"
    concurrency = 1
    samples = 3
    samples_72h = 3
    success_rate = 1.0
    success_rate_72h = 1.0
    metrics = factory.LazyFunction(
        lambda: {
            "ttft_ms": {"p50": 120.0, "p95": 150.0, "p99": 160.0, "median_72h": 121.0},
            "output_speed_tps": {"p50": 100.0, "p95": 110.0, "p99": 112.0, "median_72h": 101.0},
            "e2e_ms": {"p50": 1400.0, "p95": 1500.0, "p99": 1550.0, "median_72h": 1402.0},
        }
    )


class CompatStatusFactory(Factory):
    class Meta:
        model = probes.CompatStatus

    target = factory.SubFactory(ProbeTargetFactory)
    check_name = "logprobs"
    outcome = probes.CompatOutcome.Outcome.SUPPORTED
    checked_at = factory.LazyFunction(lambda: datetime.datetime.now(datetime.UTC))


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


def build_runs(target: probes.ProbeTarget, n_runs: int) -> list[probes.ProbeRun]:
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
    page_cache.generation_bump()
    return runs


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
        provider = ToolFactory(slug=f"provider-{index}", name=f"Provider {index}", kind=catalog.Tool.Kind.PROVIDER)
        HardwareSupportFactory(tool=provider, hardware=cuda, level=catalog.HardwareSupport.Level.PROVIDER)
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


class SweepRunFactory(Factory):
    class Meta:
        model = lab.SweepRun

    target = factory.SubFactory(ProbeTargetFactory, tool__kind=catalog.Tool.Kind.ENGINE, api_key_env="")
    tool = factory.LazyAttribute(lambda run: run.target.tool if run.target else None)
    kind = lab.SweepRun.Kind.SWEEP
    status = lab.SweepRun.Status.SUCCEEDED
    hardware = factory.SubFactory(HardwareSpecFactory)
    workload_name = "chat"
    workload = factory.LazyFunction(lambda: {"name": "chat", "input": {"kind": "fixed", "value": 1000},
                                             "output": {"kind": "fixed", "value": 200}, "shared_prefix_ratio": 0.0,
                                             "structured_output": False, "streaming": True, "seed": 0, "basis": ""})
    workload_key = "chat-fixed-1000-200"
    plan = factory.LazyFunction(lambda: {"mode": "concurrency", "levels": [1, 2, 4],
                                         "slo": {"ttft_ms": 500, "tpot_ms": 50, "attainment": 0.9}})
    card = factory.LazyFunction(lambda: {"tool": "inference-atlas", "engine_version": "1.0"})
    levels_total = 3
    levels_done = 3


class SweepLevelFactory(Factory):
    class Meta:
        model = lab.SweepLevel

    run = factory.SubFactory(SweepRunFactory)
    mode = "concurrency"
    level = factory.Sequence(lambda n: float(2**n))
    requests = 32
    ok = 32
    duration_s = 10.0
    ttft_ms = factory.LazyFunction(lambda: {"p50": 100.0, "p95": 150.0, "p99": 180.0})
    tpot_ms = factory.LazyFunction(lambda: {"p50": 20.0, "p95": 25.0, "p99": 30.0})
    itl_ms = factory.LazyFunction(lambda: {"p50": 20.0, "p95": 25.0, "p99": 30.0})
    e2e_ms = factory.LazyFunction(lambda: {"p50": 4000.0, "p95": 5000.0, "p99": 5500.0})
    output_tps = 600.0
    total_tps = 3600.0
    request_rate = 3.0
    goodput_rps = 3.0
    slo_attainment = 1.0
    meets_slo = True
    output_tokens_source = "usage"


class ChangeFactory(DjangoModelFactory):
    class Meta:
        model = catalog.Change

    kind = catalog.Change.Kind.PRICE
    title = factory.Sequence(lambda n: f"Change {n}")
    subject = "gpt-oss-120b (On demand)"
    before = factory.LazyFunction(lambda: {"output_usd_per_mtok": "0.6000"})
    after = factory.LazyFunction(lambda: {"output_usd_per_mtok": "0.5000"})
    tool = factory.SubFactory(ToolFactory, kind=catalog.Tool.Kind.PROVIDER)
    model = factory.SubFactory(LanguageModelFactory)
    hardware = factory.SubFactory(HardwareTargetFactory)
    source = factory.SubFactory(SourceFactory)
    url = "/tools/groq/"
