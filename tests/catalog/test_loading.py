"""The catalog fixture loader on real PostgreSQL: idempotent, respectful of admin edits, strict on bad data."""
import datetime
import re
import shutil
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.management import CommandError, call_command

from catalog.loading import load
from catalog.models import (
    ApiSurface,
    Caveat,
    Feature,
    HardwareSpec,
    HardwareSupport,
    HardwareTarget,
    Licence,
    PriceItem,
    QuantFormat,
    Source,
    Tool,
    ToolApiSurface,
    ToolFeature,
    ToolQuantFormat,
)
from core.loading import FixtureError
from tests.factories import CaveatFactory, HardwareTargetFactory, PriceItemFactory, SourceFactory, ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES_DIR = Path(settings.BASE_DIR) / "fixtures"
CATALOG_MODELS = (
    Source, Licence, HardwareTarget, QuantFormat, ApiSurface, Feature, Tool, PriceItem, HardwareSupport,
    ToolQuantFormat, ToolApiSurface, ToolFeature, Caveat, HardwareSpec, Tool.sources.through,
)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in CATALOG_MODELS}


def catalog_copy(tmp_path: Path) -> Path:
    """A private copy of the real fixtures directory that a test may break."""
    target = tmp_path / "fixtures"
    shutil.copytree(FIXTURES_DIR / "catalog", target / "catalog")
    return target


def edit_yaml(path: Path, change) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def tool_row(document: dict, slug: str) -> dict:
    return next(row for row in document["tools"] if row["slug"] == slug)


def test_first_load_creates_every_row_and_second_load_changes_nothing():
    first = load(fixtures_dir=FIXTURES_DIR)
    after_first = row_counts()

    second = load(fixtures_dir=FIXTURES_DIR)

    assert first["tools"].created == Tool.objects.count() >= 13 + 14
    assert first["tool_prices"].created == PriceItem.objects.count() > 0
    assert row_counts() == after_first
    for section, counts in second.items():
        assert (counts.created, counts.updated) == (0, 0), section
        assert counts.unchanged == first[section].created + first[section].updated, section


def test_command_prints_counts_and_loads_the_other_apps_fixtures():
    out = StringIO()
    call_command("load_catalog", fixtures_dir=FIXTURES_DIR, stdout=out)
    call_command("load_catalog", stdout=(second := StringIO()))

    assert "catalog.tools: " in out.getvalue()
    for app in ("recommend", "probes"):
        assert re.search(rf"^{app}\.\w+: \d+", out.getvalue(), flags=re.MULTILINE), app
    assert f"catalog.tools: 0 created, 0 updated, {Tool.objects.count()} unchanged" in second.getvalue()
    assert "Fixtures loaded." in second.getvalue()


def test_rows_added_outside_the_fixtures_survive_a_reload():
    load(fixtures_dir=FIXTURES_DIR)
    vllm = Tool.objects.get(slug="vllm")
    own_tool = ToolFactory(slug="in-house-engine", name="In-house engine", rating=Decimal("3.0"))
    own_source = SourceFactory(key="team-notes")
    own_price = PriceItemFactory(tool=vllm, item="Support contract", unit=PriceItem.Unit.PER_MONTH,
                                 amount_usd=Decimal("900"), input_usd_per_mtok=None, output_usd_per_mtok=None)
    own_caveat = CaveatFactory(tool=vllm, key="team-warning", title="Pin the version", source=own_source)
    own_target = HardwareTargetFactory(slug="lab-fpga", name="Lab FPGA")
    HardwareSupport.objects.create(tool=vllm, hardware=own_target, level=HardwareSupport.Level.PARTIAL)
    vllm.sources.add(own_source)

    load(fixtures_dir=FIXTURES_DIR)

    own_tool.refresh_from_db()
    own_price.refresh_from_db()
    own_caveat.refresh_from_db()
    assert own_tool.rating == Decimal("3.0")
    assert own_price.amount_usd == Decimal("900")
    assert own_caveat.title == "Pin the version"
    assert HardwareSupport.objects.filter(tool=vllm, hardware=own_target).exists()
    assert vllm.sources.filter(key="team-notes").exists()


