"""Published engine benchmarks: the loader's checks, like-for-like comparisons, and the pages and API that show
them, on the real fixtures."""
import copy
import datetime
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from catalog.models import Tool
from core.loading import FixtureError, default_fixtures_dir, load_all
from lab import evidence
from lab.loading import FILENAME, load
from lab.models import SweepRun
from tests.factories import (
    HardwareSpecFactory,
    LanguageModelFactory,
    SweepLevelFactory,
    SweepRunFactory,
    ToolFactory,
)

pytestmark = pytest.mark.django_db
FIXTURES = default_fixtures_dir()
ENTRIES = yaml.safe_load((FIXTURES / FILENAME).read_text())["published_benchmarks"]
# The key a random 1,000-in, 200-out concurrency sweep is stored under, by a published entry and by a run measured
# here.
RANDOM_WORKLOAD_KEY = evidence.workload_key({"identity": evidence.workload_identity(
    mode="concurrency", dataset="random", input_tokens=1000, output_tokens=200, num_prompts=None)})


@pytest.fixture
def loaded():
    call_command("load_catalog", verbosity=0)


def _write(tmp_path: Path, entries: list) -> Path:
    (tmp_path / FILENAME).write_text(yaml.safe_dump({"published_benchmarks": entries}, sort_keys=False))
    return tmp_path


def _published(**fields) -> SweepRun:
    defaults = {"origin": SweepRun.Origin.PUBLISHED, "status": SweepRun.Status.IMPORTED, "target": None,
                "publisher": "A publisher", "url": "https://example.org/bench", "weight_format": "fp8",
                "observed_on": datetime.date(2026, 6, 1), "verified_on": datetime.date(2026, 11, 1),
                "workload_key": "same-workload", "source_tool": "vllm-bench-serve", "engine_version": "1.0"}
    return SweepRunFactory(**{**defaults, **fields})


# --- the loader --------------------------------------------------------------------------------------------


def test_every_fixture_entry_loads_once_with_its_points_and_a_second_load_changes_nothing(loaded):
    runs = SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED)
    assert runs.count() == len(ENTRIES)
    for entry in ENTRIES:
        run = runs.get(key=entry["key"])
        assert (run.tool.slug, run.hardware.slug, run.model.slug) == (entry["engine"], entry["hardware"], entry["model"])
        assert (run.publisher, run.url, run.hardware_count) == (entry["publisher"], entry["url"], entry["hardware_count"])
        assert run.levels.count() == len(entry["points"])
    assert load(fixtures_dir=FIXTURES) == {"created": 0, "updated": 0, "unchanged": len(ENTRIES)}


def test_a_printed_block_is_stored_to_the_exact_figures_it_prints(loaded):
    entry = next(entry for entry in ENTRIES if entry["key"] == "gpustack-gpt-oss-120b-h100-sharegpt-vllm")
    assert "Output token throughput (tok/s):         2901.05" in entry["points"][0]["console"]
    level = SweepRun.objects.get(key=entry["key"]).levels.get()
    assert (level.output_tps, level.total_tps, level.request_rate) == (2901.05, 6095.37, 14.84)
    assert level.ttft_ms["mean"] == 24830.45 and level.ttft_ms["p50"] == 25973.43 and level.ttft_ms["p99"] == 54033.43


@pytest.mark.parametrize("field", ["publisher", "url", "observed_on", "verified_on", "hardware", "model",
                                   "workload", "points"])
def test_an_entry_without_a_required_field_names_it_and_nothing_of_the_file_loads(loaded, tmp_path, field):
    entries = copy.deepcopy(ENTRIES)
    entries[-1].pop(field)
    entries[0]["publisher"] = "Changed, must not be stored"
    with pytest.raises(FixtureError) as raised:
        load(fixtures_dir=_write(tmp_path, entries))
    assert raised.value.field == field and entries[-1]["key"] in raised.value.row
    assert SweepRun.objects.get(key=entries[0]["key"]).publisher == ENTRIES[0]["publisher"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda entry: entry["workload"].update(description=""), "workload.description"),
    (lambda entry: entry.update(engine="no-such-engine"), "engine"),
    (lambda entry: entry.update(url="http://example.org/insecure"), "url"),
    (lambda entry: entry.update(observed_on="2027-01-01"), "observed_on"),
    (lambda entry: entry["points"][0].update(console="Serving Benchmark Result\nnot a block"), "points[0].console"),
    (lambda entry: entry["points"].append(copy.deepcopy(entry["points"][0])), "points[1]"),
])
def test_an_unreadable_entry_is_refused_naming_its_field_and_loads_nothing(tmp_path, change, field):
    entries = copy.deepcopy(ENTRIES)
    vllm = next(entry for entry in entries if entry["key"] == "gpustack-gpt-oss-120b-h100-sharegpt-vllm")
    change(vllm)
    with pytest.raises(FixtureError) as raised:
        load_all(fixtures_dir=_copied(tmp_path, entries))
    assert raised.value.field == field
    assert not SweepRun.objects.exists() and not Tool.objects.exists()


