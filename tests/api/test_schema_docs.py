import pytest
from django.contrib.staticfiles import finders
from drf_spectacular.validation import validate_schema

from core.apis import ListApi

pytestmark = pytest.mark.django_db


def test_schema_is_valid_openapi_with_every_endpoint_and_documented_errors(api_client):
    schema = api_client.get("/api/v1/schema/?format=json").json()
    validate_schema(schema)
    paths = schema["paths"]
    for path in ["/api/v1/tools/", "/api/v1/tools/{slug}/", "/api/v1/prices/", "/api/v1/hardware/",
                 "/api/v1/quant-formats/", "/api/v1/features/", "/api/v1/use-cases/", "/api/v1/compare/",
                 "/api/v1/probes/targets/", "/api/v1/probes/targets/{slug}/run/", "/api/v1/probes/runs/",
                 "/api/v1/probes/runs/{id}/", "/api/v1/probes/summaries/", "/api/v1/probes/compat/"]:
        assert path in paths, path
    for path, operations in paths.items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert "429" in responses and "Retry-After" in responses["429"]["headers"], (method, path)
            error = responses["429"]["content"]["application/json"]
            assert error["schema"] == {"$ref": "#/components/schemas/Error"}
            assert error["examples"]
    assert schema["paths"]["/api/v1/probes/targets/{slug}/run/"]["post"]["responses"]["202"]
    run_params = {p["name"] for p in paths["/api/v1/probes/runs/"]["get"]["parameters"]}
    assert {"target", "suite", "status", "since", "until", "cursor", "page_size", "format"} <= run_params


def test_every_operation_is_described_for_the_apis_users_not_by_an_internal_docstring(api_client):
    internal = [cls.__doc__ for cls in (ListApi,) if cls.__doc__]
    schema = api_client.get("/api/v1/schema/?format=json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            description = operation.get("description", "")
            assert description, (method, path)
            assert "APIView" not in description and "subclass" not in description, (method, path)
            assert not any(description in doc or doc.strip() in description for doc in internal), (method, path)


@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/redoc/"])
def test_interactive_docs_are_served_with_local_assets(api_client, path):
    response = api_client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html
    asset = html.split("/static/")[1].split('"')[0]
    assert finders.find(asset), asset
