"""The lab's part of the change record, through the fixture loader: an engine release names the published series it
makes older, and a newly published series is published evidence dated by its publisher."""
import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from catalog.models import Change
from lab.models import SweepRun

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VLLM_RELEASE = 'latest_version: "0.31.0"'


def _load(fixtures: Path) -> None:
    call_command("load_catalog", "--fixtures-dir", str(fixtures), stdout=io.StringIO())


def _copy(tmp_path: Path) -> Path:
    fixtures = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, fixtures)
    return fixtures


def test_a_newer_engine_release_is_one_change_naming_the_published_series_it_makes_older(tmp_path):
    fixtures = _copy(tmp_path)
    _load(fixtures)
    rated = fixtures / "catalog" / "tools_rated.yaml"
    assert rated.read_text().count(VLLM_RELEASE) == 1
    rated.write_text(rated.read_text().replace(VLLM_RELEASE, 'latest_version: "0.32.0"'))

    _load(fixtures)

    [change] = Change.objects.all()
    assert change.kind == Change.Kind.RELEASE and change.tool.slug == "vllm"
    assert change.before == {"latest_version": "0.31.0"} and change.after["latest_version"] == "0.32.0"
    published = SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED, tool__slug="vllm")
    assert published.exists()
    # One line per setup a reader tells apart (publisher, version, model, hardware), counting its series.
    named = change.after["older_series"]
    assert len(named) == len(set(named)) < published.count()
    assert any(name.startswith("GPUStack: vLLM v0.10.2, gpt-oss-120b on 1 × ") for name in change.after["older_series"])
    assert change.title == f"vLLM 0.32.0 released; {published.count()} published series measured an older version"
    assert change.source.key == "vllm-release-0-31-0"

    # Back to the release before is a correction of the fact, not a release.
    _load(FIXTURES)
    assert Change.objects.filter(kind=Change.Kind.RELEASE).count() == 1


def test_a_newly_published_series_is_one_evidence_change(tmp_path):
    fixtures = _copy(tmp_path)
    benchmarks = fixtures / "published_benchmarks.yaml"
    full = benchmarks.read_text()
    last = full.rindex("\n- key: ")
    benchmarks.write_text(full[:last + 1])
    _load(fixtures)
    benchmarks.write_text(full)

    _load(fixtures)

    [change] = Change.objects.all()
    run = SweepRun.objects.get(key=full[last + len("\n- key: "):].split("\n", 1)[0].strip())
    assert change.kind == Change.Kind.EVIDENCE and change.tool == run.tool and change.model == run.model
    assert change.effective_on == run.observed_on and change.url == run.url
    assert change.after["publisher"] == run.publisher and change.before is None
