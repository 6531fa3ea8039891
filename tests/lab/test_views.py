"""Benchmark-lab pages: every figure in a table, curves only for the same hardware and workload, the retest
note, imports labelled with their tool, side by side, honest empty states, constant query counts."""
import json
import re
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lab.services.imports import sweep_import_create, sweep_import_file
from tests.factories import HardwareSpecFactory, ProbeTargetFactory, SweepLevelFactory, SweepRunFactory, ToolFactory

pytestmark = pytest.mark.django_db

PEER_RESULTS = Path(__file__).resolve().parents[1] / "probe_client" / "fixtures" / "peer_results"


def sweep(levels=(1.0, 2.0, 4.0), **kwargs):
    run = SweepRunFactory(**kwargs)
    for level in levels:
        SweepLevelFactory(run=run, level=level, output_tps=100.0 * level, meets_slo=level < 4,
                          ttft_ms={"p50": 10.0 * level, "p95": 12.0 * level, "p99": 15.0 * level})
    return run


def chart_data(html: str) -> dict:
    match = re.search(r'<script id="sweep-chart-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_empty_lab_says_nothing_was_measured(client):
    html = client.get("/engines/lab/").content.decode()
    assert "No benchmark-lab run yet" in html and "data-sweep-list" not in html
    assert "make engine" in html
    assert "python manage.py sweep --base-url http://127.0.0.1:8000/v1 --model MODEL_ID --levels 1,2,4 --save" in html
    assert "python manage.py import_benchmark FILE" in html


def test_detail_shows_levels_knee_card_and_only_comparable_curves(client):
    hardware = HardwareSpecFactory(name="H100 SXM")
    run = sweep(hardware=hardware, workload_key="same", results={"knee": {"level": 4.0, "best": 2.0, "reason": "x"}},
                flags="--max-num-seqs 256")
    peer = sweep(hardware=hardware, workload_key="same", levels=(1.0, 8.0))
    sweep(hardware=hardware, workload_key="other-workload")
    sweep(workload_key="same")  # other hardware
    html = client.get(f"/engines/lab/{run.pk}/").content.decode()
    assert html.count("<tr data-level=") == 3
    assert "the SLO breaks at 4" in html and "highest level that met it is 2" in html
    assert "--max-num-seqs 256" in html and "H100 SXM" in html
    data = chart_data(html)
    assert [series["run_id"] for series in data["series"]] == [run.pk, peer.pk]
    assert [point["level"] for point in data["series"][1]["points"]] == [1.0, 8.0]
    assert html.count("data-series=") == 5  # the chart's table has every charted point
    assert f"/api/v1/probes/sweeps/{run.pk}/levels/?format=csv" in html


def test_the_card_gives_the_plan_in_words(client):
    closed = sweep(plan={"mode": "concurrency", "levels": [1, 2, 4], "requests_per_level": 32,
                         "slo": {"ttft_ms": 500, "tpot_ms": 50, "attainment": 0.9}, "max_duration_s": 900})
    html = client.get(f"/engines/lab/{closed.pk}/").content.decode()
    assert "Closed loop at 1, 2 and 4 concurrent streams" in html and "32 requests per level" in html
    assert "time to first token at most 500 ms and time per output token at most 50 ms" in html
    assert "90% of its requests" in html and "No request is sent after 900 s." in html
    assert "{&#x27;mode&#x27;" not in html and "{'mode'" not in html
    suite = SweepRunFactory(kind="prefill_decode", plan={"requests_per_length": 2}, workload={})
    html = client.get(f"/engines/lab/{suite.pk}/").content.decode()
    assert "prompts of 128, 512, 1,024 and 2,048 tokens, 2 requests each" in html


def test_an_open_loop_run_shows_its_schedule_lag(client):
    run = SweepRunFactory(plan={"mode": "rate", "levels": [2.0], "requests_per_level": 16, "seed": 3,
                                "max_in_flight": 64, "max_duration_s": 600})
    SweepLevelFactory(run=run, mode="rate", level=2.0, schedule_lag_ms={"p50": 0.42, "p95": 0.9, "p99": 1.27})
    html = client.get(f"/engines/lab/{run.pk}/").content.decode()
    assert "Schedule lag p50 / p99 (ms)" in html and "0.4 / 1.3" in html
    assert "Open loop at 2 requests/s" in html and "seed 3" in html and "at most 64 requests in flight" in html
    assert "No SLO was set" in html


def test_imported_run_is_labelled_and_a_version_change_is_announced(client):
    target = ProbeTargetFactory(tool=ToolFactory(kind="engine"), api_key_env="")
    level = {"mode": "concurrency", "level": 1, "requests": 4, "ok": 4, "output_tps": 50.0}
    common = {"source_tool": "aiperf", "target": target, "workload": {"input": 100, "output": 10}, "levels": [level]}
    old = sweep_import_create(card={"engine_version": "0.10.0", "model_id": "m"}, **common)
    new = sweep_import_create(card={"engine_version": "0.11.0", "model_id": "m"}, **common)
    html = client.get(f"/engines/lab/{new.pk}/").content.decode()
    assert "Imported from a <strong>NVIDIA AIPerf</strong> result file" in html
    assert "Engine version changed on" in html and "0.10.0 → 0.11.0" in html and "re-measured" in html
    assert f'href="/engines/lab/{old.pk}/"' in html  # the history lists the earlier epoch
    listing = client.get("/engines/lab/").content.decode()
    assert "changed, re-measured" in listing and "NVIDIA AIPerf" in listing


def test_an_imported_guidellm_file_shows_the_tools_version_and_what_the_file_leaves_unsaid(client):
    report = PEER_RESULTS / "guidellm-0.8.1-benchmarks.json"
    run = sweep_import_file(data=report.read_bytes(), hardware=HardwareSpecFactory(name="L4"), hourly_price_usd="0.7")
    html = client.get(f"/engines/lab/{run.pk}/").content.decode()
    assert "GuideLLM 0.8.1 (imported result file)" in html
    assert html.count("not stated in the file") == 2  # engine version and weights: a GuideLLM file has neither
    assert "Lengths as GuideLLM reports them" in html and "(2 sampled lengths)" not in html
    assert [float(value) for value in re.findall(r'<tr data-level="([\d.]+)"', html)] == [1.0, 2.0, 4.0]
    assert html.count("$") >= 3  # a cost per 1M output tokens at every level


def test_suite_pages_show_their_results(client):
    run = SweepRunFactory(kind="prefix_cache", workload={}, workload_name="", results={
        "input_tokens": 1088, "prefix_tokens": 1024, "requests": 4, "shared_ttft_ms": {"p50": 26.0},
        "unique_ttft_ms": {"p50": 230.0}, "first_shared_ttft_ms": 231.0, "ttft_ratio": 0.113, "hit_rate": 0.94,
        "hit_rate_source": "usage.prompt_tokens_details.cached_tokens"})
    html = client.get(f"/engines/lab/{run.pk}/").content.decode()
    assert "0.113" in html and "94% of prompt tokens" in html and "sweep-chart-data" not in html


def test_side_by_side_draws_one_chart_only_for_the_same_setup(client):
    hardware = HardwareSpecFactory()
    first = sweep(hardware=hardware, workload_key="w")
    second = sweep(hardware=hardware, workload_key="w")
    elsewhere = sweep(workload_key="w")
    same = client.get(f"/engines/lab/compare/?a={first.pk}&b={second.pk}").content.decode()
    assert [s["run_id"] for s in chart_data(same)["series"]] == [first.pk, second.pk]
    assert same.count("data-side-run=") == 2
    different = client.get(f"/engines/lab/compare/?a={first.pk}&b={elsewhere.pk}").content.decode()
    assert "sweep-chart-data" not in different and "not drawn on one chart" in different
    assert client.get("/engines/lab/compare/?a=1&b=x").status_code == 404
    assert client.get("/engines/lab/424242/").status_code == 404


def _page_queries(client, runs) -> dict:
    counts = {}
    paths = {"list": "/engines/lab/", "detail": f"/engines/lab/{runs[0].pk}/",
             "compare": f"/engines/lab/compare/?a={runs[0].pk}&b={runs[-1].pk}"}
    for name, path in paths.items():
        with CaptureQueriesContext(connection) as queries:
            assert client.get(path).status_code == 200
        counts[name] = len(queries)
    return counts


def test_pages_cost_the_same_queries_as_runs_and_levels_grow(client):
    hardware = HardwareSpecFactory()
    runs = [sweep(hardware=hardware, workload_key="w", levels=[1.0]) for _ in range(2)]
    few = _page_queries(client, runs)
    runs += [sweep(hardware=hardware, workload_key="w", levels=[float(2**i) for i in range(10)]) for _ in range(10)]
    runs[0].levels.all().delete()
    for i in range(10):
        SweepLevelFactory(run=runs[0], level=float(2**i))
    many = _page_queries(client, runs)
    assert few == many, (few, many)
    assert few["list"] <= 3
