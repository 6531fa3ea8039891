"""Pages of measured figures. Thin: the read models in probes.selectors do the reading."""
import os
from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from catalog.models import LanguageModel
from catalog.views import cached_page, render_piece, request_location
from core.cache import Fingerprints, every_owner_read, per_group_read, read_fingerprints
from probes import presenters
from probes.client.config import api_key_env_error
from probes.metrics import HEADLINE_METRICS, OUTPUT_SPEED, PAGE_METRICS, TTFT
from probes.models import ProbeTarget
from probes.selectors import dashboards
from probes.selectors.dashboards import ENGINES, PROVIDERS
from probes.selectors.methodology import buffered_stream_rule, freshness_report, probe_schedule, probe_workloads
from probes.selectors.models import (
    model_comparison_get,
    model_comparisons,
    model_list,
    model_members,
    reported_engine_figures,
)

# The metrics drawn over time on the dashboards: (summary key, label, unit).
HISTORY_CHARTS = tuple((metric.key, metric.label, metric.unit) for metric in (OUTPUT_SPEED, TTFT))

# Pages that show catalog facts beside measured summaries are rebuilt when either changes.
PAGE_SCOPES = ("catalog", "probes")


def _key_variables_set() -> list[str]:
    """The names (never the values) of the set variables that may hold a probe key: /providers/ and /engines/
    say which targets are not configured, so processes with different environments never share a cached copy.
    Read from the environment alone, so a cached page still costs one query."""
    return sorted(name for name, value in os.environ.items() if value and api_key_env_error(name) is None)


def _admin_targets_url() -> str | None:
    try:
        return reverse("admin:probes_probetarget_changelist")
    except NoReverseMatch:
        return None


@dataclass(frozen=True)
class ModelRef:
    slug: str
    name: str


@dataclass(frozen=True)
class ModelSection:
    """One model's comparison on the providers or engines page, rendered: what the page's navigation and
    sources need of it, and its section."""

    model: ModelRef
    cited: list[tuple[str, str]]
    html: str


def model_sections(
    *, providers: bool, members: list[tuple[str, list[int]]], fingerprints: Fingerprints | None
) -> list[ModelSection]:
    """The comparison of every model the providers (or the other tools) serve, each rendered and cached
    under the rows of the tools in it: an edit to one tool renders the models it serves again, not the page.
    `members`: (model slug, ids of the tools in its comparison) per model, from dashboards.audience_members;
    `fingerprints`: core.cache.read_fingerprints covering them."""
    audience = PROVIDERS if providers else ENGINES

    def build(slugs: list[str]) -> dict[str, ModelSection]:
        return {
            comparison.model.slug: ModelSection(
                model=ModelRef(comparison.model.slug, comparison.model.name),
                cited=comparison.cited,
                html=render_to_string("probes/_model_comparison.html", {"comparison": comparison}),
            )
            for comparison in model_comparisons(slugs=slugs, providers=providers)
        }

    sections = per_group_read(
        kind=f"model-section-{audience}", scopes=PAGE_SCOPES,
        groups=dict(members),
        build=build, fingerprints=fingerprints,
    )
    return [ModelSection(section.model, section.cited, mark_safe(section.html)) for section in sections.values()]


@dataclass(frozen=True)
class DashboardSection:
    """The measured part of the providers or engines page (notices, the table of figures, the compatibility
    matrix), rendered, and what the page's sources need of it."""

    html: str
    shows_prices: bool


def dashboard_section(
    request: HttpRequest, *, audience: str, tool_ids: list[int], fingerprints: Fingerprints | None
) -> DashboardSection:
    """The dashboard for the workload and concurrency asked for, cached under the rows of every tool of the
    audience (`tool_ids`) and the shared rows: an edit to a tool of the other audience leaves it cached."""
    requested = (request.GET.get("workload"), request.GET.get("concurrency"))

    def build(groups: list[tuple]) -> dict[tuple, DashboardSection]:
        dashboard = dashboards.dashboard_for(
            audience=audience, requested_workload=requested[0], requested_concurrency=requested[1]
        )
        context = {
            "dashboard": dashboard,
            "metrics": HEADLINE_METRICS,
            "all_metrics": PAGE_METRICS,
            "outcome_legend": presenters.outcome_legend(),
            "history_charts": HISTORY_CHARTS,
        }
        return {requested: DashboardSection(render_to_string("probes/_dashboard.html", context),
                                            dashboard.shows_prices)}

    # Which targets count as configured depends on the serving process's environment, as for the page.
    section = per_group_read(
        kind=f"dashboard-{audience}", scopes=PAGE_SCOPES, groups={requested: tool_ids}, build=build,
        vary=_key_variables_set(), fingerprints=fingerprints,
    )[requested]
    return DashboardSection(mark_safe(section.html), section.shows_prices)


