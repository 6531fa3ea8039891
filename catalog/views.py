"""Server-rendered catalog pages. Reads come from catalog.selectors; views only wire requests to them.

Rendered pages are kept in the project's read cache (core.cache) under a fingerprint of the data they
show, so a page is rebuilt only after that data has changed; see docs/site.md for the measurements.
"""
from __future__ import annotations

import csv
import functools
from collections.abc import Callable, Sequence

from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.comparison import compare_matrix, matrix_csv_rows
from catalog.forms import CatalogFilterForm
from catalog.models import Source, Tool
from catalog.selectors import (
    COMPARE_MAX_TOOLS,
    COMPARE_MIN_TOOLS,
    CompareError,
    compare_parse_slugs,
    compare_split_slugs,
    guide_sources,
    tool_compare,
    tool_get,
    tool_list,
)
from core.cache import cached_read, read_cache_seconds

# The guide's eight questions come from the engine comparison seed and the documents it cites
# (keys of fixtures/catalog/sources.yaml).
GUIDE_SOURCE_KEYS = (
    "seed-002-engine-comparison",
    "artificial-analysis-methodology",
    "vllm-docs-quantization",
    "sglang-docs-quantization",
    "tensorrt-llm-docs-quantization",
    "groq-docs-openai",
    "cerebras-docs-openai",
    "together-docs-openai",
    "fireworks-docs-openai",
)

CACHEABLE_STATUSES = (200, 400)


def cached_page(
    *, scopes: tuple[str, ...], vary: Callable[[], Sequence[str]] | None = None
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Serve the page from the shared read cache (core.cache) while the data of `scopes` is unchanged.

    The pages show nothing user-specific, so the URL and the data fingerprint identify the HTML, with what
    `vary()` returns when the page also depends on the serving process (see core.cache.cached_read).
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        # Read-only pages gain nothing from ATOMIC_REQUESTS (PostgreSQL's READ COMMITTED takes a snapshot
        # per statement anyway); without it a cache hit costs one round trip (the fingerprint), not three.
        @transaction.non_atomic_requests
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if read_cache_seconds() <= 0 or request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            rendered: list[HttpResponse] = []

            def build() -> tuple[int, bytes]:
                rendered.append(view(request, *args, **kwargs))
                return rendered[0].status_code, rendered[0].content

            (status, body), _ = cached_read(
                request=request, scopes=scopes, build=build, keep=lambda page: page[0] in CACHEABLE_STATUSES,
                vary=vary() if vary else (),
            )
            if rendered:
                response = rendered[0]
                response["X-Page-Cache"] = "miss"
                return response
            response = HttpResponse(body, status=status)
            response["X-Page-Cache"] = "hit"
            return response

        return wrapper

    return decorate


def _unique_sources(sources) -> list[Source]:
    seen: dict[int, Source] = {}
    for source in sources:
        if source is not None and source.pk not in seen:
            seen[source.pk] = source
    return sorted(seen.values(), key=lambda source: source.title.lower())


@cached_page(scopes=("catalog",))
def catalog_index(request: HttpRequest) -> HttpResponse:
    form = CatalogFilterForm(request.GET)
    tools = list(tool_list(filters=form.filters()))
    return render(
        request,
        "catalog/index.html",
        {
            "form": form,
            "tools": tools,
            "ignored": form.ignored(),
            "is_filtered": form.is_filtered(),
            "page_sources": _unique_sources(tool.rating_source for tool in tools),
        },
    )


@cached_page(scopes=("catalog", "probes"))
def tool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        tool = tool_get(slug=slug)
    except Tool.DoesNotExist:
        raise Http404(f"No tool with the slug {slug!r}.") from None
    caveats = list(tool.caveats.all())
    price_items = list(tool.price_items.all())
    page_sources = _unique_sources(
        [
            *tool.sources.all(),
            tool.rating_source,
            *(price.source for price in price_items),
            *(caveat.source for caveat in caveats),
        ]
    )
    return render(
        request,
        "catalog/tool_detail.html",
        {
            "tool": tool,
            "caveats": caveats,
            "price_items": price_items,
            "page_sources": page_sources,
        },
    )


ONLY_DIFFERENCES = "differences"


def _requested_comparison(request: HttpRequest):
    """(comparison or None, error or None) for the tools named in the query string."""
    requested = request.GET.getlist("tools")
    if not requested:
        return None, None
    try:
        slugs = compare_parse_slugs(requested)
    except CompareError as exc:
        return None, exc
    return tool_compare(slugs=slugs), None


@cached_page(scopes=("catalog",))
def compare(request: HttpRequest) -> HttpResponse:
    comparison, error = _requested_comparison(request)
    matrix = compare_matrix(comparison.tools) if comparison else None
    only_differences = request.GET.get("only") == ONLY_DIFFERENCES
    slugs = [tool.slug for tool in comparison.tools] if comparison else []
    page_sources = (
        _unique_sources(source for tool in comparison.tools for source in tool.sources.all()) if comparison else []
    )
    return render(
        request,
        "catalog/compare.html",
        {
            "comparison": comparison,
            "matrix": matrix.only_differences() if matrix and only_differences else matrix,
            "all_rows": matrix.row_count if matrix else 0,
            "differing_rows": matrix.differing_count if matrix else 0,
            "only_differences": only_differences,
            "tools_param": ",".join(slugs),
            "error": error,
            # "with" pre-ticks tools in the picker without asking for a comparison yet.
            "chosen": set(compare_split_slugs([*request.GET.getlist("tools"), *request.GET.getlist("with")])),
            "picker_tools": Tool.objects.ranked().only("slug", "name", "rating", "kind"),
            "min_tools": COMPARE_MIN_TOOLS,
            "max_tools": COMPARE_MAX_TOOLS,
            "page_sources": page_sources,
        },
        status=400 if error else 200,
    )


def compare_csv(request: HttpRequest) -> HttpResponse:
    """The compare matrix as CSV: one line per aspect, one column per tool, cells as the page words them."""
    comparison, error = _requested_comparison(request)
    if comparison is None:
        message = error.message if error else f"Name {COMPARE_MIN_TOOLS} to {COMPARE_MAX_TOOLS} tools in ?tools=."
        return HttpResponse(f"tools: {message}\n", status=400, content_type="text/plain; charset=utf-8")
    matrix = compare_matrix(comparison.tools)
    if request.GET.get("only") == ONLY_DIFFERENCES:
        matrix = matrix.only_differences()
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = "compare-" + "-".join(tool.slug for tool in comparison.tools) + ".csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerows(matrix_csv_rows(matrix))
    return response


@cached_page(scopes=("catalog",))
def guide(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/guide.html",
        {"page_sources": guide_sources(keys=GUIDE_SOURCE_KEYS)},
    )
