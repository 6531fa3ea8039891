from decimal import Decimal

import pytest

from catalog.models import Tool
from tests.factories import build_catalog
from tests.factories import (
    FeatureFactory,
    HardwareSupportFactory,
    HardwareTargetFactory,
    LicenceFactory,
    MeasurementSummaryFactory,
    PriceItemFactory,
    ProbeTargetFactory,
    SourceFactory,
    ToolFactory,
)

pytestmark = pytest.mark.django_db


def slugs(response) -> list[str]:
    return [row["slug"] for row in response.json()["results"]]


@pytest.fixture
def catalog():
    source = SourceFactory(key="seed-002")
    mit = LicenceFactory(spdx_id="MIT", name="MIT License", is_open_source=True)
    proprietary = LicenceFactory(spdx_id="proprietary-service", name="Proprietary service", is_open_source=False)
    cuda = HardwareTargetFactory(slug="nvidia-cuda", name="NVIDIA CUDA")
    apple = HardwareTargetFactory(slug="apple-silicon", name="Apple silicon")
    batching = FeatureFactory(slug="continuous-batching", name="Continuous batching")
    llama = ToolFactory(slug="llama-cpp", name="llama.cpp", rating=Decimal("4.8"), rank=1, licence=mit,
                        rating_source=source, summary="C/C++ inference for GGUF models.")
    vllm = ToolFactory(slug="vllm", name="vLLM", rating=Decimal("4.7"), rank=2, rating_source=source)
    groq = ToolFactory(slug="groq", name="Groq", kind=Tool.Kind.PROVIDER, rating=Decimal("4.0"), rank=11,
                       licence=proprietary, rating_source=source)
    tgi = ToolFactory(slug="tgi", name="Hugging Face TGI", rating=None, licence=None)
    HardwareSupportFactory(tool=llama, hardware=apple)
    HardwareSupportFactory(tool=vllm, hardware=cuda)
    vllm.feature_support.create(feature=batching)
    PriceItemFactory(tool=groq, item="gpt-oss-120b", input_usd_per_mtok=Decimal("0.15"),
                     output_usd_per_mtok=Decimal("0.60"), source=source)
    return {"llama": llama, "vllm": vllm, "groq": groq, "tgi": tgi}


def test_tools_are_ranked_by_rating_with_unrated_last(api_client, catalog):
    response = api_client.get("/api/v1/tools/")
    assert response.status_code == 200
    assert slugs(response) == ["llama-cpp", "vllm", "groq", "tgi"]
    assert response.json()["count"] == 4


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("kind=provider", ["groq"]),
        ("hardware=apple-silicon", ["llama-cpp"]),
        ("licence=MIT", ["llama-cpp"]),
        ("feature=continuous-batching", ["vllm"]),
        ("open_source=false", ["groq", "tgi"]),
        ("min_rating=4.5", ["llama-cpp", "vllm"]),
        ("q=gguf", ["llama-cpp"]),
        ("ordering=name", ["groq", "tgi", "llama-cpp", "vllm"]),
    ],
)
def test_tool_filters_and_ordering(api_client, catalog, query, expected):
    response = api_client.get(f"/api/v1/tools/?{query}")
    assert response.status_code == 200, response.content
    assert slugs(response) == expected


