"""The fixture loaders: every app's loader named in order, run in one transaction."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.utils.module_loading import import_string

from catalog.models import Source
from core import loading
from core.loading import FixtureError


def test_every_app_with_fixtures_has_its_loader_the_catalog_first(settings):
    assert list(settings.FIXTURE_LOADERS) == ["catalog", "probes", "lab", "recommend"]
    for path in settings.FIXTURE_LOADERS.values():
        assert callable(import_string(path))


def write_a_source(*, fixtures_dir: Path, options) -> dict:
    Source.objects.create(key="written-by-first", title="Written by the first loader")
    return {"created": 1}


def refuse_a_row(*, fixtures_dir: Path, options) -> dict:
    raise FixtureError(path=fixtures_dir / "second.yaml", row="row 1", field="name", message="bad")


def record_the_directory(*, fixtures_dir: Path, options) -> dict:
    return {"rows": {"created": 0, "updated": 0, "unchanged": 0}, "fixtures_dir": fixtures_dir}


@pytest.mark.django_db
def test_a_failing_loader_rolls_back_the_loaders_before_it(settings, tmp_path: Path):
    settings.FIXTURE_LOADERS = {"first": f"{__name__}.write_a_source", "second": f"{__name__}.refuse_a_row"}

    with pytest.raises(FixtureError, match=r"second\.yaml: row 1: field 'name': bad"):
        loading.load_all(fixtures_dir=tmp_path)

    assert not Source.objects.filter(key="written-by-first").exists()


@pytest.mark.django_db
def test_load_all_passes_the_fixtures_directory_and_returns_counts_per_loader(settings, tmp_path: Path):
    settings.FIXTURE_LOADERS = {"only": f"{__name__}.record_the_directory"}

    assert loading.load_all(fixtures_dir=tmp_path) == {
        "only": {"rows": {"created": 0, "updated": 0, "unchanged": 0}, "fixtures_dir": tmp_path}
    }
