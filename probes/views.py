"""Pages of measured figures. Thin: the read models in probes.selectors do the reading."""
import os

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from catalog.models import LanguageModel
from core.cache import cached_page
from probe_client.compat import CHECKS
from probe_client.config import api_key_env_error
from probes.selectors import dashboards
from probes.selectors.cells import STALE_AFTER_PARALLEL, STALE_AFTER_SINGLE_STREAM
from probes.selectors.dashboards import ENGINES, PROVIDERS
from probes.selectors.language_models import (
    model_comparison_get,
    model_comparisons,
    model_list,
    reported_engine_figures,
)
from probes.selectors.methodology import buffered_share_percent, freshness_report, probe_schedule, probe_workloads
from scoring.figures import PUBLISHER_PRECEDENCE
from scoring.vocabulary import HEADLINE_METRICS, MEASURED_OUTCOMES, OUTPUT_SPEED, PAGE_METRICS, TTFT

# The metrics drawn over time on the dashboards: (summary key, label, unit).
HISTORY_CHARTS = tuple((metric.key, metric.label, metric.unit) for metric in (OUTPUT_SPEED, TTFT))

def _key_variables_set() -> list[str]:
    """The names (never the values) of the set variables that may hold a probe key: /providers/ and /engines/
    say which targets are not configured, so processes with different environments never share a cached copy.
    Read from the environment alone."""
    return sorted(name for name, value in os.environ.items() if value and api_key_env_error(name) is None)


def _dashboard(request: HttpRequest, *, audience: str, template: str) -> HttpResponse:
    dashboard = dashboards.dashboard_for(
        audience=audience,
        requested_workload=request.GET.get("workload"),
        requested_concurrency=request.GET.get("concurrency"),
    )
    context = {
        "dashboard": dashboard,
        "metrics": HEADLINE_METRICS,
        "all_metrics": PAGE_METRICS,
        "outcome_legend": MEASURED_OUTCOMES,
        "comparisons": model_comparisons(providers=audience == PROVIDERS),
        "reported_engine_figures": reported_engine_figures() if audience == ENGINES else [],
        "history_charts": HISTORY_CHARTS,
    }
    return render(request, template, context)


@require_safe
@cached_page(vary=_key_variables_set)
def providers_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=PROVIDERS, template="probes/providers.html")


@require_safe
@cached_page(vary=_key_variables_set)
def engines_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=ENGINES, template="probes/engines.html")


@require_safe
@cached_page()
def model_index(request: HttpRequest) -> HttpResponse:
    return render(request, "probes/model_list.html", {"rows": model_list()})


@require_safe
@cached_page()
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        comparison = model_comparison_get(slug=slug)
    except LanguageModel.DoesNotExist:
        raise Http404(f"No model with the slug {slug!r}.") from None
    return render(request, "probes/model_detail.html", {"comparison": comparison, "comparison_list": [comparison]})


@require_safe
@cached_page(vary=_key_variables_set)
def methodology(request: HttpRequest) -> HttpResponse:
    context = {
        "freshness": freshness_report(),
        "schedule": probe_schedule(),
        "workloads": probe_workloads(),
        "percentile_window_days": settings.PROBE_SUMMARY_WINDOW_DAYS,
        "buffered_share_percent": buffered_share_percent(),
        "outcome_legend": MEASURED_OUTCOMES,
        "checks": CHECKS.values(),
        "publisher_precedence": PUBLISHER_PRECEDENCE,
        "stale_single_hours": int(STALE_AFTER_SINGLE_STREAM.total_seconds() // 3600),
        "stale_parallel_hours": int(STALE_AFTER_PARALLEL.total_seconds() // 3600),
    }
    return render(request, "probes/methodology.html", context)