def _copied(tmp_path: Path, entries: list) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    return _write(tmp_path / "fixtures", entries)


# --- like for like -------------------------------------------------------------------------------------------


def test_a_mixed_set_is_split_into_like_for_like_comparisons_and_no_chart_or_ranking_mixes_them():
    model, hardware = LanguageModelFactory(slug="mixed-model"), HardwareSpecFactory(slug="mixed-gpu")
    vllm, sglang = ToolFactory(slug="vllm-x", name="vLLM-x"), ToolFactory(slug="sglang-x", name="SGLang-x")
    same = {"model": model, "hardware": hardware, "hardware_count": 1}
    runs = {
        "vllm": _published(tool=vllm, key="a", **same),
        "sglang": _published(tool=sglang, key="b", **same),
        "other-workload": _published(tool=sglang, key="c", **{**same}, workload_key="another-workload"),
        "other-format": _published(tool=vllm, key="d", **same, weight_format="bf16"),
        "other-count": _published(tool=sglang, key="e", **{**same, "hardware_count": 8}),
    }
    for run in runs.values():
        SweepLevelFactory(run=run, level=8.0, output_tps=1000.0 + run.pk)
        SweepLevelFactory(run=run, level=16.0, output_tps=1500.0 + run.pk)
    found = evidence.comparisons(model="mixed-model")
    assert len(found) == 4
    for comparison in found:
        members = SweepRun.objects.filter(pk__in=[series.run_id for series in comparison.series])
        assert len({(run.weight_format.lower(), run.hardware_count, run.workload_key) for run in members}) == 1
        assert len(comparison.chart_data["series"]) == len(comparison.series)
    assert [len(comparison.series) for comparison in found] == [2, 1, 1, 1]
    assert evidence.comparisons(model="mixed-model", engines_at_least=2)[0].engines == ["SGLang-x", "vLLM-x"]
    matrix = evidence.evidence_matrix()
    assert [row.engines for row in matrix.compared] == [["SGLang-x", "vLLM-x"]]
    assert len(matrix.single) == 3 and all(len(row.engines) == 1 for row in matrix.single)


def test_a_run_measured_here_joins_only_the_comparison_of_its_own_model_hardware_count_and_workload():
    hardware = HardwareSpecFactory(slug="lab-gpu")
    model = LanguageModelFactory(slug="atlas-tiny-llama", name="Atlas tiny")
    engine = ToolFactory(slug="llama-cpp-x", name="llama.cpp-x")
    SweepLevelFactory(run=_published(tool=engine, key="p1", model=model, hardware=hardware, weight_format="q8_0",
                                     workload_key=RANDOM_WORKLOAD_KEY))
    matching = SweepRunFactory(hardware=hardware, card={"model_id": "atlas-tiny-llama", "quantization": "Q8_0"})
    SweepLevelFactory(run=matching)
    elsewhere = SweepRunFactory(hardware=hardware, hardware_count=2,
                                card={"model_id": "atlas-tiny-llama", "quantization": "Q8_0"})
    SweepLevelFactory(run=elsewhere)
    comparison, = evidence.comparisons(model="atlas-tiny-llama")
    assert [series.run_id for series in comparison.series if not series.is_published] == [matching.pk]
    assert comparison.series[-1].publisher == evidence.MEASURED_HERE


def test_a_newer_release_than_the_one_measured_is_flagged_and_an_equal_one_is_not():
    engine = ToolFactory(slug="fresh-engine", name="Fresh", latest_version="0.12.0",
                         latest_version_released_on=datetime.date(2026, 11, 20))
    old = _published(tool=engine, key="old", engine_version="v0.10.2")
    current = _published(tool=engine, key="current", engine_version="0.12.0")
    assert evidence.newer_release(old) == "Fresh 0.12.0, released 20 Nov 2026, is newer than the v0.10.2 measured"
    assert evidence.newer_release(current) == ""


