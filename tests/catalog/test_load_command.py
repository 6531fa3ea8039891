"""`make catalog` (manage.py load_catalog) says what it changes in rows that exist: each field it sets back over
an edit made since the last load (tool, field, old → new), with an entry in the audit trail; --keep-edits leaves
those edits alone; a broken fixture file, whichever it is, gives the same one-line error and loads nothing."""
import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalog.models import PriceItem, Tool
from core.loading import LOADER_NAME
from core.models import AuditEntry

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _load(*args: str) -> str:
    out = io.StringIO()
    call_command("load_catalog", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def loaded():
    _load()


def test_a_reload_reports_and_audits_each_edit_it_reverts(loaded):
    original = Tool.objects.get(slug="vllm").verdict
    Tool.objects.filter(slug="vllm").update(verdict="Edited by staff.")
    price = PriceItem.objects.filter(tool__slug="groq", output_usd_per_mtok__isnull=False).first()
    fixture_price = price.output_usd_per_mtok
    PriceItem.objects.filter(pk=price.pk).update(output_usd_per_mtok="99.0000")

    output = _load()

    assert Tool.objects.get(slug="vllm").verdict == original
    assert PriceItem.objects.get(pk=price.pk).output_usd_per_mtok == fixture_price
    assert "reverted an edit: tools[" in output and "(slug=vllm): verdict: 'Edited by staff.' → " in output
    assert f"(item={price.item}): output_usd_per_mtok: '99.0000' → '{fixture_price:f}'" in output
    entry = AuditEntry.objects.filter(username=LOADER_NAME, object_type="catalog.tool", action="update").latest("id")
    assert entry.changes["verdict"] == {"old": "Edited by staff.", "new": original}
    assert "updated from the fixture" not in output


def test_keep_edits_leaves_edits_alone_and_still_applies_fixture_changes(loaded, tmp_path):
    Tool.objects.filter(slug="vllm").update(verdict="Edited by staff.")
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    rated = fixtures / "catalog" / "tools_rated.yaml"
    rated.write_text(rated.read_text().replace("heavy prompt reuse", "very heavy prompt reuse"))

    output = _load("--keep-edits", "--fixtures-dir", str(fixtures))

    assert Tool.objects.get(slug="vllm").verdict == "Edited by staff."
    assert "kept an edit (--keep-edits): tools[" in output and "verdict: 'Edited by staff.'" in output
    assert "very heavy prompt reuse" in Tool.objects.get(slug="sglang").ideal_for
    assert "updated from the fixture: tools[" in output and "(slug=sglang): ideal_for:" in output


def test_a_reload_of_unchanged_fixtures_reports_nothing(loaded):
    output = _load()
    assert "reverted" not in output and "updated from the fixture" not in output


@pytest.mark.parametrize("broken", ["probe_targets.yaml", "use_cases.yaml", "catalog/sources.yaml"])
def test_every_broken_fixture_file_gives_the_same_one_line_error_and_loads_nothing(tmp_path, broken):
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    path = fixtures / broken
    path.write_text(path.read_text() + "\n  - [unclosed\n")

    with pytest.raises(CommandError) as raised:
        _load("--fixtures-dir", str(fixtures))

    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"Nothing was loaded. {path}: line ") and "not valid YAML" in message
    assert not Tool.objects.exists()
