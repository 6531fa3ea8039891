"""/cost/: what a model costs per million tokens on rented GPUs at a latency target, from the evidence's curves,
beside the hosted providers' prices for the same token mix. A plain GET form; the chart is SVG drawn here."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from core.cache import cached_page
from recommend.cost import cost_chart, cost_groups, costed_hardware, costed_models, gpu_offers
from recommend.cost_forms import CostForm


def _error_summary(form) -> list[str]:
    return [f"{form.fields[name].label if name in form.fields else 'Input'}: {error}"
            for name, errors in form.errors.items() for error in errors]


@cached_page()
def cost(request: HttpRequest) -> HttpResponse:
    form = CostForm(request.GET or None, models=costed_models(), hardware=costed_hardware())
    groups = []
    if form.is_valid() and form.query:
        query = form.query
        groups = [{"group": group, "chart": cost_chart(group)} for group in cost_groups(
            model=query.model.slug, hardware=query.hardware.slug, gpu_count=query.gpu_count,
            gpu_hour_usd=query.gpu_hour_usd, slo=query.slo)]
    query = form.query if form.is_bound and not form.errors else None
    price_needed = form.price_needed if form.is_bound and not form.errors else ""
    hardware = form.data.get("hardware") or form.fields["hardware"].initial
    return render(request, "recommend/cost.html", {
        "form": form, "query": query, "groups": groups, "price_needed": price_needed,
        "api_params": urlencode(query.link_params) if query else "",
        "offers": gpu_offers(hardware=hardware),
        "error_summary": _error_summary(form) if form.is_bound else [],
    }, status=400 if form.is_bound and form.errors else 200)
