import io
import time

import pandas as pd
import pytest
from django.utils.http import http_date

from probes.models import ProbeTarget
from tests.factories import build_catalog, build_runs

pytestmark = pytest.mark.django_db

LISTS = [
    ("/api/v1/tools/", "slug"),
    ("/api/v1/prices/", "id"),
    ("/api/v1/sources/", "key"),
    ("/api/v1/hardware/", "slug"),
    ("/api/v1/hardware/specs/", "slug"),
    ("/api/v1/quant-formats/", "slug"),
    ("/api/v1/features/", "slug"),
    ("/api/v1/api-surfaces/", "slug"),
    ("/api/v1/use-cases/", "slug"),
    ("/api/v1/probes/targets/", "slug"),
    ("/api/v1/probes/runs/?page_size=7", "id"),
    ("/api/v1/probes/summaries/", "target"),
    ("/api/v1/probes/compat/", "target"),
]


@pytest.fixture
def data():
    build_catalog(4)
    build_runs(ProbeTarget.objects.get(slug="target-000"), 12)


def _csv(client, path: str) -> pd.DataFrame:
    response = client.get(path + ("&" if "?" in path else "?") + "format=csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return pd.read_csv(io.BytesIO(response.content), dtype=str, keep_default_na=False)


@pytest.mark.parametrize(("path", "key"), LISTS)
def test_csv_holds_the_same_rows_in_the_same_order_as_json(api_client, data, path, key):
    rows = api_client.get(path).json()["results"]
    frame = _csv(api_client, path)
    assert len(rows) > 0
    assert list(frame[key]) == [str(row[key]) for row in rows]


def test_csv_flattens_nested_values_into_named_columns(api_client, data):
    frame = _csv(api_client, "/api/v1/tools/")
    assert {"licence", "headline_price.output_usd_per_mtok", "hardware", "open_source"} <= set(frame.columns)
    first = frame.iloc[0]
    assert first["open_source"] == "true"
    assert first["hardware"] == "nvidia-cuda"
    summaries = _csv(api_client, "/api/v1/probes/summaries/")
    assert summaries.iloc[0]["metrics.ttft_ms.p50"] == "120.0"
    prices = _csv(api_client, "/api/v1/prices/")
    assert prices.iloc[0]["source.key"] == "catalog-source"


def test_an_empty_csv_still_has_its_header(api_client, data):
    frame = _csv(api_client, "/api/v1/tools/?kind=provider")
    assert frame.empty
    assert "slug" in frame.columns and "headline_price.item" in frame.columns


@pytest.mark.parametrize(("path", "columns"), [
    ("/api/v1/published-benchmarks/?dataset=none", {"engine", "hardware", "publisher", "url", "observed_on"}),
    ("/api/v1/published-benchmarks/points/?dataset=none", {"engine", "publisher", "level", "ttft_ms.p50"}),
])
def test_an_empty_evidence_csv_is_its_header_row(api_client, data, path, columns):
    response = api_client.get(path + "&format=csv")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("\n") == 1
    assert columns <= set(body.strip().split(","))


def test_csv_of_runs_exports_the_page_and_links_the_next(api_client, data):
    response = api_client.get("/api/v1/probes/runs/?page_size=5&format=csv")
    assert len(pd.read_csv(io.BytesIO(response.content))) == 5
    assert "format=csv" in response["Link"] and 'rel="next"' in response["Link"]


@pytest.mark.parametrize(
    "path", ["/api/v1/tools/", "/api/v1/tools/engine-001/", "/api/v1/probes/runs/", "/api/v1/tools/?format=csv"]
)
def test_conditional_get_answers_304_on_a_matching_etag(api_client, data, path):
    first = api_client.get(path)
    assert first.status_code == 200
    etag = first["ETag"]
    assert etag.startswith('"') and first["Last-Modified"]
    again = api_client.get(path, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert api_client.get(path, HTTP_IF_NONE_MATCH='"something-else"').status_code == 200


def test_conditional_get_answers_304_on_if_modified_since(api_client, data):
    first = api_client.get("/api/v1/tools/")
    assert api_client.get("/api/v1/tools/", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"]).status_code == 304
    long_ago = http_date(time.time() - 86400)
    assert api_client.get("/api/v1/tools/", HTTP_IF_MODIFIED_SINCE=long_ago).status_code == 200


def test_a_change_to_the_data_changes_the_etag(api_client, staff_client, data):
    before = api_client.get("/api/v1/tools/engine-001/")
    staff_client.patch("/api/v1/tools/engine-001/", {"verdict": "Rewritten."}, format="json")
    after = api_client.get("/api/v1/tools/engine-001/", HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert after["ETag"] != before["ETag"]
    assert after.json()["verdict"] == "Rewritten."


def test_json_and_csv_of_the_same_list_have_different_etags(api_client, data):
    assert api_client.get("/api/v1/tools/")["ETag"] != api_client.get("/api/v1/tools/?format=csv")["ETag"]