def test_fixture_rows_edited_in_the_database_are_restored():
    load(fixtures_dir=FIXTURES_DIR)
    Tool.objects.filter(slug="vllm").update(rating=Decimal("1.0"), verdict="Edited in the admin.")
    Tool.objects.filter(slug="hugging-face-tgi").update(rating=Decimal("4.9"), rank=1)
    together_price = PriceItem.objects.get(tool__slug="together-ai", item="gpt-oss-120B")
    together_price.output_usd_per_mtok = Decimal("9.99")
    together_price.save()
    PriceItem.objects.filter(tool__slug="groq", item="gpt-oss-20b").delete()
    Caveat.objects.filter(tool__slug="llama-cpp", key="rpc-backend-insecure").update(severity="info")

    counts = load(fixtures_dir=FIXTURES_DIR)

    vllm = Tool.objects.get(slug="vllm")
    assert vllm.rating == Decimal("4.7")
    assert vllm.verdict.startswith("Still the engine to reach for")
    tgi = Tool.objects.get(slug="hugging-face-tgi")
    assert (tgi.rating, tgi.rank) == (None, None)
    assert PriceItem.objects.get(pk=together_price.pk).output_usd_per_mtok == Decimal("0.60")
    assert PriceItem.objects.get(tool__slug="groq", item="gpt-oss-20b").input_usd_per_mtok == Decimal("0.075")
    assert Caveat.objects.get(tool__slug="llama-cpp", key="rpc-backend-insecure").severity == "security"
    assert counts["tools"].updated == 2
    assert counts["tool_prices"].updated == 1
    assert counts["tool_prices"].created == 1
    assert counts["tool_caveats"].updated == 1


def test_price_without_its_own_date_takes_the_verification_date_of_its_source():
    load(fixtures_dir=FIXTURES_DIR)

    for price in PriceItem.objects.select_related("source"):
        assert price.verified_on == price.source.verified_on, price.item
    # The engine comparison's prices carry the day it was verified; a provider's own page, the day it was read.
    seed = PriceItem.objects.filter(source__key="seed-002-engine-comparison")
    assert set(seed.values_list("verified_on", flat=True)) == {datetime.date(2026, 10, 19)}
    assert PriceItem.objects.get(tool__slug="fireworks-ai", model__slug="gpt-oss-120b").verified_on == datetime.date(
        2026, 12, 1)


REMOVED = object()  # the field is taken out of the row
SURFACE = "api_surfaces[0] (api_surface=openai-chat)"


@pytest.mark.parametrize(
    ("slug", "path", "value", "expected_row", "expected_field"),
    [
        ("vllm", ["prices", 0, "unit"], "per_fortnight", "tools[1] (slug=vllm) > prices[0] (item=vLLM (self-hosted))",
         "unit"),
        ("groq", ["rating"], 7.5, "tools[10] (slug=groq)", "rating"),
        ("sglang", ["ratting"], 4.4, "tools[4] (slug=sglang)", "ratting"),
        ("cerebras", ["caveats", 0, "source"], "no-such-source",
         "tools[11] (slug=cerebras) > caveats[0] (key=code-plans-sold-out)", "source"),
        ("together-ai", ["prices", 1, "output_usd_per_mtok"], "sixty cents",
         "tools[3] (slug=together-ai) > prices[1] (item=gpt-oss-120B)", "output_usd_per_mtok"),
        ("mlx", ["name"], REMOVED, "tools[5] (slug=mlx)", "name"),
        ("groq", ["api_surfaces", 0, "checks", "logprobs"], "maybe", f"tools[10] (slug=groq) > {SURFACE}", "checks"),
        ("groq", ["api_surfaces", 0, "checks", "telepathy"], "rejected", f"tools[10] (slug=groq) > {SURFACE}",
         "checks"),
        ("cerebras", ["api_surfaces", 0, "checks", "n", "source"], "no-such-source",
         f"tools[11] (slug=cerebras) > {SURFACE}", "checks"),
        ("cerebras", ["api_surfaces", 0, "checks", "logprobs", "model"], "no-such-model",
         f"tools[11] (slug=cerebras) > {SURFACE}", "checks"),
        ("cerebras", ["api_surfaces", 0, "checks", "logprobs", "not_with"], ["telepathy"],
         f"tools[11] (slug=cerebras) > {SURFACE}", "checks"),
    ],
)
def test_bad_fixture_data_names_file_row_and_field_and_loads_nothing(tmp_path, slug, path, value, expected_row,
                                                                     expected_field):
    def change(document):
        *parents, field = path
        container = tool_row(document, slug)
        for key in parents:
            container = container[key]
        if value is REMOVED:
            del container[field]
        else:
            container[field] = value

    fixtures = catalog_copy(tmp_path)
    edit_yaml(fixtures / "catalog" / "tools_rated.yaml", change)

    with pytest.raises(FixtureError) as raised:
        load(fixtures_dir=fixtures)

    error = raised.value
    assert error.path.endswith("tools_rated.yaml")
    assert error.row == expected_row
    assert error.field == expected_field
    assert f"field '{expected_field}'" in str(error)
    assert all(count == 0 for count in row_counts().values())


