import datetime

import pytest

from probes.models import ProbeRun
from tests.factories import build_runs
from tests.factories import (
    CompatOutcomeFactory,
    CompatStatusFactory,
    MeasurementSummaryFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
    RequestMeasurementFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def target():
    return ProbeTargetFactory(slug="groq-120b", name="Groq gpt-oss-120b", api_key_env="ATLAS_API_READS_API_KEY")


def ids(body) -> list[int]:
    return [row["id"] for row in body["results"]]


def test_targets_expose_the_variable_name_and_whether_it_is_set(api_client, target, monkeypatch):
    row = api_client.get("/api/v1/probes/targets/").json()["results"][0]
    assert (row["api_key_env"], row["configured"]) == ("ATLAS_API_READS_API_KEY", False)
    monkeypatch.setenv("ATLAS_API_READS_API_KEY", "gsk-canary")
    cache_busting = api_client.get("/api/v1/probes/targets/groq-120b/").json()
    assert cache_busting["configured"] is True


def test_runs_walk_forward_and_back_by_cursor_without_gaps_or_repeats(api_client, target):
    runs = build_runs(target, 23)
    newest_first = [run.pk for run in reversed(runs)]
    seen: list[int] = []
    pages = []
    url = "/api/v1/probes/runs/?page_size=10"
    while url:
        body = api_client.get(url).json()
        pages.append(body)
        seen += ids(body)
        url = body["next"]
    assert seen == newest_first
    assert [len(page["results"]) for page in pages] == [10, 10, 3]
    assert pages[0]["previous"] is None
    back = api_client.get(pages[2]["previous"]).json()
    assert ids(back) == ids(pages[1])
    assert ids(api_client.get(back["previous"]).json()) == ids(pages[0])


def test_runs_page_carries_a_link_header(api_client, target):
    build_runs(target, 3)
    response = api_client.get("/api/v1/probes/runs/?page_size=2")
    assert 'rel="next"' in response["Link"]


def test_run_filters(api_client, target):
    runs = build_runs(target, 10)
    other = ProbeTargetFactory(slug="other")
    failed = ProbeRunFactory(target=other, status=ProbeRun.Status.FAILED, suite=ProbeRun.Suite.COMPAT)
    assert ids(api_client.get("/api/v1/probes/runs/?target=other").json()) == [failed.pk]
    assert ids(api_client.get("/api/v1/probes/runs/?status=failed").json()) == [failed.pk]
    assert ids(api_client.get("/api/v1/probes/runs/?suite=compat").json()) == [failed.pk]
    since = (runs[0].queued_at + datetime.timedelta(minutes=7)).isoformat()
    until = (runs[0].queued_at + datetime.timedelta(minutes=9)).isoformat()
    body = api_client.get("/api/v1/probes/runs/", {"target": "groq-120b", "since": since, "until": until}).json()
    assert ids(body) == [runs[8].pk, runs[7].pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("target=nope", "target"),
        ("suite=vibes", "suite"),
        ("status=done", "status"),
        ("since=yesterday", "since"),
        ("since=2026-11-02T00:00:00Z&until=2026-11-01T00:00:00Z", "until"),
        ("page_size=0", "page_size"),
        ("page_size=100000000000000000000", "page_size"),
        ("page_size=ten", "page_size"),
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=eDo1", "cursor"),
        ("cursor=bjotNQ", "cursor"),
        ("cursor=bjo5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OQ", "cursor"),
    ],
)
def test_bad_run_query_is_a_400_naming_the_field(api_client, target, query, field):
    response = api_client.get(f"/api/v1/probes/runs/?{query}")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == [field]


