"""The metric registry (probes/metrics.py) is the one declaration of the measured metrics and of the summaries
that hold them: the client, the summary services, the CLI, the API and the pages read it, and a metric added to
a summary there reaches every one of them."""
import ast
import csv
import datetime as dt
import io
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalog.models import ReportedFigure
from probes import apis, metrics
from probe_client import RequestResult, SpeedResult
from probe_client.sweep.stats import LevelResult
from probes.metrics import (
    CLIENT_SUMMARY_METRICS,
    HEADLINE_METRICS,
    LEVEL_METRICS,
    METRIC_BY_KEY,
    METRIC_BY_REPORTED,
    METRICS,
    PAGE_METRICS,
    PERCENTILES,
    RUN_SUMMARY_METRICS,
    LevelFigures,
    TargetFigures,
)
from probes.models import MeasurementSummary, ProbeRun, RequestMeasurement, SweepLevel
from probes.services.summaries import run_summary_compute
from tests import factories
from tests.probes.dashboard_data import make_measured_target, make_tool, metrics_json
from tests.simulator import start_simulator

ROOT = Path(__file__).resolve().parents[2]
SELECTIONS = {
    "run summary": RUN_SUMMARY_METRICS,
    "client summary": CLIENT_SUMMARY_METRICS,
    "pages": PAGE_METRICS,
    "headline": HEADLINE_METRICS,
    "benchmark-lab level": LEVEL_METRICS,
}
# Literals that name metric keys for another reason than listing metrics: an SLO's own two objective fields.
NOT_METRIC_LISTS = {("probe_client/sweep/stats.py", "SLO")}


def test_each_metric_is_declared_once_and_every_summary_lists_registered_metrics():
    keys = [metric.key for metric in METRICS]
    assert len(keys) == len(set(keys)) and set(METRIC_BY_KEY) == set(keys)
    for name, selection in SELECTIONS.items():
        assert all(METRIC_BY_KEY[metric.key] is metric for metric in selection), name
        assert len(set(selection)) == len(selection), name
    assert set(PAGE_METRICS) == set(RUN_SUMMARY_METRICS)
    assert PAGE_METRICS[: len(HEADLINE_METRICS)] == HEADLINE_METRICS


def test_percentile_names_are_read_off_the_summary_shapes():
    assert PERCENTILES == {"p50": 50, "p95": 95, "p99": 99}
    assert tuple(TargetFigures.__annotations__) == (*PERCENTILES, "median_72h")
    assert tuple(LevelFigures.__annotations__) == (*PERCENTILES, "mean")
    assert metrics.TTFT.percentile_field("p50") == "ttft_p50_ms"
    assert metrics.OUTPUT_SPEED.percentile_field("p99") == "output_speed_p99_tps"


def test_every_summarised_metric_is_a_stored_and_measured_column():
    stored = {field.name for field in RequestMeasurement._meta.get_fields()}
    measured = {field.name for field in fields(RequestResult)}
    for metric in CLIENT_SUMMARY_METRICS:
        assert metric.key in stored and metric.key in measured, metric.key
    level_columns = {field.name for field in SweepLevel._meta.get_fields()}
    level_results = {field.name for field in fields(LevelResult)}
    for metric in LEVEL_METRICS:
        assert metric.key in level_columns and metric.key in level_results, metric.key


def test_reported_figures_are_converted_into_the_unit_of_their_measured_metric():
    assert set(METRIC_BY_REPORTED) <= set(ReportedFigure.Metric.values)
    for name, metric in METRIC_BY_REPORTED.items():
        metric.converted(1.0, unit=ReportedFigure.UNITS[name])
    assert METRIC_BY_REPORTED["ttft"].converted(0.25, unit="s") == 250.0
    assert METRIC_BY_REPORTED["output_speed"].converted(812.0, unit="tok/s") == 812.0
    with pytest.raises(KeyError):
        metrics.TTFT.converted(1.0, unit="tok/s")


def _listed_metric_keys(path: Path) -> list[tuple[int, list[str]]]:
    """(line, keys) of every tuple, list or set literal naming two or more metric keys, and of every dict
    literal mapping something to two or more metric keys, outside the classes NOT_METRIC_LISTS exempts."""
    keys = set(METRIC_BY_KEY)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    relative = path.relative_to(ROOT).as_posix()
    exempt = {
        id(node)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef) and (relative, cls.name) in NOT_METRIC_LISTS
        for node in ast.walk(cls)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            candidates = node.elts
        elif isinstance(node, ast.Dict):
            candidates = node.values
        else:
            continue
        named = [item.value for item in candidates if isinstance(item, ast.Constant) and item.value in keys]
        if len(named) >= 2:
            found.append((node.lineno, named))
    return found


def test_no_module_but_the_registry_lists_metrics():
    listed = {}
    for package in ("probes", "catalog", "core", "recommend", "scoring", "benchmarks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "probes" / "metrics.py":
                continue
            if found := _listed_metric_keys(path):
                listed[path.relative_to(ROOT).as_posix()] = found
    assert not listed, f"metric keys listed outside probes/metrics.py: {listed}"


def test_the_scan_catches_a_planted_list(tmp_path, monkeypatch):
    planted = tmp_path / "probes" / "presenters.py"
    planted.parent.mkdir()
    planted.write_text('ORDER = ("ttft_ms", "e2e_ms")\nLABELS = {"TTFT": "ttft_ms", "E2E": "e2e_ms"}\n')
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)

    assert _listed_metric_keys(planted) == [(1, ["ttft_ms", "e2e_ms"]), (2, ["ttft_ms", "e2e_ms"])]


