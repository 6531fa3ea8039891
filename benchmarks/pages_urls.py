"""The site's URLs plus the baseline of benchmarks/pages.py: the cheapest view Django can serve."""
from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def trivial(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("bench/trivial/", trivial),
    path("", include("config.urls")),
]
