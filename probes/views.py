"""Pages of measured figures. Thin: the read models in probes.selectors do the reading."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_safe

from probes import presenters
from probes.selectors import dashboards
from probes.selectors.dashboards import ENGINES, PROVIDERS
from probes.selectors.methodology import buffered_stream_rule, freshness_report, probe_schedule, probe_workloads


def _admin_targets_url() -> str | None:
    try:
        return reverse("admin:probes_probetarget_changelist")
    except NoReverseMatch:
        return None


def _dashboard(request: HttpRequest, *, audience: str, template: str) -> HttpResponse:
    dashboard = dashboards.dashboard_for(
        audience=audience,
        requested_workload=request.GET.get("workload"),
        requested_concurrency=request.GET.get("concurrency"),
    )
    context = {
        "dashboard": dashboard,
        "metrics": presenters.HEADLINE_METRICS,
        "all_metrics": presenters.METRICS,
        "outcome_legend": presenters.outcome_legend(),
        "admin_targets_url": _admin_targets_url(),
    }
    return render(request, template, context)


@require_safe
def providers_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=PROVIDERS, template="probes/providers.html")


@require_safe
def engines_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=ENGINES, template="probes/engines.html")


@require_safe
def methodology(request: HttpRequest) -> HttpResponse:
    context = {
        "freshness": freshness_report(),
        "schedule": probe_schedule(),
        "workloads": probe_workloads(),
        "percentile_window_days": presenters.percentile_window_days(),
        "buffered_rule": buffered_stream_rule(),
        "outcome_legend": presenters.outcome_legend(),
        "checks": presenters.compat_check_descriptions(),
        "stale_single_hours": int(presenters.STALE_AFTER_SINGLE_STREAM.total_seconds() // 3600),
        "stale_parallel_hours": int(presenters.STALE_AFTER_PARALLEL.total_seconds() // 3600),
    }
    return render(request, "probes/methodology.html", context)
