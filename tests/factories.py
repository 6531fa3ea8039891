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
