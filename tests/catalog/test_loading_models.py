"""Loading models, offerings and reported figures: a figure without its publisher, link or dates never loads."""
from pathlib import Path

import pytest

from catalog.loading import load
from catalog.models import LanguageModel, ModelOffering, PriceItem, ReportedFigure, Source, Tool
from core.loading import FixtureError
from tests.catalog.test_loading import FIXTURES_DIR, catalog_copy, edit_yaml

pytestmark = pytest.mark.django_db

FIGURES_FILE = "reported_figures.yaml"


def edit_figures(fixtures: Path, change) -> None:
    edit_yaml(fixtures / "catalog" / FIGURES_FILE, lambda document: change(document["reported_figures"]))


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count()
            for model in (Source, Tool, PriceItem, LanguageModel, ModelOffering, ReportedFigure)}


@pytest.mark.parametrize("missing", ["url", "publisher", "observed_on", "verified_on"])
def test_figure_without_its_provenance_is_rejected_naming_row_and_field_and_nothing_loads(tmp_path, missing):
    fixtures = catalog_copy(tmp_path)
    edit_figures(fixtures, lambda rows: rows[2].pop(missing))

    with pytest.raises(FixtureError) as raised:
        load(fixtures_dir=fixtures)

    error = raised.value
    assert error.path.endswith(FIGURES_FILE)
    assert error.row == "reported_figures[2] (key=aa-low-fireworks-output-speed)"
    assert error.field == missing
    assert error.message == "this field is required"
    assert set(counts().values()) == {0}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda row: row.update(url="artificialanalysis.ai/models"), "url", "Enter a valid URL."),
        (lambda row: row.update(observed_on="last week"), "observed_on", "expected a date (YYYY-MM-DD)"),
        (lambda row: row.update(publisher="   "), "publisher", "This field cannot be blank."),
        (lambda row: row.update(metric="vibes"), "metric", "not a valid choice"),
        (lambda row: row.update(concurrency=10), "concurrency", "Only a throughput figure"),
    ],
)
def test_malformed_figure_is_rejected(tmp_path, change, field, message):
    fixtures = catalog_copy(tmp_path)
    edit_figures(fixtures, lambda rows: change(rows[0]))

    with pytest.raises(FixtureError) as raised:
        load(fixtures_dir=fixtures)

    assert raised.value.field == field
    assert message in raised.value.message
    assert set(counts().values()) == {0}


def test_failed_reload_keeps_the_loaded_figures_as_they_were(tmp_path):
    load(fixtures_dir=FIXTURES_DIR)
    before = counts()
    values = dict(ReportedFigure.objects.values_list("key", "value"))
    fixtures = catalog_copy(tmp_path)

    def change_one_then_break_another(rows):
        rows[0]["value"] = 1.0
        rows[-1].pop("url")

    edit_figures(fixtures, change_one_then_break_another)

    with pytest.raises(FixtureError):
        load(fixtures_dir=fixtures)

    assert counts() == before
    assert dict(ReportedFigure.objects.values_list("key", "value")) == values


def test_offerings_and_figures_load_idempotently_by_natural_key():
    first = load(fixtures_dir=FIXTURES_DIR)
    second = load(fixtures_dir=FIXTURES_DIR)

    for section in ("models", "model_offerings", "reported_figures"):
        assert first[section].created > 0
        assert (second[section].created, second[section].updated) == (0, 0)