def audience_members(
    audience: str, fingerprints: Fingerprints | None
) -> tuple[list[int], list[tuple[str, list[int]]]]:
    """dashboards.audience_members, cached under every tool's rows: which tools and models a dashboard shows
    changes only with them."""
    return every_owner_read(kind=f"audience-members-{audience}", fingerprints=fingerprints,
                            build=lambda: dashboards.audience_members(audience=audience))


def every_model_members(fingerprints: Fingerprints | None) -> list[tuple[str, list[int]]]:
    """probes.selectors.models.model_members of every model, cached under every tool's rows: which tools
    offer a model changes only with them."""
    return every_owner_read(kind="model-members", fingerprints=fingerprints, build=model_members)


def _dashboard(request: HttpRequest, *, audience: str, template: str) -> HttpResponse:
    # One query gives the fingerprints of every tool: of the dashboard's tools, of every model section's,
    # and of the whole set, under which who those tools are is cached.
    fingerprints = read_fingerprints(PAGE_SCOPES)
    tool_ids, members = audience_members(audience, fingerprints)
    context = {
        "dashboard": dashboard_section(request, audience=audience, tool_ids=tool_ids, fingerprints=fingerprints),
        "comparisons": model_sections(providers=audience == PROVIDERS, members=members, fingerprints=fingerprints),
        "reported_engine_figures": reported_engine_figures() if audience == ENGINES else [],
    }
    return render(request, template, context)


@require_safe
@cached_page(scopes=PAGE_SCOPES, vary=_key_variables_set)
def providers_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=PROVIDERS, template="probes/providers.html")


@require_safe
@cached_page(scopes=PAGE_SCOPES, vary=_key_variables_set)
def engines_dashboard(request: HttpRequest) -> HttpResponse:
    return _dashboard(request, audience=ENGINES, template="probes/engines.html")


@require_safe
@cached_page(scopes=PAGE_SCOPES)
def model_index(request: HttpRequest) -> HttpResponse:
    # Each model's row shows the tools offering it alone, so it is cached under their rows: an edit to one
    # tool renders the rows of the models it offers again.
    fingerprints = read_fingerprints(PAGE_SCOPES)
    members = every_model_members(fingerprints)

    def build(slugs: list[str]) -> dict[str, str]:
        return {row.model.slug: render_piece("probes/_model_list_row.html", {"row": row})
                for row in model_list(slugs=slugs)}

    rows = per_group_read(kind="model-list-row", scopes=PAGE_SCOPES, groups=dict(members), build=build,
                          fingerprints=fingerprints)
    return render(request, "probes/model_list.html",
                  {"rows": [mark_safe(rows[slug]) for slug, _ in members if slug in rows]})


def _model_page(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        comparison = model_comparison_get(slug=slug)
    except LanguageModel.DoesNotExist:
        raise Http404(f"No model with the slug {slug!r}.") from None
    return render(request, "probes/model_detail.html", {"comparison": comparison, "comparison_list": [comparison]})


@require_safe
@cached_page(scopes=PAGE_SCOPES)
def model_detail(request: HttpRequest, slug: str) -> HttpResponse:
    # A model's page shows the rows of the tools offering it and shared ones (the model, sources, hardware)
    # only, so after an edit to another tool it comes from the cache instead of being rendered again.
    fingerprints = read_fingerprints(PAGE_SCOPES)
    members = dict(every_model_members(fingerprints))
    if slug not in members:
        raise Http404(f"No model with the slug {slug!r}.")
    pages = per_group_read(
        kind="model-page", scopes=PAGE_SCOPES, groups={slug: members[slug]},
        build=lambda missing: {slug: _model_page(request, slug).content}, vary=request_location(request),
        fingerprints=fingerprints,
    )
    return HttpResponse(pages[slug])


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
        "targets": list(ProbeTarget.objects.select_related("tool").order_by("tool__kind", "name")),
        "admin_targets_url": _admin_targets_url(),
    }
    return render(request, "probes/methodology.html", context)
