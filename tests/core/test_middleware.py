"""Every response carries a Content-Security-Policy: strict on the project's pages, which run no inline code;
the third-party admin and API pages may run their own inline code but load nothing from elsewhere. Pages are
rate-limited per client, static files are not; TRACE is refused."""
import pytest

from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/tools/vllm/", "/compare/", "/providers/", "/recommend/", "/no-such-page/"])
def test_the_projects_pages_allow_no_inline_code_and_no_other_origin(client, path):
    ToolFactory(slug="vllm")
    policy = client.get(path)["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy
    assert "unsafe" not in policy and "http" not in policy
    assert "frame-ancestors 'none'" in policy and "object-src 'none'" in policy


@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/redoc/", "/admin/login/"])
def test_third_party_pages_may_run_inline_code_from_this_origin_only(client, path):
    policy = client.get(path)["Content-Security-Policy"]
    assert "script-src 'self' 'unsafe-inline'" in policy
    assert "http" not in policy and "default-src 'self'" in policy


def test_pages_are_rate_limited_per_client_and_static_files_are_not(client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "pages": "3/min"}}
    ToolFactory(slug="vllm")
    statuses = [client.get(path).status_code for path in ("/", "/tools/vllm/", "/", "/tools/vllm/")]
    assert statuses == [200, 200, 200, 429]
    refused = client.get("/")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert client.get("/", REMOTE_ADDR="192.0.2.7").status_code == 200  # another client has its own budget
    assert client.get("/static/css/site.css").status_code == 200
    assert client.get("/api/v1/tools/").status_code == 200  # the API counts on its own


@pytest.mark.parametrize("path", ["/", "/tools/vllm/", "/api/v1/tools/"])
def test_trace_is_refused(client, path):
    ToolFactory(slug="vllm")
    response = client.generic("TRACE", path)
    assert response.status_code == 405 and b"<html" not in response.content.lower()
