"""The change record of catalog writes: one entry per changed row and kind, from the API, the admin and the fixture
loader alike, with before and after; nothing for a write that changes nothing a reader tracks."""
import datetime
import io
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from catalog.models import Change, DocumentedAbsence, PriceItem, Tool
from catalog.services import price_item_update, tool_update
from core.models import AuditEntry
from tests.factories import (
    FeatureFactory,
    LicenceFactory,
    PriceItemFactory,
    SourceFactory,
    ToolFactory,
)

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
GROQ_PRICE = "output_usd_per_mtok: 0.60, notes: Developer plan (pay as you go)."


def _load(*args: str) -> None:
    call_command("load_catalog", *args, stdout=io.StringIO())


def test_the_first_load_and_a_reload_of_the_unchanged_catalog_write_no_change():
    _load()
    assert AuditEntry.objects.exists()
    _load()
    assert not Change.objects.exists()


def test_a_reload_that_changes_one_price_writes_exactly_one_price_change(tmp_path):
    _load()
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    rated = fixtures / "catalog" / "tools_rated.yaml"
    assert rated.read_text().count(GROQ_PRICE) == 1
    rated.write_text(rated.read_text().replace(GROQ_PRICE, GROQ_PRICE.replace("0.60", "0.55")))

    _load("--fixtures-dir", str(fixtures))

    [change] = Change.objects.all()
    assert change.kind == Change.Kind.PRICE
    assert change.tool.slug == "groq" and change.model.slug == "gpt-oss-120b"
    assert change.before == {"output_usd_per_mtok": "0.6000"} and change.after == {"output_usd_per_mtok": "0.5500"}
    assert change.title == "Groq: gpt-oss-120b (On demand) output $0.60 → $0.55"
    assert change.source.key == "seed-002-engine-comparison"
    assert change.audit_entry.username == "load_catalog"

    _load("--fixtures-dir", str(fixtures))
    assert Change.objects.count() == 1


def test_a_price_service_write_records_who_and_what_but_not_an_unchanged_field():
    price = PriceItem.objects.get(pk=PriceItemFactory(output_usd_per_mtok=Decimal("0.60")).pk)
    price_item_update(actor=None, price_item=price, data={"notes": "Only a note."})
    assert not Change.objects.exists()

    price_item_update(actor=None, price_item=price, data={"input_usd_per_mtok": Decimal("0.10"),
                                                          "output_usd_per_mtok": Decimal("0.50")})

    [change] = Change.objects.all()
    assert change.before == {"input_usd_per_mtok": "0.1500", "output_usd_per_mtok": "0.6000"}
    assert change.after == {"input_usd_per_mtok": "0.10", "output_usd_per_mtok": "0.50"}
    assert "input $0.15 → $0.10, output $0.60 → $0.50" in change.title


def test_rating_and_licence_changes_are_one_entry_each():
    rating_source = SourceFactory(key="review")
    tool = ToolFactory(slug="engine", name="Engine", rating=Decimal("4.1"), rating_source=rating_source,
                       licence=LicenceFactory(spdx_id="MIT", name="MIT License"))
    apache = LicenceFactory(spdx_id="Apache-2.0", name="Apache License 2.0")

    tool_update(actor=None, tool=tool, data={"rating": Decimal("4.5"), "licence": apache, "verdict": "New words."})

    changes = {change.kind: change for change in Change.objects.all()}
    assert set(changes) == {Change.Kind.RATING, Change.Kind.LICENCE}
    assert changes["rating"].before == {"rating": "4.1"} and changes["rating"].after == {"rating": "4.5"}
    assert changes["rating"].source == rating_source
    assert changes["licence"].title == "Engine: licence MIT License → Apache License 2.0"


