"""The published-benchmark loader and load modes: every entry states how its load was sent, the level is stored at
that load, and an entry whose figures contradict its mode is refused naming the field."""
import copy
import csv
import io
import shutil
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from core.loading import FixtureError, default_fixtures_dir, load_all
from lab.loading import FILENAME
from lab.models import LoadMode, SweepRun

pytestmark = pytest.mark.django_db
FIXTURES = default_fixtures_dir()
ENTRIES = yaml.safe_load((FIXTURES / FILENAME).read_text())["published_benchmarks"]
BURST = "gpustack-gpt-oss-120b-h100-sharegpt-vllm"
CONCURRENCY = "gpustack-gpt-oss-120b-h100-sharegpt-c4-vllm-baseline"


@pytest.fixture
def loaded():
    call_command("load_catalog", verbosity=0)


def _entry(entries: list, key: str) -> dict:
    return next(entry for entry in entries if entry["key"] == key)


def _copied(tmp_path: Path, entries: list) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "fixtures" / FILENAME).write_text(yaml.safe_dump({"published_benchmarks": entries}, sort_keys=False))
    return tmp_path / "fixtures"


def test_every_entry_states_its_mode_first_and_the_tool_agrees_with_it():
    for entry in ENTRIES:
        workload = entry["workload"]
        assert next(iter(workload)) == "mode" and workload["mode"] in LoadMode.values, entry["key"]
        # trtllm-bench throughput measures no per-request latency; a serving benchmark never is offline.
        assert (workload["mode"] == LoadMode.OFFLINE) == (entry["measured_with"] == "trtllm-bench"), entry["key"]
        limited = workload["max_concurrency"] or any(point.get("max_concurrency") for point in entry["points"])
        assert bool(limited) == (workload["mode"] == LoadMode.CONCURRENCY), entry["key"]


def test_each_level_is_stored_at_the_load_its_mode_states(loaded):
    burst = SweepRun.objects.get(key=BURST)
    assert burst.load_mode == LoadMode.BURST
    assert [(level.mode, level.level, level.requests) for level in burst.levels.all()] == [("burst", 1000.0, 1000)]
    closed = SweepRun.objects.get(key=CONCURRENCY)
    assert closed.load_mode == LoadMode.CONCURRENCY
    assert [(level.mode, level.level) for level in closed.levels.all()] == [("concurrency", 4.0)]
    offline = SweepRun.objects.filter(load_mode=LoadMode.OFFLINE)
    assert offline.count() == sum(entry["workload"]["mode"] == "offline" for entry in ENTRIES)
    assert set(offline.values_list("levels__mode", flat=True)) == {"offline"}
    assert not SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED, load_mode="").exists()


@pytest.mark.parametrize(("key", "change", "field"), [
    (BURST, lambda entry: entry["workload"].pop("mode"), "workload.mode"),
    (BURST, lambda entry: entry["workload"].update(mode="closed-loop"), "workload.mode"),
    (BURST, lambda entry: entry["workload"].update(mode="concurrency"), "points[0].max_concurrency"),
    (BURST, lambda entry: entry["workload"].update(mode="request_rate"), "points[0].request_rate"),
    (CONCURRENCY, lambda entry: entry["workload"].update(mode="burst"), "points[0].max_concurrency"),
])
def test_a_missing_mode_or_one_the_figures_contradict_is_refused_naming_the_field(tmp_path, key, change, field):
    entries = copy.deepcopy(ENTRIES)
    change(_entry(entries, key))
    with pytest.raises(FixtureError) as raised:
        load_all(fixtures_dir=_copied(tmp_path, entries))
    assert raised.value.field == field and key in raised.value.row
    assert not SweepRun.objects.exists()


def test_the_api_and_the_csv_carry_each_series_mode_and_the_load_in_words(loaded, client):
    series = client.get(reverse("api:published-benchmark-list"), {"page_size": 500}).json()["results"]
    modes = {row["key"]: row["mode"] for row in series}
    assert modes == {entry["key"]: entry["workload"]["mode"] for entry in ENTRIES}
    burst = next(row for row in series if row["key"] == BURST)
    assert burst["points"][0]["load"] == "1,000 prompts at once" and "mode" not in burst["points"][0]
    response = client.get(reverse("api:published-benchmark-point-list"), {"format": "csv", "model": "gpt-oss-120b"})
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {row["key"]: (row["mode"], row["load"]) for row in rows}[BURST] == ("burst", "1,000 prompts at once")