def test_failed_reload_leaves_a_loaded_catalog_exactly_as_it_was(tmp_path):
    load(fixtures_dir=FIXTURES_DIR)
    before = row_counts()
    fixtures = catalog_copy(tmp_path)

    def edit_early_row_then_break_a_late_one(document):
        tool_row(document, "llama-cpp")["verdict"] = "A verdict that must not be saved."
        tool_row(document, "deepinfer")["prices"][0]["tier"] = "whenever"

    edit_yaml(fixtures / "catalog" / "tools_rated.yaml", edit_early_row_then_break_a_late_one)

    with pytest.raises(CommandError) as raised:
        call_command("load_catalog", fixtures_dir=fixtures, stdout=StringIO())

    message = str(raised.value)
    assert "tools_rated.yaml" in message
    assert "tools[12] (slug=deepinfer) > prices[0]" in message
    assert "field 'tier'" in message
    assert row_counts() == before
    assert Tool.objects.get(slug="llama-cpp").verdict.startswith("No engine reaches more hardware")


def test_the_same_natural_key_twice_is_rejected(tmp_path):
    fixtures = catalog_copy(tmp_path)
    (fixtures / "catalog" / "zz_extra.yaml").write_text(
        "licences:\n  - spdx_id: MIT\n    name: MIT again\n", encoding="utf-8"
    )

    with pytest.raises(FixtureError) as raised:
        load(fixtures_dir=fixtures)

    assert raised.value.path.endswith("zz_extra.yaml")
    assert raised.value.field == "spdx_id"
    assert "duplicate of licences.yaml" in raised.value.message


def test_unknown_section_and_invalid_yaml_are_reported_with_the_file(tmp_path):
    fixtures = catalog_copy(tmp_path)
    extra = fixtures / "catalog" / "zz_extra.yaml"
    extra.write_text("toolz: []\n", encoding="utf-8")

    with pytest.raises(FixtureError, match=r"zz_extra\.yaml: \(file\): field 'toolz': unknown section"):
        load(fixtures_dir=fixtures)

    extra.write_text("tools: [\n", encoding="utf-8")
    with pytest.raises(FixtureError, match=r"zz_extra\.yaml: line 2, column 1: field .-.: not valid YAML: did not find expected node content$"):
        load(fixtures_dir=fixtures)


def test_if_empty_loads_an_empty_catalog_and_leaves_a_loaded_one_alone():
    call_command("load_catalog", "--if-empty", stdout=StringIO())
    assert Tool.objects.filter(slug="vllm").exists()
    Tool.objects.filter(slug="vllm").update(verdict="Edited by staff.")

    out = StringIO()
    call_command("load_catalog", "--if-empty", stdout=out)

    assert "already loaded" in out.getvalue()
    assert Tool.objects.get(slug="vllm").verdict == "Edited by staff."


def test_documented_check_outcomes_load_with_their_source():
    load()

    groq_chat = ToolApiSurface.objects.select_related("source").get(tool__slug="groq", api_surface__slug="openai-chat")
    assert groq_chat.checks["logit_bias"] == "rejected"
    assert groq_chat.source.key == "groq-docs-openai"


def test_every_documented_check_name_is_a_compat_check():
    from scoring.profile import NEEDS_CHOICES, values_of

    load()
    names = {name for link in ToolApiSurface.objects.all() for name in link.checks}
    assert names and names <= set(values_of(NEEDS_CHOICES))
