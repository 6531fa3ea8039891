"""Every list and detail endpoint costs the same number of queries for 5 tools as for 50,
and for 10 runs as for 1,000: nothing is fetched per row."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import PriceItem
from probes.models import ProbeRun, ProbeTarget
from tests.factories import build_catalog, build_runs
from tests.factories import CompatOutcomeFactory, RequestMeasurementFactory

pytestmark = pytest.mark.django_db

CATALOG_PATHS = [
    "/api/v1/tools/",
    "/api/v1/tools/?hardware=nvidia-cuda&feature=continuous-batching&ordering=price",
    "/api/v1/tools/?format=csv",
    "/api/v1/tools/engine-001/",
    "/api/v1/prices/",
    "/api/v1/prices/?tool=engine-001",
    "/api/v1/sources/",
    "/api/v1/sources/catalog-source/",
    "/api/v1/hardware/",
    "/api/v1/hardware/specs/",
    "/api/v1/quant-formats/",
    "/api/v1/features/",
    "/api/v1/api-surfaces/",
    "/api/v1/use-cases/",
    "/api/v1/compare/?tools=engine-000,engine-001,engine-002",
    "/api/v1/probes/targets/",
    "/api/v1/probes/targets/target-001/",
    "/api/v1/probes/summaries/",
    "/api/v1/probes/compat/",
]


def _count(client, path: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, (path, response.content[:300])
    return len(queries)


@pytest.mark.parametrize("path", CATALOG_PATHS)
def test_catalog_endpoint_queries_do_not_grow_with_the_catalog(api_client, path):
    build_catalog(5)
    few = _count(api_client, path)
    build_catalog(45, start=5)
    assert _count(api_client, path) == few


def test_price_detail_queries_do_not_grow_with_the_catalog(api_client):
    build_catalog(5)
    price_id = PriceItem.objects.get(tool__slug="engine-001").pk
    few = _count(api_client, f"/api/v1/prices/{price_id}/")
    build_catalog(45, start=5)
    assert _count(api_client, f"/api/v1/prices/{price_id}/") == few


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/probes/runs/",
        "/api/v1/probes/runs/?target=target-000&suite=speed&status=succeeded",
        "/api/v1/probes/runs/?since=2026-11-01T00:00:00Z&until=2026-12-01T00:00:00Z&page_size=500",
        "/api/v1/probes/runs/?format=csv",
    ],
)
def test_run_list_queries_do_not_grow_with_the_runs(api_client, path):
    build_catalog(1)
    target = ProbeTarget.objects.get()
    build_runs(target, 10)
    few = _count(api_client, path)
    build_runs(target, 990)
    assert ProbeRun.objects.count() == 1000
    assert _count(api_client, path) == few


def test_a_deep_runs_page_costs_what_the_first_costs(api_client):
    build_catalog(1)
    build_runs(ProbeTarget.objects.get(), 1000)
    with CaptureQueriesContext(connection) as first_queries:
        first = api_client.get("/api/v1/probes/runs/?page_size=20")
    url = first.json()["next"]
    for _ in range(30):
        url = api_client.get(url).json()["next"]
    with CaptureQueriesContext(connection) as deep_queries:
        deep = api_client.get(url)
    assert deep.status_code == 200 and len(deep.json()["results"]) == 20
    assert len(deep_queries) == len(first_queries)
    assert "OFFSET" not in deep_queries[-1]["sql"].upper()


def test_run_detail_queries_do_not_grow_with_its_measurements(api_client):
    build_catalog(1)
    run = build_runs(ProbeTarget.objects.get(), 1)[0]
    RequestMeasurementFactory.create_batch(3, run=run)
    CompatOutcomeFactory(run=run, check_name="a")
    few = _count(api_client, f"/api/v1/probes/runs/{run.pk}/")
    RequestMeasurementFactory.create_batch(100, run=run)
    for name in "bcdefgh":
        CompatOutcomeFactory(run=run, check_name=name)
    assert _count(api_client, f"/api/v1/probes/runs/{run.pk}/") == few
