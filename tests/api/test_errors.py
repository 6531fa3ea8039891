"""Every failure a client can provoke is a 4xx in the one error shape; none is a 500."""
import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.factories import LicenceFactory, ToolFactory

pytestmark = pytest.mark.django_db


def assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "fields"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


def test_malformed_json_body_is_a_400_naming_the_body(staff_client):
    response = staff_client.generic("POST", "/api/v1/tools/", '{"slug": "x", ', content_type="application/json")
    error = assert_error_shape(response, 400)
    assert error["code"] == "parse_error"
    assert "body" in error["fields"]


def test_wrong_content_type_is_a_415(staff_client):
    response = staff_client.generic("POST", "/api/v1/tools/", "slug=x", content_type="text/plain")
    assert assert_error_shape(response, 415)["code"] == "unsupported_media_type"


def test_a_json_array_body_is_a_400(staff_client):
    response = staff_client.generic("POST", "/api/v1/sources/", "[1, 2]", content_type="application/json")
    assert "non_field_errors" in assert_error_shape(response, 400)["fields"]


def test_nested_validation_errors_are_flattened_to_dotted_names(staff_client):
    LicenceFactory()
    response = staff_client.post(
        "/api/v1/tools/", {"slug": "x", "name": "X", "kind": "engine", "sources": ["a\x00b"]}, format="json"
    )
    fields = assert_error_shape(response, 400)["fields"]
    assert list(fields) == ["sources"]


def test_unsupported_method_is_a_405(staff_client):
    assert assert_error_shape(staff_client.delete("/api/v1/tools/"), 405)["code"] == "method_not_allowed"


def test_unknown_format_is_a_400_naming_format(api_client):
    ToolFactory(slug="vllm")
    assert "format" in assert_error_shape(api_client.get("/api/v1/tools/?format=xml"), 400)["fields"]
    assert "format" in assert_error_shape(api_client.get("/api/v1/tools/vllm/?format=csv"), 400)["fields"]
    assert "format" in assert_error_shape(api_client.get("/api/v1/tools/?format="), 400)["fields"]


def test_errors_asked_for_as_csv_are_still_json(api_client):
    error = assert_error_shape(api_client.get("/api/v1/tools/?format=csv&kind=robot"), 400)
    assert "kind" in error["fields"]


def test_unknown_url_under_the_api_is_a_json_404_even_for_writes(api_client):
    assert_error_shape(api_client.get("/api/v1/nothing/here/"), 404)
    assert_error_shape(api_client.post("/api/v1/prices/-5/", {}, format="json"), 404)


def test_session_write_without_csrf_token_is_refused_in_the_error_shape(db):
    user = get_user_model().objects.create_user("editor", password="pw", is_staff=True)
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post("/api/v1/sources/", {"key": "k", "title": "t"}, format="json")
    assert "CSRF" in assert_error_shape(response, 403)["message"]


def test_an_unexpected_failure_is_a_500_in_the_error_shape(api_client, monkeypatch):
    from catalog import selectors

    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(selectors, "tool_list", broken)
    error = assert_error_shape(api_client.get("/api/v1/tools/"), 500)
    assert error["code"] == "server_error"
    assert "boom" not in error["message"]
