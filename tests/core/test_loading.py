"""The fixture loader registry: dependency order, one transaction, and every app's loader registered."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from catalog.models import Source
from core import loading
from core.loading import FixtureError, FixtureLoader, fixture_loaders_ordered


def _loaders(**after: tuple[str, ...]) -> dict[str, FixtureLoader]:
    return {name: FixtureLoader(name=name, load=lambda *, fixtures_dir: {}, after=deps) for name, deps in after.items()}


def test_loaders_run_after_the_loaders_they_name():
    loaders = _loaders(recommend=("catalog",), probes=("catalog", "recommend"), catalog=())

    assert [loader.name for loader in fixture_loaders_ordered(loaders)] == ["catalog", "recommend", "probes"]


def test_independent_loaders_keep_registration_order():
    loaders = _loaders(catalog=(), probes=("catalog",), recommend=("catalog",))

    assert [loader.name for loader in fixture_loaders_ordered(loaders)] == ["catalog", "probes", "recommend"]


def test_a_missing_dependency_is_named():
    with pytest.raises(ImproperlyConfigured, match="'probes' runs after 'catalog', which is not registered"):
        fixture_loaders_ordered(_loaders(probes=("catalog",)))


def test_loaders_waiting_for_each_other_are_refused():
    with pytest.raises(ImproperlyConfigured, match="wait for each other"):
        fixture_loaders_ordered(_loaders(a=("b",), b=("a",)))


def test_every_app_with_fixtures_registers_its_loader_in_order():
    ordered = [loader.name for loader in fixture_loaders_ordered()]

    assert ordered[0] == "catalog"
    assert set(ordered) >= {"catalog", "probes", "recommend"}


@pytest.mark.django_db
def test_a_failing_loader_rolls_back_the_loaders_before_it(monkeypatch, tmp_path: Path):
    def first(*, fixtures_dir: Path, options) -> dict:
        Source.objects.create(key="written-by-first", title="Written by the first loader")
        return {"created": 1}

    def second(*, fixtures_dir: Path, options) -> dict:
        raise FixtureError(path=fixtures_dir / "second.yaml", row="row 1", field="name", message="bad")

    monkeypatch.setattr(loading, "_LOADERS", {})
    loading.fixture_loader_register(name="first", load=first)
    loading.fixture_loader_register(name="second", load=second, after=("first",))

    with pytest.raises(FixtureError, match=r"second\.yaml: row 1: field 'name': bad"):
        loading.load_all(fixtures_dir=tmp_path)

    assert not Source.objects.filter(key="written-by-first").exists()


@pytest.mark.django_db
def test_load_all_passes_the_fixtures_directory_and_returns_counts_per_loader(monkeypatch, tmp_path: Path):
    seen: list[Path] = []

    def record(*, fixtures_dir: Path, options) -> dict:
        seen.append(fixtures_dir)
        return {"rows": {"created": 0, "updated": 0, "unchanged": 0}}

    monkeypatch.setattr(loading, "_LOADERS", {})
    loading.fixture_loader_register(name="only", load=record)

    assert loading.load_all(fixtures_dir=tmp_path) == {"only": {"rows": {"created": 0, "updated": 0, "unchanged": 0}}}
    assert seen == [tmp_path]
