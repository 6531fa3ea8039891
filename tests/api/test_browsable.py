import pytest

from tests.factories import ProbeTargetFactory, ToolFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/api/v1/tools/", "/api/v1/tools/vllm/", "/api/v1/probes/runs/",
                                  "/api/v1/probes/targets/t/run/"])
def test_browsable_api_pages_render_for_staff_and_anonymous(api_client, staff_user, path):
    ProbeTargetFactory(slug="t", tool=ToolFactory(slug="vllm"))
    for client_user in (None, staff_user):
        if client_user:
            api_client.force_login(client_user)
        response = api_client.get(path, HTTP_ACCEPT="text/html")
        assert response.status_code in (200, 405), response.content[:500]
        assert response["Content-Type"].startswith("text/html")


def test_head_answers_like_get_without_a_body(api_client):
    ToolFactory(slug="vllm")
    response = api_client.head("/api/v1/tools/")
    assert response.status_code == 200
    assert response["ETag"] == api_client.get("/api/v1/tools/")["ETag"]