def test_price_ordering_puts_open_source_first_and_unpriced_last(api_client, catalog):
    response = api_client.get("/api/v1/tools/?ordering=price")
    order = slugs(response)
    assert order[0] == "llama-cpp"
    assert order.index("groq") < order.index("tgi")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("kind=robot", "kind"),
        ("hardware=quantum-abacus", "hardware"),
        ("licence=WTFPL", "licence"),
        ("feature=telepathy", "feature"),
        ("open_source=maybe", "open_source"),
        ("min_rating=9", "min_rating"),
        ("min_rating=NaN", "min_rating"),
        ("ordering=popularity", "ordering"),
        ("q=" + "x" * 500, "q"),
        ("q=a%00b", "q"),
    ],
)
def test_bad_tool_filter_is_a_400_naming_the_field(api_client, catalog, query, field):
    response = api_client.get(f"/api/v1/tools/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert list(error["fields"]) == [field]
    assert field in error["message"]


def test_unknown_hardware_message_names_the_value_and_the_list_of_valid_ones(api_client, catalog):
    error = api_client.get("/api/v1/tools/?hardware=quantum-abacus").json()["error"]
    assert error["fields"]["hardware"] == [
        'No hardware target with the slug "quantum-abacus": the valid ones are listed at /api/v1/hardware/.'
    ]


@pytest.mark.parametrize(("path", "field", "listed_at"), [
    ("/api/v1/tools/?feature=teleport", "feature", "/api/v1/features/"),
    ("/api/v1/tools/?licence=WTFPL-9", "licence", "/api/v1/tools/"),
    ("/api/v1/probes/runs/?target=nowhere", "target", "/api/v1/probes/targets/"),
    ("/api/v1/probes/summaries/?tool=nothing", "tool", "/api/v1/tools/"),
    ("/api/v1/probes/sweeps/?hardware=h100", "hardware", "/api/v1/hardware/specs/"),
    ("/api/v1/published-benchmarks/?hardware=h100", "hardware", "/api/v1/hardware/specs/"),
    ("/api/v1/published-benchmarks/?model=gpt-9", "model", "/api/v1/models/"),
    ("/api/v1/published-benchmarks/points/?engine=warp-drive", "engine", "/api/v1/tools/"),
])
@pytest.mark.parametrize("format_suffix", ["", "&format=csv"])
def test_an_unknown_slug_in_a_filter_is_a_400_naming_the_field_and_the_list_of_valid_ones(
    api_client, catalog, path, field, listed_at, format_suffix
):
    response = api_client.get(path + format_suffix)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert list(error["fields"]) == [field]
    assert listed_at in error["fields"][field][0] and field in error["message"]


def test_tool_detail_has_everything_and_its_measurements(api_client, catalog):
    target = ProbeTargetFactory(slug="groq-120b", tool=catalog["groq"])
    MeasurementSummaryFactory(target=target, workload="in-1k")
    body = api_client.get("/api/v1/tools/groq/").json()
    assert body["rating"] == "4.0"
    assert body["rating_source"]["key"] == "seed-002"
    assert body["licence"] == {"spdx_id": "proprietary-service", "name": "Proprietary service", "is_open_source": False}
    assert body["headline_price"]["output_usd_per_mtok"] == "0.6"
    assert [price["item"] for price in body["prices"]] == ["gpt-oss-120b"]
    assert body["prices"][0]["source"]["key"] == "seed-002"
    summary = body["measurement_summaries"][0]
    assert (summary["target"], summary["workload"], summary["concurrency"]) == ("groq-120b", "in-1k", 1)
    assert summary["metrics"]["ttft_ms"] == {"p50": 120.0, "p95": 150.0, "p99": 160.0, "median_72h": 121.0}


def test_tool_detail_of_an_unmeasured_tool_says_so_with_an_empty_list(api_client, catalog):
    assert api_client.get("/api/v1/tools/tgi/").json()["measurement_summaries"] == []


def test_unknown_tool_is_a_404_in_the_error_shape(api_client, catalog):
    response = api_client.get("/api/v1/tools/no-such-tool/")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": 'No tool with the slug "no-such-tool".', "fields": {}}
    }


def test_compare_answers_the_pages_matrix(api_client, catalog, client):
    body = api_client.get("/api/v1/compare/?tools=vllm,llama-cpp").json()
    assert [tool["slug"] for tool in body["tools"]] == ["vllm", "llama-cpp"]
    rows = {row["key"]: row for row in body["rows"]}
    assert rows["rating"] == {
        "section": "summary", "key": "rating", "label": "Rating", "differs": True, "not_stated_for": [],
        "cells": [{"state": "text", "label": "4.7 / 5", "note": ""}, {"state": "text", "label": "4.8 / 5", "note": ""}],
    }
    assert rows["kind"]["differs"] is False
    page = client.get("/compare/?tools=vllm,llama-cpp").content.decode()
    assert page.count('class="row-differs"') == sum(row["differs"] for row in body["rows"])


@pytest.mark.parametrize(
    ("query", "code"),
    [("tools=vllm", "too_few"), ("tools=vllm,nope", "unknown"), ("tools=vllm,vllm", "duplicate"), ("", None)],
)
def test_compare_rejects_bad_requests_naming_tools(api_client, catalog, query, code):
    response = api_client.get(f"/api/v1/compare/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == ["tools"]
    if code:
        assert error["code"] == code


def test_lists_of_reference_data(api_client):
    build_catalog(2)
    hardware = api_client.get("/api/v1/hardware/").json()["results"]
    assert hardware[0]["slug"] == "nvidia-cuda"
    assert hardware[0]["tools"] == ["engine-000", "engine-001"]
    assert hardware[0]["specs"][0]["memory_gb"] == "80.0"
    assert api_client.get("/api/v1/quant-formats/").json()["results"][0]["hardware_requirement"] == (
        "Ada or Hopper or newer"
    )
    assert api_client.get("/api/v1/features/").json()["results"][0]["tools"] == ["engine-000", "engine-001"]
    use_case = api_client.get("/api/v1/use-cases/").json()["results"][0]
    assert [rec["tool"] for rec in use_case["recommendations"]] == ["engine-000", "engine-001"]
    assert use_case["recommendations"][0]["source"]["key"] == "catalog-source"
    prices = api_client.get("/api/v1/prices/?tool=engine-001").json()["results"]
    assert [price["tool"] for price in prices] == ["engine-001"]
    assert api_client.get("/api/v1/use-cases/?group=nonsense").status_code == 400
