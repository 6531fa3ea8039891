"""Response headers every page carries."""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

# The project's pages load every script, stylesheet, image and font from this origin and run no inline code.
STRICT_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
# The admin, the browsable API and the API's Swagger UI and Redoc pages are third-party templates with inline
# scripts and styles; they still load nothing from another origin.
THIRD_PARTY_UI_POLICY = STRICT_POLICY.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'").replace(
    "style-src 'self'", "style-src 'self' 'unsafe-inline'"
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        third_party = request.path.startswith(settings.CSP_THIRD_PARTY_UI_PATHS)
        response.headers.setdefault(
            "Content-Security-Policy", THIRD_PARTY_UI_POLICY if third_party else STRICT_POLICY
        )
        return response
