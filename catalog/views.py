from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.models import Tool


def catalog_index(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/index.html", {"tools": Tool.objects.ranked()})
