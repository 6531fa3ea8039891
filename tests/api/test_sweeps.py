"""/api/v1/probes/sweeps/: reads (JSON and CSV), staff-only writes, 400s that name the field, constant queries."""
import csv
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lab.models import SweepRun
from tests.factories import HardwareSpecFactory, ProbeTargetFactory, SweepLevelFactory, SweepRunFactory

pytestmark = pytest.mark.django_db


def sweep_with_levels(levels=(1.0, 2.0, 4.0), **kwargs):
    run = SweepRunFactory(**kwargs)
    for level in levels:
        SweepLevelFactory(run=run, level=level, output_tps=100.0 * level, meets_slo=level < 4)
    return run


def test_list_detail_and_levels_csv(api_client):
    run = sweep_with_levels()
    listing = api_client.get("/api/v1/probes/sweeps/").json()
    assert [row["id"] for row in listing["results"]] == [run.pk]
    detail = api_client.get(f"/api/v1/probes/sweeps/{run.pk}/").json()
    assert [level["level"] for level in detail["levels"]] == [1.0, 2.0, 4.0]
    assert detail["levels"][0]["ttft_p99_ms"] == 180.0 and detail["card"]["tool"] == "inference-atlas"
    response = api_client.get(f"/api/v1/probes/sweeps/{run.pk}/levels/?format=csv")
    assert response.status_code == 200 and response["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [float(row["level"]) for row in rows] == [1.0, 2.0, 4.0]
    assert [float(row["output_tps"]) for row in rows] == [100.0, 200.0, 400.0]
    assert rows[0]["ttft_p50_ms"] == "100.0" and rows[2]["meets_slo"] == "false"
    assert api_client.get("/api/v1/probes/sweeps/?format=csv").status_code == 200
    assert detail["requests_jsonl"].endswith(f"/api/v1/probes/sweeps/{run.pk}/requests/?format=jsonl")
    # A run whose levels kept no requests (an import, say) exports none, in every format.
    assert api_client.get(f"/api/v1/probes/sweeps/{run.pk}/requests/").json() == {"count": 0, "results": []}
    assert api_client.get(f"/api/v1/probes/sweeps/{run.pk}/requests/?format=jsonl").content == b""
    assert api_client.get("/api/v1/probes/sweeps/999999/requests/?format=jsonl").status_code == 404


def test_stopped_reason_is_null_until_something_stops_the_run(api_client):
    finished = sweep_with_levels(status="finished")
    stopped = SweepRunFactory(status="stopped", stopped_reason="stopped by an operator")
    assert api_client.get(f"/api/v1/probes/sweeps/{finished.pk}/").json()["stopped_reason"] is None
    assert api_client.get(f"/api/v1/probes/sweeps/{stopped.pk}/").json()["stopped_reason"] == "stopped by an operator"
    listed = {row["id"]: row["stopped_reason"] for row in api_client.get("/api/v1/probes/sweeps/").json()["results"]}
    assert listed == {finished.pk: None, stopped.pk: "stopped by an operator"}


def test_open_loop_levels_carry_offered_rate_and_schedule_lag_in_json_and_csv(api_client):
    run = SweepRunFactory(plan={"mode": "rate", "levels": [2.0, 8.0], "requests_per_level": 16})
    for rate, lag in ((2.0, {"p50": 0.4, "p95": 0.9, "p99": 1.2, "mean": 0.5}), (8.0, None)):
        SweepLevelFactory(run=run, mode="rate", level=rate, request_rate=rate * 0.9, schedule_lag_ms=lag)
    closed = sweep_with_levels(levels=(1.0,))
    rows = api_client.get(f"/api/v1/probes/sweeps/{run.pk}/levels/").json()["results"]
    assert (rows[0]["offered_rate"], rows[0]["request_rate"]) == (2.0, 1.8)
    assert (rows[0]["schedule_lag_p50_ms"], rows[0]["schedule_lag_p99_ms"]) == (0.4, 1.2)
    assert rows[1]["schedule_lag_p50_ms"] is None
    csv_rows = list(csv.DictReader(io.StringIO(
        api_client.get(f"/api/v1/probes/sweeps/{run.pk}/levels/?format=csv").content.decode()
    )))
    assert csv_rows[0]["schedule_lag_p95_ms"] == "0.9" and csv_rows[0]["offered_rate"] == "2.0"
    closed_row = api_client.get(f"/api/v1/probes/sweeps/{closed.pk}/").json()["levels"][0]
    assert closed_row["offered_rate"] is None and closed_row["schedule_lag_p50_ms"] is None


def test_filters_and_unknown_ids(api_client):
    imported = sweep_with_levels(source_tool="guidellm", status="imported")
    sweep_with_levels()
    rows = api_client.get("/api/v1/probes/sweeps/?source_tool=guidellm").json()["results"]
    assert [row["id"] for row in rows] == [imported.pk]
    assert api_client.get("/api/v1/probes/sweeps/999999/").status_code == 404
    bad = api_client.get("/api/v1/probes/sweeps/?hardware=no-such-card")
    assert bad.status_code == 400 and "hardware" in bad.json()["error"]["fields"]


def test_anonymous_and_non_staff_writes_are_refused(api_client, user_client):
    target = ProbeTargetFactory()
    body = {"target": target.slug, "preset": "chat", "plan": {"levels": [1]}}
    assert api_client.post("/api/v1/probes/sweeps/", body, format="json").status_code in (401, 403)
    assert user_client.post("/api/v1/probes/sweeps/", body, format="json").status_code == 403
    assert SweepRun.objects.count() == 0


def test_staff_start_a_sweep_with_a_preset_and_a_hardware_price(staff_client, django_capture_on_commit_callbacks):
    target = ProbeTargetFactory(api_key_env="")
    hardware = HardwareSpecFactory(slug="h100-sxm")
    with django_capture_on_commit_callbacks() as callbacks:
        response = staff_client.post(
            "/api/v1/probes/sweeps/",
            {"target": target.slug, "preset": "rag-8k", "hardware": "h100-sxm", "hardware_count": 8,
             "hourly_price_usd": "20.00", "plan": {"cap": 16, "requests_per_level": 16,
                                                   "slo": {"ttft_ms": 2000, "tpot_ms": 60}}},
            format="json",
        )
    assert response.status_code == 202, response.json()
    run = SweepRun.objects.get(pk=response.json()["id"])
    assert run.status == "queued" and run.hardware == hardware and run.hardware_count == 8
    assert run.plan["levels"] == [1, 2, 4, 8, 16] and run.plan["hourly_price_usd"] == 20.0
    assert run.workload["name"] == "rag-8k" and run.levels_total == 5
    assert len(callbacks) == 2  # the task is sent (and the page cache's generation moved) once it commits


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"plan": {"levels": [1, 2, 2000]}}, "plan.levels[2]", "at most"),
        ({"plan": {"levels": [1], "slo": {"ttft_ms": -1, "tpot_ms": 5}}}, "plan.slo.ttft_ms", "above 0"),
        ({"workload": {"input": {"kind": "normal", "mean": 10}, "output": 5}}, "workload.input.stddev", "number"),
        ({"workload_jsonl": '{"input_tokens": 100, "output_tokens": 20}\n{"input_tokens": "x"}'},
         "workload_jsonl", "line 2"),
        ({"workload_jsonl": "not json"}, "workload_jsonl", "line 1: not valid JSON"),
        ({"workload_jsonl": "[" * 100_000 + "]" * 100_000}, "workload_jsonl", "line 1: JSON nested deeper than 64"),
        ({"preset": "chat", "workload": {"input": 1, "output": 1}}, "workload", "exactly one"),
        ({"preset": "chat", "hardware": "no-such-card"}, "hardware", "No hardware device"),
        # A family slug of /api/v1/hardware/ is not a device: the message says where the device slugs are.
        ({"preset": "chat", "hardware": "x86-cpu"}, "hardware", "/api/v1/hardware/specs/"),
        ({"preset": "chat", "hourly_price_usd": "-2"}, "hourly_price_usd", ""),
    ],
)
def test_bad_parameters_answer_400_naming_the_field(staff_client, body, field, text):
    target = ProbeTargetFactory()
    payload = {"target": target.slug, "plan": {"levels": [1]}, **body}
    if "workload" not in body and "workload_jsonl" not in body and "preset" not in body:
        payload["preset"] = "chat"
    response = staff_client.post("/api/v1/probes/sweeps/", payload, format="json")
    assert response.status_code == 400, response.json()
    fields = response.json()["error"]["fields"]
    assert field in fields, fields
    assert text in " ".join(fields[field])
    assert SweepRun.objects.count() == 0


