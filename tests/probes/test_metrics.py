"""The vocabulary's metrics (scoring.vocabulary) are the one declaration of the measured metrics and of the
summaries that hold them: the client, the summary services, the CLI, the API and the pages read them, and a metric
added to a summary there reaches every one of them."""
import csv
import datetime as dt
import io
import json
import re
from dataclasses import fields

import pytest
from django.core.management import call_command
from django.urls import reverse

from catalog.models import ReportedFigure
from lab.models import SweepLevel
from probe_client import RequestResult, SpeedResult
from probe_client.sweep.stats import LevelResult
from probes import apis
from probes.models import MeasurementSummary, ProbeRun, RequestMeasurement
from probes.services.summaries import run_summary_compute
from scoring import vocabulary
from scoring.vocabulary import (
    CLIENT_SUMMARY_METRICS,
    HEADLINE_METRICS,
    LEVEL_METRICS,
    METRIC_BY_REPORTED,
    PAGE_METRICS,
    PERCENTILES,
    RUN_SUMMARY_METRICS,
    TargetFigures,
)
from tests import factories
from tests.probes.dashboard_data import make_measured_target, make_tool, metrics_json
from tests.simulator import start_simulator


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
        vocabulary.TTFT.converted(1.0, unit="tok/s")


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
    fields = list(row)
    start, column = fields.index(expected[0]), header.index(expected[0])
    assert fields[start:start + len(expected)] == expected == header[column:column + len(expected)]
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
    monkeypatch.setattr(vocabulary, "RUN_SUMMARY_METRICS", (*RUN_SUMMARY_METRICS, vocabulary.HEADERS))
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
