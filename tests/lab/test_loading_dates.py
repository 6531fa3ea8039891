"""Published benchmarks' dates: `observed_on` is the publisher's date (the page's own, else the commit that added the
figures or the data file) and `verified_on` the day the entry was checked; the loader refuses one published after
it was checked, the matrix's newest evidence is the newest publication, and the API, CSV and pages carry both."""
import copy
import datetime
import re
import shutil
from pathlib import Path

import pytest
import yaml
from django.urls import reverse

from catalog.models import Tool
from core.loading import FixtureError, default_fixtures_dir, load_all
from lab import evidence
from lab.loading import DATED_BY, FILENAME
from lab.models import SweepRun
from tests.factories import HardwareSpecFactory, LanguageModelFactory, SweepLevelFactory, SweepRunFactory, ToolFactory

pytestmark = pytest.mark.django_db
FIXTURES = default_fixtures_dir()
ENTRIES = yaml.safe_load((FIXTURES / FILENAME).read_text())["published_benchmarks"]
KEY = "gpustack-gpt-oss-120b-h100-sharegpt-vllm"


def _load_changed(tmp_path: Path, change) -> FixtureError:
    entries = copy.deepcopy(ENTRIES)
    change(next(entry for entry in entries if entry["key"] == KEY))
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "fixtures" / FILENAME).write_text(yaml.safe_dump({"published_benchmarks": entries}, sort_keys=False))
    with pytest.raises(FixtureError) as raised:
        load_all(fixtures_dir=tmp_path / "fixtures")
    assert not SweepRun.objects.exists() and not Tool.objects.exists()
    assert KEY in raised.value.row
    return raised.value


def test_an_entry_published_after_it_was_checked_is_refused_naming_the_entry_and_both_dates(tmp_path):
    error = _load_changed(tmp_path, lambda entry: entry.update(observed_on="2026-12-03", verified_on="2026-12-02"))
    assert error.field == "observed_on"
    assert "2026-12-03 is after verified_on 2026-12-02" in str(error)


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda entry: entry.update(dated_by="read"), "dated_by", "one of page, commit, dataset, unknown"),
    (lambda entry: entry.update(dated_by="unknown"), "observed_on", "must be empty when dated_by is unknown"),
    (lambda entry: entry.update(observed_on=None), "observed_on", "dated_by: unknown when none can be found"),
    (lambda entry: entry.update(observed_on="31 Oct 2025"), "observed_on", "expected a date"),
])
def test_a_date_that_does_not_say_where_it_comes_from_is_refused(tmp_path, change, field, message):
    error = _load_changed(tmp_path, change)
    assert error.field == field and message in str(error)


def test_an_entry_whose_publication_date_is_unknown_loads_without_one_and_says_so():
    load_all(fixtures_dir=FIXTURES)
    unknown = next(entry for entry in ENTRIES if entry["dated_by"] == "unknown")
    run = SweepRun.objects.get(key=unknown["key"])
    assert run.observed_on is None and run.card["dated_by"] == "unknown"
    assert run.verified_on == unknown["verified_on"]


# --- the fixture ---------------------------------------------------------------------------------------------


def test_every_entry_says_where_its_date_comes_from_and_none_is_dated_by_the_day_it_was_read():
    for entry in ENTRIES:
        assert entry.get("dated_by") in DATED_BY, entry["key"]
        notes = entry["notes"]
        assert "day it was read" not in notes, entry["key"]
        if entry["dated_by"] == "unknown":
            assert entry["observed_on"] is None and notes.startswith("Publication date not established"), entry["key"]
            continue
        assert entry["observed_on"] < entry["verified_on"], entry["key"]
        if entry["dated_by"] in ("commit", "dataset"):
            # The notes name the commit whose date is observed_on, and that date.
            sha = re.search(r"@([0-9a-f]{40}) \(", notes)
            assert sha and str(entry["observed_on"]) in notes[sha.end():sha.end() + 80], entry["key"]


def test_no_source_link_points_at_a_path_that_was_renamed_or_a_branch_it_never_reached():
    urls = {entry["url"] for entry in ENTRIES}
    assert not [url for url in urls if "performance-lab/glm-4.6/" in url]
    assert not [url for url in urls if "dstackai/benchmarks/blob/main/Deepseek-R1/" in url]
    assert not [url for url in urls if "/tree/" in url], "a link leads to the file holding the figures, not a folder"


# --- what the reader sees ------------------------------------------------------------------------------------


def _published(**fields) -> SweepRun:
    defaults = {"origin": SweepRun.Origin.PUBLISHED, "status": SweepRun.Status.IMPORTED, "target": None,
                "publisher": "A publisher", "url": "https://example.org/bench", "weight_format": "fp8",
                "verified_on": datetime.date(2026, 12, 2), "workload_key": "same-workload",
                "source_tool": "vllm-bench-serve", "engine_version": "1.0", "hardware_count": 1}
    return SweepRunFactory(**{**defaults, **fields})


@pytest.fixture
def dated_pair():
    model, hardware = LanguageModelFactory(slug="dated-model"), HardwareSpecFactory(slug="dated-gpu")
    older = _published(tool=ToolFactory(name="Older engine"), key="older", model=model, hardware=hardware,
                       observed_on=datetime.date(2025, 10, 31), card={"dated_by": "commit"})
    unknown = _published(tool=ToolFactory(name="Undated engine"), key="undated", model=model, hardware=hardware,
                         observed_on=None, card={"dated_by": "unknown"})
    for run in (older, unknown):
        SweepLevelFactory(run=run, level=8.0, output_tps=1000.0)
    return older, unknown


def test_the_newest_evidence_is_the_newest_publication_never_the_day_it_was_checked(dated_pair):
    row, = evidence.evidence_matrix().compared
    assert row.newest == "2025-10-31"


def test_the_api_and_csv_carry_the_publication_date_its_source_and_the_day_checked(dated_pair, client):
    rows = client.get(reverse("api:published-benchmark-list")).json()["results"]
    got = {row["key"]: (row["observed_on"], row["dated_by"], row["verified_on"]) for row in rows}
    assert got == {"older": ("2025-10-31", "commit", "2026-12-02"), "undated": (None, "unknown", "2026-12-02")}
    response = client.get(reverse("api:published-benchmark-point-list"), {"format": "csv"})
    header = response.content.decode().splitlines()[0].split(",")
    assert {"observed_on", "dated_by", "verified_on"} <= set(header)


def test_the_comparison_shows_published_and_checked_dates_apart(dated_pair, client):
    page = client.get(reverse("lab:evidence-detail", args=["dated-model", "dated-gpu"])).content.decode()
    assert ('published <time datetime="2025-10-31">2025-10-31</time> <abbr title="the date of the commit that added '
            'these figures to the page">(commit date)</abbr><br>checked <time datetime="2026-12-02">2026-12-02</time>'
            ) in page
    assert 'publication date unknown<br>checked <time datetime="2026-12-02">2026-12-02</time>' in page