def test_stop_and_resume_follow_the_run_state(staff_client):
    run = SweepRunFactory(status="running")
    response = staff_client.post(f"/api/v1/probes/sweeps/{run.pk}/stop/")
    assert response.status_code == 202
    run.refresh_from_db()
    assert run.stop_requested
    finished = SweepRunFactory(status="succeeded")
    assert staff_client.post(f"/api/v1/probes/sweeps/{finished.pk}/stop/").status_code == 409
    assert staff_client.post(f"/api/v1/probes/sweeps/{finished.pk}/resume/").status_code == 409
    stopped = SweepRunFactory(status="stopped")
    assert staff_client.post(f"/api/v1/probes/sweeps/{stopped.pk}/resume/").status_code == 202
    stopped.refresh_from_db()
    assert stopped.status == "queued"


@pytest.mark.parametrize("count", [1, 12])
def test_queries_stay_constant_as_runs_and_levels_grow(api_client, count):
    runs = [sweep_with_levels(levels=[float(2**i) for i in range(count)]) for _ in range(count)]
    paths = ["/api/v1/probes/sweeps/", "/api/v1/probes/sweeps/?format=csv", f"/api/v1/probes/sweeps/{runs[0].pk}/",
             f"/api/v1/probes/sweeps/{runs[0].pk}/levels/"]
    counts = {}
    for path in paths:
        with CaptureQueriesContext(connection) as queries:
            assert api_client.get(path).status_code == 200
        counts[path] = len(queries)
    expected = {"/api/v1/probes/sweeps/": 1, "/api/v1/probes/sweeps/?format=csv": 1}
    for path, value in expected.items():
        assert counts[path] == value, counts
    assert counts[f"/api/v1/probes/sweeps/{runs[0].pk}/"] == 2
    assert counts[f"/api/v1/probes/sweeps/{runs[0].pk}/levels/"] == 3
