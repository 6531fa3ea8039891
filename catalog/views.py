"""Server-rendered catalog pages. Reads come from catalog.selectors; views only wire requests to them.
Each page is kept in the page cache (core.cache) until the data generation moves."""
from __future__ import annotations

import csv
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.comparison import compare_matrix, matrix_csv_rows
from catalog.forms import CatalogFilterForm, ChangeFilterForm
from catalog.models import Tool
from catalog.selectors import (
    COMPARE_MAX_TOOLS,
    COMPARE_MIN_TOOLS,
    CHANGE_LIMIT,
    CompareError,
    change_list,
    compare_parse_slugs,
    compare_split_slugs,
    guide_sources,
    sources_by_title,
    catalog_search,
    tool_compare,
    tool_get,
    tool_list,
    with_match_reasons,
)
from core.cache import cached_page

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

@cached_page()
def catalog_index(request: HttpRequest) -> HttpResponse:
    form = CatalogFilterForm(request.GET)
    filters = form.filters()
    query = (filters.get("q") or "").strip()
    tools = with_match_reasons(tool_list(filters=filters), query)
    return render(
        request,
        "catalog/index.html",
        {
            "form": form,
            "tools": tools,
            "query": query,
            "found": catalog_search(query=query) if query else {},
            "ignored": form.ignored(),
            "is_filtered": form.is_filtered(),
            "chosen_filters": sum(name != "q" for name in form.filters()),
            "page_sources": sources_by_title(tool.rating_source for tool in tools),
        },
    )


@cached_page()
def tool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        tool = tool_get(slug=slug)
    except Tool.DoesNotExist:
        raise Http404(f"No tool with the slug {slug!r}.") from None
    caveats = list(tool.caveats.all())
    price_items = list(tool.price_items.all())
    page_sources = sources_by_title(
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
    """(the tools compared or None, error or None) for the tools named in the query string."""
    requested = request.GET.getlist("tools")
    if not requested:
        return None, None
    try:
        slugs = compare_parse_slugs(requested)
    except CompareError as exc:
        return None, exc
    return tool_compare(slugs=slugs), None


@cached_page()
def compare(request: HttpRequest) -> HttpResponse:
    compared, error = _requested_comparison(request)
    matrix = compare_matrix(compared) if compared else None
    only_differences = request.GET.get("only") == ONLY_DIFFERENCES
    slugs = [tool.slug for tool in compared or []]
    page_sources = sources_by_title(source for tool in compared or [] for source in tool.sources.all())
    return render(
        request,
        "catalog/compare.html",
        {
            "comparison": matrix,
            "matrix": matrix.only_differences() if matrix and only_differences else matrix,
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
    compared, error = _requested_comparison(request)
    if compared is None:
        message = error.message if error else f"Name {COMPARE_MIN_TOOLS} to {COMPARE_MAX_TOOLS} tools in ?tools=."
        return HttpResponse(f"tools: {message}\n", status=400, content_type="text/plain; charset=utf-8")
    matrix = compare_matrix(compared)
    if request.GET.get("only") == ONLY_DIFFERENCES:
        matrix = matrix.only_differences()
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = "compare-" + "-".join(tool.slug for tool in compared) + ".csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerows(matrix_csv_rows(matrix))
    return response


@cached_page()
def guide(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/guide.html",
        {"page_sources": guide_sources(keys=GUIDE_SOURCE_KEYS)},
    )


@cached_page()
def changes(request: HttpRequest) -> HttpResponse:
    form = ChangeFilterForm(request.GET)
    filters = form.filters()
    return render(
        request,
        "catalog/changes.html",
        {
            "form": form,
            "filters": filters,
            "ignored": form.ignored(),
            "changes": list(change_list(filters=filters)),
            "limit": CHANGE_LIMIT,
        },
    )
