"""factory_boy factories shared by every test package."""
import datetime
from decimal import Decimal

import factory
from factory.django import DjangoModelFactory

from catalog import models as catalog
from probes import models as probes


class SourceFactory(DjangoModelFactory):
    class Meta:
        model = catalog.Source
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"source-{n}")
    title = factory.Sequence(lambda n: f"Source document {n}")
    url = factory.Sequence(lambda n: f"https://example.org/source/{n}")
    verified_on = datetime.date(2026, 10, 19)


class LicenceFactory(DjangoModelFactory):
    class Meta:
        model = catalog.Licence
        django_get_or_create = ("spdx_id",)

    spdx_id = "Apache-2.0"
    name = "Apache License 2.0"
    is_open_source = True


class HardwareTargetFactory(DjangoModelFactory):
    class Meta:
        model = catalog.HardwareTarget
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"hardware-{n}")
    name = factory.Sequence(lambda n: f"Hardware {n}")
    category = catalog.HardwareTarget.Category.GPU


class QuantFormatFactory(DjangoModelFactory):
    class Meta:
        model = catalog.QuantFormat
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"format-{n}")
    name = factory.Sequence(lambda n: f"Format {n}")


class ApiSurfaceFactory(DjangoModelFactory):
    class Meta:
        model = catalog.ApiSurface
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"api-{n}")
    name = factory.Sequence(lambda n: f"API {n}")


class FeatureFactory(DjangoModelFactory):
    class Meta:
        model = catalog.Feature
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"feature-{n}")
    name = factory.Sequence(lambda n: f"Feature {n}")


class ToolFactory(DjangoModelFactory):
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


class PriceItemFactory(DjangoModelFactory):
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


class HardwareSupportFactory(DjangoModelFactory):
    class Meta:
        model = catalog.HardwareSupport

    tool = factory.SubFactory(ToolFactory)
    hardware = factory.SubFactory(HardwareTargetFactory)
    level = catalog.HardwareSupport.Level.NATIVE


class CaveatFactory(DjangoModelFactory):
    class Meta:
        model = catalog.Caveat

    tool = factory.SubFactory(ToolFactory)
    key = factory.Sequence(lambda n: f"caveat-{n}")
    title = factory.Sequence(lambda n: f"Caveat {n}")
    body = "Something to know before deploying."
    source = factory.SubFactory(SourceFactory)


class HardwareSpecFactory(DjangoModelFactory):
    class Meta:
        model = catalog.HardwareSpec
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"device-{n}")
    name = factory.Sequence(lambda n: f"Device {n}")
    vendor = "NVIDIA"
    memory_gb = Decimal("80")
    bandwidth_gb_s = Decimal("3350")
    source = factory.SubFactory(SourceFactory)


class ProbeTargetFactory(DjangoModelFactory):
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


class ProbeRunFactory(DjangoModelFactory):
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


class RequestMeasurementFactory(DjangoModelFactory):
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


class CompatOutcomeFactory(DjangoModelFactory):
    class Meta:
        model = probes.CompatOutcome

    run = factory.SubFactory(ProbeRunFactory, suite=probes.ProbeRun.Suite.COMPAT, workload="")
    check_name = "logprobs"
    outcome = probes.CompatOutcome.Outcome.SUPPORTED


class MeasurementSummaryFactory(DjangoModelFactory):
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


class CompatStatusFactory(DjangoModelFactory):
    class Meta:
        model = probes.CompatStatus

    target = factory.SubFactory(ProbeTargetFactory)
    check_name = "logprobs"
    outcome = probes.CompatOutcome.Outcome.SUPPORTED
    checked_at = factory.LazyFunction(lambda: datetime.datetime.now(datetime.UTC))
