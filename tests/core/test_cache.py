"""The shared read cache answers repeat reads without the database and never outlives a write."""
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from probes.models import ProbeRun
from tests.factories import MeasurementSummaryFactory, ProbeRunFactory, ProbeTargetFactory, SourceFactory, ToolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def _selects(client, path):
    with CaptureQueriesContext(connection) as queries:
        body = client.get(path).json()
    return sum(1 for query in queries if query["sql"].lstrip().upper().startswith("SELECT")), body


def test_a_repeat_read_touches_no_table(client):
    ToolFactory(slug="vllm")
    first, _ = _selects(client, "/api/v1/tools/")
    again, body = _selects(client, "/api/v1/tools/")
    assert first > 0 and again == 0
    assert [tool["slug"] for tool in body["results"]] == ["vllm"]


def test_an_orm_write_outside_the_api_invalidates_at_once(client):
    tool = ToolFactory(slug="vllm", verdict="Before.")
    client.get("/api/v1/tools/vllm/")
    tool.verdict = "After."
    tool.save()
    assert client.get("/api/v1/tools/vllm/").json()["verdict"] == "After."


def test_many_to_many_changes_invalidate(client):
    tool = ToolFactory(slug="vllm")
    assert client.get("/api/v1/tools/vllm/").json()["sources"] == []
    tool.sources.add(SourceFactory(key="seed-002"))
    assert [source["key"] for source in client.get("/api/v1/tools/vllm/").json()["sources"]] == ["seed-002"]


def test_a_new_summary_shows_on_the_tool_page_and_the_summaries_list(client):
    target = ProbeTargetFactory(slug="t")
    assert client.get("/api/v1/probes/summaries/").json()["count"] == 0
    assert client.get(f"/api/v1/tools/{target.tool.slug}/").json()["measurement_summaries"] == []
    MeasurementSummaryFactory(target=target)
    assert client.get("/api/v1/probes/summaries/").json()["count"] == 1
    assert len(client.get(f"/api/v1/tools/{target.tool.slug}/").json()["measurement_summaries"]) == 1


def test_the_runs_list_is_never_cached(client):
    target = ProbeTargetFactory(slug="t")
    ProbeRunFactory(target=target)
    assert len(client.get("/api/v1/probes/runs/").json()["results"]) == 1
    ProbeRun.objects.bulk_create([ProbeRun(target=target, suite="speed")])
    assert len(client.get("/api/v1/probes/runs/").json()["results"]) == 2