def test_published_runs_stay_out_of_the_labs_own_lists(client):
    published = _published(tool=ToolFactory(), key="outside-the-lab")
    measured = SweepRunFactory()
    listed = [row["id"] for row in client.get(reverse("api:sweep-run-list")).json()["results"]]
    assert measured.pk in listed and published.pk not in listed
    assert client.get(reverse("api:sweep-run-detail", args=[published.pk])).status_code == 404


# --- pages and API on the loaded fixtures ----------------------------------------------------------------------


def test_engines_page_sets_gpt_oss_120b_on_h100_with_vllm_sglang_and_tensorrt_llm_side_by_side(loaded, client):
    page = client.get(reverse("probes:engines")).content.decode()
    section = page[page.index('id="evidence-gpt-oss-120b-nvidia-h100-sxm-1-mxfp4-'):]
    section = section[:section.index("</section>")]
    for engine in ("vLLM v0.10.2", "SGLang", "TensorRT-LLM"):
        assert engine in section
    assert "GPUStack" in section
    assert 'href="https://github.com/gpustack/gpustack/blob/main/docs/performance-lab/gpt-oss-120b/h100.md"' in section


def test_matrix_page_and_api_agree_row_for_row_with_the_fixtures(loaded, client):
    expected = {(entry["model"], entry["hardware"]) for entry in ENTRIES}
    page = client.get(reverse("lab:evidence")).content.decode()
    matrix = evidence.evidence_matrix()
    rows = [*matrix.compared, *matrix.single]
    assert {(row.model_slug, row.hardware_slug) for row in rows} == expected
    assert sum(len(row.series) for row in rows) == len(ENTRIES)
    for row in rows:
        link = reverse("lab:evidence-detail", args=[row.model_slug, row.hardware_slug]) + f"#{row.dom_id}-section"
        assert link in page
    listed = client.get(reverse("api:published-benchmark-list"), {"page_size": 500}).json()
    assert sorted(series["key"] for series in listed["results"]) == sorted(entry["key"] for entry in ENTRIES)
    points = client.get(reverse("api:published-benchmark-point-list"), {"page_size": 2000}).json()["results"]
    assert len(points) == sum(len(entry["points"]) for entry in ENTRIES)


def test_api_filters_by_model_hardware_engine_publisher_and_dataset(loaded, client):
    url = reverse("api:published-benchmark-list")
    for name, field, value in (("model", "model", "gpt-oss-120b"), ("hardware", "hardware", "nvidia-h100-sxm"),
                               ("engine", "engine", "sglang"), ("publisher", "publisher", "GPUStack"),
                               ("dataset", "workload", "sharegpt")):
        expected = sorted(entry["key"] for entry in ENTRIES
                          if (entry[field]["dataset"] if field == "workload" else entry[field]) == value)
        got = client.get(url, {name: value, "page_size": 500}).json()["results"]
        assert expected and sorted(series["key"] for series in got) == expected, name
    refused = client.get(url, {"model": "not a slug!"})
    assert refused.status_code == 400 and "model" in refused.json()["error"]["fields"]