def test_run_detail_has_measurements_and_compat_outcomes(api_client, target):
    run = ProbeRunFactory(target=target)
    RequestMeasurementFactory(run=run, index=1, ttft_ms=99.5, gaps_ms=[1.0, 2.5], tokens_per_chunk=[1, 2])
    RequestMeasurementFactory(run=run, index=0)
    CompatOutcomeFactory(run=run, check_name="tool_choice", outcome="rejected", http_status=400,
                         message="tool_choice is not supported")
    body = api_client.get(f"/api/v1/probes/runs/{run.pk}/").json()
    assert [m["index"] for m in body["measurements"]] == [0, 1]
    assert body["measurements"][1]["ttft_ms"] == 99.5
    assert body["measurements"][1]["gaps_ms"] == [1.0, 2.5]
    assert body["compat_outcomes"] == [
        {"check": "tool_choice", "outcome": "rejected", "http_status": 400,
         "message": "tool_choice is not supported", "detail": ""}
    ]


@pytest.mark.parametrize("path", ["probes/runs/999999/", "probes/runs/abc/", "probes/runs/-1/",
                                  "probes/runs/99999999999999999999999/", "probes/targets/nope/", "no-such-thing/"])
def test_unknown_runs_and_urls_are_404s_in_the_error_shape(api_client, path):
    response = api_client.get(f"/api/v1/{path}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_summaries_and_compat_matrix(api_client, target):
    MeasurementSummaryFactory(target=target, workload="in-1k", concurrency=10)
    MeasurementSummaryFactory(target=target, workload="in-100", concurrency=1)
    CompatStatusFactory(target=target, check_name="logprobs", outcome="ignored")
    CompatStatusFactory(target=target, check_name="json_schema", outcome="supported")
    summaries = api_client.get("/api/v1/probes/summaries/").json()["results"]
    assert [(row["workload"], row["concurrency"]) for row in summaries] == [("in-100", 1), ("in-1k", 10)]
    assert summaries[0]["metrics"]["e2e_ms"]["median_72h"] == 1402.0
    assert api_client.get("/api/v1/probes/summaries/?concurrency=10").json()["count"] == 1
    cells = api_client.get("/api/v1/probes/compat/").json()["results"]
    assert [(cell["check"], cell["outcome"]) for cell in cells] == [
        ("json_schema", "supported"), ("logprobs", "ignored")
    ]
    assert api_client.get("/api/v1/probes/compat/?outcome=ignored").json()["count"] == 1


def test_key_value_never_appears_in_any_response(api_client, staff_client, target, monkeypatch):
    canary = "gsk-CANARY-4f9d2b7e"
    monkeypatch.setenv("ATLAS_API_READS_API_KEY", canary)
    run = ProbeRunFactory(target=target)
    RequestMeasurementFactory(run=run)
    MeasurementSummaryFactory(target=target)
    CompatStatusFactory(target=target)
    paths = [
        "/api/v1/probes/targets/", "/api/v1/probes/targets/groq-120b/", "/api/v1/probes/runs/",
        f"/api/v1/probes/runs/{run.pk}/", "/api/v1/probes/summaries/", "/api/v1/probes/compat/",
        "/api/v1/tools/", f"/api/v1/tools/{target.tool.slug}/", "/api/v1/probes/targets/?format=csv",
        "/api/v1/schema/",
    ]
    for client in (api_client, staff_client):
        for path in paths:
            response = client.get(path)
            assert response.status_code == 200, path
            assert canary not in response.content.decode(), path
    patched = staff_client.patch("/api/v1/probes/targets/groq-120b/", {"notes": "checked"}, format="json")
    assert patched.status_code == 200
    assert canary not in patched.content.decode()


def test_run_list_rows_match_the_detail_serializer(api_client, target):
    run = ProbeRunFactory(target=target, error_message="boom", summary={"ttft_ms": {"p50": 1.5}})
    row = api_client.get("/api/v1/probes/runs/").json()["results"][0]
    detail = api_client.get(row["url"]).json()
    assert row == {key: detail[key] for key in row}
    assert row["id"] == run.pk and row["queued_at"].endswith("Z")