def test_the_clients_summary_has_the_registrys_metrics_and_percentiles():
    started = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    requests = [RequestResult(index=i, started_at=started, ok=True, ttft_ms=10.0 + i, headers_ms=2.0) for i in range(3)]

    summary = SpeedResult(requests=requests).summary()

    assert list(summary) == [metric.key for metric in CLIENT_SUMMARY_METRICS] + ["requests", "ok", "success_rate"]
    assert all(list(summary[metric.key]) == list(PERCENTILES) for metric in CLIENT_SUMMARY_METRICS)
    assert summary["ttft_ms"]["p50"] == 11.0
    assert list(requests[0].to_json()["itl_ms"]) == list(PERCENTILES)


def test_a_runs_stored_summary_has_the_registrys_metrics():
    summary = run_summary_compute(rows=[{"ok": True, **{m.key: 5.0 for m in RUN_SUMMARY_METRICS}}])

    assert list(summary) == [metric.key for metric in RUN_SUMMARY_METRICS] + ["requests", "succeeded", "success_rate"]
    assert summary["tpot_ms"] == {"p50": 5.0, "p95": 5.0, "p99": 5.0}


def test_the_summary_apis_help_names_the_registrys_metrics_and_figures():
    for metric in RUN_SUMMARY_METRICS:
        assert metric.key in apis.METRIC_HELP
    assert "{" + ", ".join(TargetFigures.__annotations__) + "}" in apis.METRIC_HELP
    assert MeasurementSummary._meta.get_field("metrics").help_text.endswith(
        f"for {', '.join(m.key for m in RUN_SUMMARY_METRICS)}."
    )


@pytest.mark.django_db
def test_benchmark_lab_level_fields_and_csv_columns_come_from_the_registry(client):
    level = factories.SweepLevelFactory(itl_ms={"p50": 1.0, "p95": 2.0, "p99": 3.0, "mean": 1.5})
    url = reverse("api:sweep-level-list", kwargs={"pk": level.run_id})

    [row] = client.get(url).json()["results"]
    header = next(csv.reader(io.StringIO(client.get(url, {"format": "csv"}).content.decode())))

    expected = [metric.percentile_field(name) for metric in LEVEL_METRICS for name in PERCENTILES]
    assert list(row)[-len(expected):] == expected == header[-len(expected):]
    assert row["itl_p99_ms"] == 3.0 and row["ttft_p50_ms"] == level.ttft_ms["p50"]


def _header_labels(html: str) -> list[str]:
    return re.findall(r'<abbr title="([^"]+)">', html)


@pytest.mark.django_db
def test_dashboard_and_tool_page_columns_come_from_the_registry(client, api_key):
    now = dt.datetime.now(dt.UTC)
    tool = make_tool(slug="fastco", name="FastCo")
    make_measured_target(now=now, slug="fastco-gpt-oss", name="FastCo gpt-oss", tool=tool, ttft=150.0, speed=900.0,
                         e2e=1200.0)

    page = client.get(reverse("probes:providers")).content.decode()
    figures = page[page.index("data-figures-table"):]
    percentiles = page[page.index('class="percentiles-table"'):]
    headline = [metric.label for metric in HEADLINE_METRICS]
    assert _header_labels(figures)[: len(headline)] == headline
    assert _header_labels(percentiles)[: len(PAGE_METRICS)] == [metric.label for metric in PAGE_METRICS]
    for metric in PAGE_METRICS:
        assert f'<abbr title="{metric.label}">{metric.short_label}</abbr> ({metric.unit})' in percentiles

    tool_page = client.get(reverse("catalog:tool_detail", kwargs={"slug": tool.slug})).content.decode()
    section = tool_page[tool_page.index('id="measurements"'):]
    assert _header_labels(section)[: len(HEADLINE_METRICS)] == headline


@pytest.fixture(scope="module")
def simulator():
    with start_simulator("openai", schedule={"ttft_ms": 5, "itl_ms": 1, "tokens": 6}) as sim:
        yield sim


@pytest.mark.django_db
def test_a_metric_added_to_the_run_summary_reaches_the_store_the_cli_and_the_api(
    client, simulator, api_key, monkeypatch
):
    """headers_ms is measured and stored per request but summarised only by the client; adding it to the run
    summary in the registry is all it takes for runs, summaries, the CLI, the API and its CSV to carry it."""
    monkeypatch.setattr(metrics, "RUN_SUMMARY_METRICS", (*RUN_SUMMARY_METRICS, metrics.HEADERS))
    target = factories.ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model)

    out = io.StringIO()
    call_command("probe", "--target", target.slug, "--save", "--suite", "speed", "--input-tokens", "100",
                 "--requests", "2", "--max-tokens", "6", "--json", stdout=out)

    document = json.loads(out.getvalue())
    assert list(document["speed"]["summary"]["headers_ms"]) == list(PERCENTILES)
    [run] = ProbeRun.objects.filter(target=target)
    assert run.summary["headers_ms"]["p50"] is not None
    stored = MeasurementSummary.objects.get(target=target).metrics["headers_ms"]
    assert set(stored) == set(TargetFigures.__annotations__) and stored["median_72h"] is not None
    [row] = client.get(reverse("api:probe-summary-list"), {"target": target.slug}).json()["results"]
    assert row["metrics"]["headers_ms"] == stored
    header = client.get(reverse("api:probe-summary-list"), {"target": target.slug, "format": "csv"}).content
    assert b"metrics.headers_ms.p50" in header.splitlines()[0]


def test_dashboard_data_builders_cover_every_run_summary_metric():
    # The page tests' figures must exercise every column the pages show.
    assert set(metrics_json(ttft=1.0, speed=2.0, e2e=3.0)) == {metric.key for metric in RUN_SUMMARY_METRICS}