def test_an_admin_price_edit_is_audited_and_recorded(admin_client):
    price = PriceItemFactory(output_usd_per_mtok=Decimal("0.60"), tool__name="Hosted")
    form = {name: getattr(price, name) for name in (
        "item", "unit", "tier", "input_usd_per_mtok", "amount_usd", "discount_percent", "notes", "position")}
    form.update({key: "" if value is None else value for key, value in form.items()})
    form.update(tool=price.tool_id, source=price.source_id, output_usd_per_mtok="0.45",
                verified_on=price.verified_on.isoformat(), model="")

    response = admin_client.post(f"/admin/catalog/priceitem/{price.pk}/change/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    [change] = Change.objects.all()
    assert change.kind == Change.Kind.PRICE
    assert change.before == {"output_usd_per_mtok": "0.6000"} and change.after == {"output_usd_per_mtok": "0.45"}
    assert change.audit_entry.username == "admin"


def test_a_documented_gap_added_in_the_admin_is_a_gap_change(admin_client):
    tool = ToolFactory(slug="engine", name="Engine")
    feature = FeatureFactory(slug="multi-lora", name="Multi-LoRA")
    source = SourceFactory(key="docs")

    response = admin_client.post("/admin/catalog/documentedabsence/add/", {
        "tool": tool.pk, "feature": feature.pk, "source": source.pk, "notes": "Not in the docs."})

    assert response.status_code == 302, response.content.decode()[:2000]
    assert DocumentedAbsence.objects.count() == 1
    [change] = Change.objects.all()
    assert change.kind == Change.Kind.GAP and change.tool == tool and change.before is None
    assert change.title == "Engine: documented gap, no Multi-LoRA"


def test_a_reported_figure_the_publisher_revised_is_published_evidence_dated_by_the_publisher(tmp_path):
    _load()
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    figures = fixtures / "catalog" / "reported_figures.yaml"
    text = figures.read_text()
    assert text.count("    value: 1844.1\n") == 1
    figures.write_text(text.replace("    value: 1844.1\n", "    value: 1900.0\n"))

    _load("--fixtures-dir", str(fixtures))

    [change] = Change.objects.all()
    assert change.kind == Change.Kind.EVIDENCE and change.tool.slug == "cerebras"
    assert change.before == {"value": "1844.1000"} and change.after["value"] == "1900.0000"
    assert change.effective_on == datetime.date(2026, 12, 1)
    assert change.after["publisher"] == "Artificial Analysis" and change.url.startswith("https://")


def test_writes_of_untracked_fields_and_models_write_nothing():
    tool = ToolFactory()
    tool_update(actor=None, tool=tool, data={"verdict": "Other words.", "website_url": "https://example.com"})
    assert Tool.objects.get(pk=tool.pk).verdict == "Other words."
    assert PriceItem.objects.count() == 0
    assert not Change.objects.exists()


def _admin_form_data(response) -> dict:
    """What the admin change page would post back unchanged: the object's form and every inline formset."""
    def value(raw):
        if raw is None:
            return ""
        if isinstance(raw, (list, tuple)) or hasattr(raw, "all"):
            return [getattr(item, "pk", item) for item in (raw.all() if hasattr(raw, "all") else raw)]
        return getattr(raw, "pk", raw)

    form = response.context["adminform"].form
    data = {name: value(form.initial.get(name, field.initial)) for name, field in form.fields.items()}
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{key}": raw for key, raw in formset.management_form.initial.items()})
        for row in formset.forms:
            # The row's key is not among a model form's initial values: it is not an editable field.
            data.update({row.add_prefix(name): value(row.initial.get(name, getattr(row.instance, name, None)))
                         for name in row.fields})
    return data


def test_a_price_edited_in_the_tool_page_inline_is_one_change(admin_client):
    price = PriceItemFactory(output_usd_per_mtok=Decimal("0.60"), tool__name="Hosted")
    page = admin_client.get(f"/admin/catalog/tool/{price.tool_id}/change/")
    data = _admin_form_data(page)
    [field] = [name for name, raw in data.items() if name.endswith("-output_usd_per_mtok")]
    data[field] = "0.40"

    response = admin_client.post(f"/admin/catalog/tool/{price.tool_id}/change/", data)

    assert response.status_code == 302
    [change] = Change.objects.all()
    assert change.kind == Change.Kind.PRICE and change.tool == price.tool
    assert change.before == {"output_usd_per_mtok": "0.6000"} and change.after == {"output_usd_per_mtok": "0.40"}
