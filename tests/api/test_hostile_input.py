"""Hostile or oversized requests get a clear 4xx that names the limit, never a 500: too many query parameters,
a body over the size limit, JSON nested deeper than any real document."""
import json

import pytest

from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


def _error(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    return response.json()["error"]


def test_more_query_parameters_than_the_limit_is_a_400_naming_it(api_client, settings):
    query = "&".join(f"p{number}=1" for number in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    error = _error(api_client.get(f"/api/v1/tools/?{query}"), 400)
    assert f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,}" in error["message"] and "parameters" in error["message"]


def test_pages_answer_too_many_query_parameters_with_400(client, settings):
    query = "&".join(f"p{number}=1" for number in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    assert client.get(f"/?{query}").status_code == 400


def test_a_json_body_over_the_limit_is_a_413_naming_it(staff_client, settings):
    ToolFactory(slug="vllm")
    body = json.dumps({"verdict": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)})
    error = _error(staff_client.patch("/api/v1/tools/vllm/", body, content_type="application/json"), 413)
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,}" in error["message"]


@pytest.mark.parametrize("depth", [65, 100_000])
def test_json_nested_deeper_than_the_limit_is_a_400_naming_it(staff_client, depth):
    ToolFactory(slug="vllm")
    body = '{"verdict": ' + "[" * depth + "]" * depth + "}"
    error = _error(staff_client.patch("/api/v1/tools/vllm/", body, content_type="application/json"), 400)
    assert "nested deeper than 64" in error["message"] and error["fields"] == {"body": [error["message"]]}


def test_json_nested_within_the_limit_reaches_validation(staff_client):
    ToolFactory(slug="vllm")
    body = '{"verdict": ' + "[" * 10 + "]" * 10 + "}"
    error = _error(staff_client.patch("/api/v1/tools/vllm/", body, content_type="application/json"), 400)
    assert "verdict" in error["fields"]


@pytest.mark.parametrize("content_type", ["multipart/form-data", "application/x-www-form-urlencoded"])
def test_a_form_body_with_more_fields_than_the_limit_is_a_400_naming_it(staff_client, settings, content_type):
    fields = {f"f{number}": "1" for number in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1)}
    if content_type == "multipart/form-data":
        response = staff_client.post("/api/v1/probes/sweeps/import/", fields, format="multipart")
    else:
        body = "&".join(f"{name}={value}" for name, value in fields.items())
        response = staff_client.post("/api/v1/probes/sweeps/import/", body, content_type=content_type)
    error = _error(response, 400)
    assert f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,}" in error["message"]


def test_a_form_body_over_the_memory_limit_is_a_413_naming_it(staff_client, settings):
    body = "flags=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
    response = staff_client.post("/api/v1/probes/sweeps/import/", body, content_type="application/x-www-form-urlencoded")
    error = _error(response, 413)
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,}" in error["message"]
