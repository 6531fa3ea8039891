"""/api/v1/ answers an index of the API: every endpoint with its methods, and where the schema and docs are."""
import pytest

from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


def test_the_index_lists_every_endpoint_and_each_listed_read_answers(api_client):
    ToolFactory(slug="vllm")
    index = api_client.get("/api/v1/")
    assert index.status_code == 200
    body = index.json()
    assert body["schema"] == "/api/v1/schema/" and body["docs"] == "/api/v1/docs/"
    paths = {endpoint["path"]: endpoint["methods"] for endpoint in body["endpoints"]}
    assert paths["/api/v1/tools/{slug}/"] == ["GET", "PATCH"]
    assert paths["/api/v1/probes/targets/{slug}/run/"] == ["POST"]
    assert "/api/v1/recommendations/" in paths and "/api/v1/" not in paths
    for path, methods in paths.items():
        if "GET" in methods and "{" not in path:
            response = api_client.get(path)
            # A read that needs parameters says which.
            assert response.status_code == 200 or response.json()["error"]["fields"], path
