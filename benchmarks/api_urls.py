"""The project's URLs plus the baseline of benchmarks/api.py: a trivial DRF view.

It runs through the same DRF pipeline as the real endpoints (token/session authentication, the
Redis-backed throttles, content negotiation, the JSON renderer) but touches no database.
"""
from django.urls import include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class TrivialApi(APIView):
    def get(self, request: Request) -> Response:
        return Response({"ok": True})


urlpatterns = [
    path("bench/trivial/", TrivialApi.as_view()),
    path("", include("config.urls")),
]