def test_the_points_export_as_csv_with_their_publisher_and_link(loaded, client):
    response = client.get(reverse("api:published-benchmark-point-list"), {"format": "csv", "engine": "sglang"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    header, *lines = response.content.decode().splitlines()
    assert {"publisher", "url", "observed_on", "output_tps_per_gpu", "engine_version"} <= set(header.split(","))
    assert len(lines) == sum(len(entry["points"]) for entry in ENTRIES if entry["engine"] == "sglang")


def test_detail_page_shows_every_comparison_and_a_missing_pair_is_a_plain_404(loaded, client):
    response = client.get(reverse("lab:evidence-detail", args=["gpt-oss-120b", "nvidia-h100-sxm"]))
    assert response.status_code == 200
    assert response.content.decode().count('class="evidence-comparison"') == len(
        evidence.comparisons(model="gpt-oss-120b", hardware=["nvidia-h100-sxm"]))
    assert client.get(reverse("lab:evidence-detail", args=["gpt-oss-120b", "apple-m4-pro"])).status_code == 404


def test_model_page_lists_every_engine_with_evidence_for_the_model(loaded, client):
    page = client.get(reverse("probes:model-detail", args=["gpt-oss-120b"])).content.decode()
    for engine in Tool.objects.filter(sweep_runs__model__slug="gpt-oss-120b").distinct():
        assert engine.name in page


@pytest.mark.parametrize("count", [1, 12])
@pytest.mark.parametrize(("name", "args", "queries"), [
    ("lab:evidence", (), 3),
    ("lab:evidence-detail", ("grow-model", "grow-gpu"), 3),
    ("api:published-benchmark-list", (), 2),
    ("api:published-benchmark-point-list", (), 2),
])
def test_queries_stay_constant_as_published_runs_grow(client, django_assert_num_queries, settings, count, name, args,
                                                      queries):
    settings.READ_CACHE_SECONDS = 0
    model, hardware = LanguageModelFactory(slug="grow-model"), HardwareSpecFactory(slug="grow-gpu")
    for number in range(count):
        SweepLevelFactory(run=_published(tool=ToolFactory(), key=f"grow-{number}", model=model, hardware=hardware))
    with django_assert_num_queries(queries):
        response = client.get(reverse(name, args=args))
    assert response.status_code == 200


def test_a_run_measured_here_says_where_it_sits_against_the_published_figure_at_the_same_load(client):
    hardware = HardwareSpecFactory(slug="position-gpu", name="Position GPU")
    model = LanguageModelFactory(slug="atlas-tiny-llama", name="Atlas tiny")
    published = _published(tool=ToolFactory(name="vLLM-p"), key="position", model=model, hardware=hardware,
                           weight_format="Q8_0", workload_key=RANDOM_WORKLOAD_KEY, engine_version="0.10.2")
    SweepLevelFactory(run=published, level=8.0, output_tps=1000.0)
    SweepLevelFactory(run=published, level=64.0, output_tps=5000.0)
    measured = SweepRunFactory(hardware=hardware, card={"model_id": "atlas-tiny-llama", "quantization": "q8_0"})
    SweepLevelFactory(run=measured, level=8.0, output_tps=880.0)
    SweepLevelFactory(run=measured, level=16.0, output_tps=1500.0)

    position = evidence.run_position(measured)
    assert [standing.sentence for standing in position.standings] == [
        "at 8 concurrent: 12% below the published vLLM-p 0.10.2 output tok/s per GPU on the same Position GPU"]
    page = client.get(reverse("lab:sweep-detail", args=[measured.pk])).content.decode()
    assert "At 8 concurrent: 12% below the published vLLM-p 0.10.2" in page
    assert f'data-series="{published.pk}"' in page and f'data-series="{measured.pk}"' in page
    other = SweepRunFactory(hardware=hardware, card={"model_id": "another-model", "quantization": "q8_0"})
    assert evidence.run_position(other) is None


# --- comparisons of the real fixture: modes, the ranking figure, setup differences -------------------------------


def _members(comparison: evidence.Comparison) -> list[SweepRun]:
    return list(SweepRun.objects.filter(pk__in=[series.run_id for series in comparison.series]))


def test_no_matrix_row_sets_figures_of_different_counts_precisions_workloads_or_modes_side_by_side(loaded, client):
    matrix = evidence.evidence_matrix()
    rows = [*matrix.compared, *matrix.single]
    for row in rows:
        members = _members(row)
        identities = {(run.model.slug, run.hardware.slug, run.hardware_count, run.weight_format.lower(),
                       run.workload_key, run.load_mode, run.workload.get("dataset"), run.workload.get("num_prompts"),
                       run.workload.get("input_tokens"), run.workload.get("output_tokens")) for run in members}
        assert len(identities) == 1, row.title
        assert len({point.mode for series in row.series for point in series.points}) == 1, row.title
    assert len({row.dom_id for row in rows}) == len(rows)
    assert all(len(row.engines) >= 2 for row in matrix.compared) and all(len(row.engines) == 1 for row in matrix.single)
    page = client.get(reverse("lab:evidence")).content.decode()
    compared, single = page.split('id="single-engine"')
    # The badge counts the engines of its own comparison: one badge per row of the compared section.
    badges = [int(count) for count in re.findall(r'badge-open">(\d+) engines<', compared)]
    assert badges == [len(row.engines) for row in matrix.compared]
    assert "engines</span>" not in single and "Single-engine evidence" in page


def test_gpt_oss_120b_on_one_h100_ranks_gpustacks_engines_by_total_throughput_at_a_burst_of_1000(loaded, client):
    found = evidence.comparisons(model="gpt-oss-120b", hardware=["nvidia-h100-sxm"], engines_at_least=2)
    comparison, = [each for each in found if each.hardware_count == 1]
    assert comparison.mode == "burst" and comparison.load == "1,000 prompts at once"
    assert comparison.rank_by == evidence.TOTAL and comparison.ranked_load == "1,000 prompts at once"
    assert [(entry.series.engine, entry.value) for entry in comparison.by_engine] == [
        ("vLLM", 6095.37), ("TensorRT-LLM", 2139.54), ("SGLang", 1814.32)]
    assert [round(entry.point.output_tps_per_gpu, 2) for entry in comparison.by_engine] == [2901.05, 1013.72, 865.81]

    page = unescape(client.get(reverse("lab:evidence-detail", args=["gpt-oss-120b", "nvidia-h100-sxm"])).content.decode())
    compared, single = page.split('id="single-engine"')
    section = compared[compared.index(f'id="{comparison.dom_id}-section"'):]
    section = section[:section.index("</section>")]
    assert "ShareGPT · 1,000 prompts at once" in section and "ranked by total tok/s" in section
    assert "Total tok/s" in section and "TTFT p50 / p99 (ms), mostly queueing" in section
    for total, per_gpu in (("6,095.37", "2,901.1"), ("2,139.54", "1,013.7"), ("1,814.32", "865.8")):
        assert total in section and per_gpu in section
    assert "1000 concurrent" not in page and "1,000 concurrent" not in page
    # NVIDIA's offline tables: one engine each, apart, labelled offline, with no latency columns.
    offline = [each for each in evidence.comparisons(model="gpt-oss-120b", hardware=["nvidia-h100-sxm"])
               if each.mode == "offline"]
    assert offline and all(len(each.engines) == 1 for each in offline)
    for each in offline:
        block = single[single.index(f'id="{each.dom_id}-section"'):]
        block = block[:block.index("</section>")]
        assert "offline batch" in block and "Tok/s per user" not in block and "TTFT" not in block
    matrix = client.get(reverse("lab:evidence")).content.decode()
    row = unescape(matrix[matrix.index(f'#{comparison.dom_id}-section"'):])
    row = row[:row.index("</tr>")]
    assert "ranked by total tok/s" in row and "3 engines" in row
    assert row.index("6,095 total tok/s") < row.index("2,140 total tok/s") < row.index("1,814 total tok/s")


def test_setup_differences_inside_a_comparison_are_flagged_per_series(loaded):
    comparison = next(each for each in evidence.comparisons(model="deepseek-r1-0528", hardware=["nvidia-h200"])
                      if len(each.engines) == 3)
    flags = {series.label: series.flags for series in comparison.series}
    assert flags["vLLM v0.11.0 · GPUStack"] == [] and flags["SGLang v0.5.3 · GPUStack · defaults"] == []
    assert flags["TensorRT-LLM v1.0.0 · GPUStack"] == ["EP 8"]
    assert flags["SGLang v0.5.3 · GPUStack · --enable-dp-attention"] == ["DP attention"]
    speculative = next(label for label in flags if "EAGLE" in label)
    assert flags[speculative] == ["DP attention", "speculative decoding (EAGLE)"]
    # Every series runs TP 8 here: shared, so not a difference.
    assert not any("TP" in flag for each in flags.values() for flag in each)
    h100 = next(each for each in evidence.comparisons(model="gpt-oss-120b", hardware=["nvidia-h100-sxm"])
                if each.hardware_count == 2 and each.mode == "burst" and each.workload == "ShareGPT")
    assert sorted(flag for series in h100.series for flag in series.flags) == ["PP 2", "TP 2"]


def test_an_output_length_left_to_the_engines_is_flagged_when_they_generated_different_amounts():
    model, hardware = LanguageModelFactory(slug="unfixed-model"), HardwareSpecFactory(slug="unfixed-gpu")
    same = {"model": model, "hardware": hardware, "load_mode": "burst"}
    for key, output_tps in (("short", 1000.0), ("long", 1100.0)):
        run = _published(tool=ToolFactory(name=f"engine-{key}"), key=key, **same)
        SweepLevelFactory(run=run, mode="burst", level=100.0, output_tps=output_tps, request_rate=10.0)
    comparison, = evidence.comparisons(model="unfixed-model")
    assert sorted(flag for series in comparison.series for flag in series.flags) == [
        "output length not fixed: ≈100.0 tokens per request", "output length not fixed: ≈110.0 tokens per request"]


def test_a_chart_line_joins_only_one_series_own_sweep_and_single_loads_draw_none(loaded):
    for comparison in evidence.comparisons():
        data = comparison.chart_data
        if not any(len(series.points) > 1 for series in comparison.series):
            assert comparison.chart_axis is None and data["series"] == []
            continue
        for drawn, series in zip(data["series"], comparison.series, strict=True):
            assert drawn["label"] == series.label
            assert {point["load"] for point in drawn["points"]} <= {point.load for point in series.points}
