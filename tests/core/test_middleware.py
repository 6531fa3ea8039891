"""Every response carries a Content-Security-Policy: strict on the project's pages, which run no inline code;
the third-party admin and API pages may run their own inline code but load nothing from elsewhere."""
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
