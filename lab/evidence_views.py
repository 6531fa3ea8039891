"""Engines compared on published evidence: the matrix of model × hardware, and one model on one hardware."""
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from core.cache import cached_page
from lab import evidence


@require_safe
@cached_page()
def evidence_matrix(request: HttpRequest) -> HttpResponse:
    return render(request, "lab/evidence_matrix.html", {"matrix": evidence.evidence_matrix()})


@require_safe
@cached_page()
def evidence_detail(request: HttpRequest, model: str, hardware: str) -> HttpResponse:
    found = evidence.comparisons(model=model, hardware=[hardware])
    if not found:
        raise Http404("No published benchmark of this model on this hardware.")
    return render(request, "lab/evidence_detail.html", {
        "compared": [comparison for comparison in found if len(comparison.engines) >= 2],
        "single": [comparison for comparison in found if len(comparison.engines) == 1],
        "model_name": found[0].model_name, "hardware_name": found[0].hardware_name, "model_slug": model,
    })
