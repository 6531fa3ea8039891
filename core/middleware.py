"""Response headers every page carries (and ETags), and the request-size check made before anything reads a body."""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.http import ConditionalGetMiddleware
from django.utils.cache import set_response_etag

from core.exceptions import error_body
from core.parsers import body_too_large_message
from core.throttles import PageThrottle

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


class RequestBodyLimitMiddleware:
    """413 for a request that declares a body over REQUEST_MAX_BODY_BYTES, answered before the body is read:
    Django spools an upload to disk in full before any view can look at its size."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.REQUEST_MAX_BODY_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0  # Django reads no body it cannot size
        if declared <= limit:
            return self.get_response(request)
        message = body_too_large_message(limit)
        if request.path.startswith("/api/"):
            body = error_body(code="too_large", message=message, fields={"body": [message]})
            response = JsonResponse(body, status=413)
        else:
            response = HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        # Sized, so a client still sending its body can read the whole answer without waiting for the close.
        response["Content-Length"] = str(len(response.content))
        return response


class ETagMiddleware(ConditionalGetMiddleware):
    """Django's ETag and 304 handling, with HEAD answering the ETag its GET would (Django's skips HEAD)."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if request.method == "HEAD" and self.needs_etag(response) and not response.has_header("ETag"):
            set_response_etag(response)
        return super().process_response(request, response)


class PageGateMiddleware:
    """TRACE refused everywhere (405: it would echo the request, cookies included), and pages rate-limited per
    client like the API (core.throttles), with a budget of their own (`pages` in DEFAULT_THROTTLE_RATES),
    generous because most pages are served from the page cache. The API and the admin count on their own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "TRACE":
            response = HttpResponse("TRACE is not allowed.", status=405, content_type="text/plain; charset=utf-8")
            response["Allow"] = "GET, HEAD, POST, OPTIONS"
            return response
        if not request.path.startswith(settings.PAGE_THROTTLE_EXEMPT_PATHS):
            throttle = PageThrottle()
            if not throttle.allow_request(request, None):
                wait = throttle.wait()
                response = HttpResponse(f"Too many requests: try again in {wait} second{'s' if wait != 1 else ''}.",
                                        status=429, content_type="text/plain; charset=utf-8")
                response["Retry-After"] = str(wait)
                return response
        return self.get_response(request)
