"""Server-rendered catalog pages. Reads come from catalog.selectors; views only wire requests to them.

Rendered pages are kept in the project's read cache (core.cache) under a fingerprint of the data they
show, so a page is rebuilt only after that data has changed; see docs/site.md for the measurements.
"""
from __future__ import annotations

import csv
import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from catalog.comparison import ComparedTool, compare_matrix, compared_tools_by_id, matrix_csv_rows
from catalog.forms import CatalogFilterForm
from catalog.models import Source, Tool
from catalog.selectors import (
    COMPARE_MAX_TOOLS,
    COMPARE_MIN_TOOLS,
    CompareError,
    compare_parse_tools,
    compare_split_slugs,
    guide_sources,
    tool_get,
    tool_ids,
    tool_list_order_cached,
    tool_rating_sources,
    tool_rows,
    tool_slug_ids,
)
from catalog.templatetags.catalog_format import format_rating
from core.cache import (
    Fingerprints,
    cached_read,
    every_owner_read,
    per_group_read,
    per_owner_read,
    read_cache_seconds,
    read_fingerprints,
    shared_read,
)

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


def source_list_html(sources: Iterable[Source | None]) -> str:
    """The page's list of `sources` (each once, by title), rendered as {% include %} would, final newline
    included: for a page whose sources come from a cached piece."""
    return render_to_string("includes/_source_list.html", {"sources": _unique_sources(sources)})


def render_piece(template: str, context: dict) -> SafeString:
    """A piece of a page rendered on its own, to be cached and put in place by the page's template. A
    piece's template file ends with a newline, as every file does; the piece does not."""
    return mark_safe(render_to_string(template, context).removesuffix("\n"))




def catalog_rows(ids: list[int], fingerprints: Fingerprints | None) -> dict[int, SafeString]:
    """The catalog table's row of each tool of `ids`, rendered; each cached under that tool's own rows."""

    def build(missing: list[int]) -> dict[int, str]:
        return {tool.pk: render_piece("catalog/_tool_row.html", {"tool": tool}) for tool in tool_rows(ids=missing)}

    return per_owner_read(kind="catalog-row", scopes=CATALOG_SCOPES, owners=ids, build=build,
                          fingerprints=fingerprints)


def catalog_sources(order: list[int], fingerprints: Fingerprints | None) -> SafeString:
    """The rendered list of the sources of the ratings of the tools of `order`, cached per set shown under
    every tool's rows."""
    return mark_safe(every_owner_read(kind="catalog-sources", fingerprints=fingerprints,
                                      vary=[",".join(map(str, sorted(order)))],
                                      build=lambda: source_list_html(tool_rating_sources(ids=order))))


@dataclass(frozen=True)
class CatalogFilters:
    filters: dict
    ignored: list
    is_filtered: bool
    controls: str


def catalog_filters(request: HttpRequest, fingerprints: Fingerprints | None) -> CatalogFilters:
    """The filters asked for, validated, and the rendered controls: they depend on the values of the form's
    fields in the query and on shared rows (the hardware, licences and features offered), so they are cached
    per set of values under the shared rows' fingerprint."""
    values = [repr((name, request.GET.getlist(name))) for name in CatalogFilterForm.base_fields]

    def build() -> CatalogFilters:
        form = CatalogFilterForm(request.GET)
        return CatalogFilters(form.filters(), form.ignored(), form.is_filtered(),
                              render_piece("catalog/_filter_controls.html", {"form": form}))

    return shared_read(kind="catalog-filters", fingerprints=fingerprints, key=values, build=build)


CATALOG_SCOPES = ("catalog",)


@cached_page(scopes=CATALOG_SCOPES)
def catalog_index(request: HttpRequest) -> HttpResponse:
    # Which tools, in which order, depends on the whole catalog and is cached under every tool's rows; what
    # each row shows depends on its tool alone and comes from the per-tool cache. One query gives the
    # fingerprints of every tool and of the shared rows for both.
    fingerprints = read_fingerprints(CATALOG_SCOPES)
    chosen = catalog_filters(request, fingerprints)
    order = tool_list_order_cached(filters=chosen.filters, fingerprints=fingerprints)
    rows = catalog_rows(order, fingerprints)
    shown = [rows[tool_id] for tool_id in order if tool_id in rows]
    return render(
        request,
        "catalog/index.html",
        {
            "filter_controls": mark_safe(chosen.controls),
            # Joined here: a template loop over hundreds of rows costs more than the rest of the page.
            "rows_html": mark_safe("".join(f"\n        {row}\n        " for row in shown)),
            "row_count": len(shown),
            "ignored": chosen.ignored,
            "is_filtered": chosen.is_filtered,
            "page_sources_html": catalog_sources(order, fingerprints),
        },
    )


TOOL_PAGE_SCOPES = ("catalog", "probes")


def _tool_page(request: HttpRequest, slug: str) -> HttpResponse:
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


def request_location(request: HttpRequest) -> list[str]:
    # The page reads the path (for the navigation), never the query string.
    return [request.scheme, request.get_host(), request.path]


@cached_page(scopes=TOOL_PAGE_SCOPES)
def tool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    # A tool's page shows that tool's rows and shared ones (sources, hardware, models) only, so after an
    # edit to another tool it comes from the per-tool cache instead of being rendered again.
    tool_id = tool_ids(slugs=[slug]).get(slug)
    if tool_id is None:
        raise Http404(f"No tool with the slug {slug!r}.")
    pages = per_owner_read(
        kind="tool-page", scopes=TOOL_PAGE_SCOPES, owners=[tool_id],
        build=lambda missing: {tool_id: _tool_page(request, slug).content}, vary=request_location(request),
    )
    return HttpResponse(pages[tool_id]) if tool_id in pages else _tool_page(request, slug)


ONLY_DIFFERENCES = "differences"


# One tool's checkbox in the compare page's picker: (slug, the HTML before and after the " checked" that
# depends on the request). Plain tuples of strings, so a process shares its copy between requests.
PickerItem = tuple[str, str, str]


def compare_picker(fingerprints: Fingerprints | None) -> tuple[PickerItem, ...]:
    """Every tool's checkbox, best rated first: one piece for the whole catalog, cached under every tool's rows."""

    def build() -> tuple[PickerItem, ...]:
        return tuple(
            (
                tool.slug,
                format_html('<label class="picker-item"><input type="checkbox" name="tools" value="{}"', tool.slug),
                format_html("> {}{}</label>", tool.name, format_html(' <span class="muted">{}</span>',
                                                                    format_rating(tool.rating))
                            if tool.rating is not None else ""),
            )
            for tool in Tool.objects.ranked().only("slug", "name", "rating")
        )

    return every_owner_read(kind="compare-picker", fingerprints=fingerprints, build=build)


def picker_html(items: tuple[PickerItem, ...], chosen: set[str]) -> SafeString:
    """The picker's checkboxes, those of `chosen` ticked, each on its own line at the indentation of the page's
    picker grid (a template loop over a catalog of hundreds of tools costs more than the rest of the page)."""
    indent = "\n        "
    return mark_safe("".join(
        f"{indent}{opening}{' checked' if slug in chosen else ''}{closing}{indent}" for slug, opening, closing in items
    ))


def every_tool_id(fingerprints: Fingerprints | None) -> dict[str, int]:
    """{slug: id} of every tool, one piece cached under every tool's rows."""
    return every_owner_read(kind="tool-slug-ids", fingerprints=fingerprints, build=tool_slug_ids)


def _requested_ids(
    request: HttpRequest, fingerprints: Fingerprints | None
) -> tuple[dict[str, int] | None, CompareError | None]:
    """({slug: tool id} in the order asked, or None; error or None) for the tools named in the query string."""
    requested = request.GET.getlist("tools")
    if not requested:
        return None, None
    # Without fingerprints nothing is cached: the slugs asked are looked up alone.
    every_tool = every_tool_id(fingerprints) if fingerprints else None
    try:
        return compare_parse_tools(requested, every_tool=every_tool), None
    except CompareError as exc:
        return None, exc


def _requested_comparison(request: HttpRequest) -> tuple[dict[int, ComparedTool] | None, CompareError | None]:
    """({tool id: compared tool} in the order asked, or None; error or None) for the tools named in the
    query string."""
    ids, error = _requested_ids(request, None)
    if ids is None:
        return None, error
    return compared_tools_by_id(ids=ids), None


@dataclass(frozen=True)
class ComparedName:
    slug: str
    name: str


@dataclass(frozen=True)
class ComparisonTable:
    """The compare page's matrix for one set of tools, rendered, its row counts, and the rest of what the page
    shows of the set (the tools' names, the rendered list of their sources)."""

    html: str
    all_rows: int
    differing_rows: int
    tools: tuple[ComparedName, ...]
    sources_html: str


def comparison_table(
    ids: dict[str, int], *, only_differences: bool, fingerprints: Fingerprints | None
) -> ComparisonTable | None:
    """Which rows the matrix has, in which order, and where the tools differ depend on the set compared, so
    the rendered matrix is cached per set (in the page's order) under the rows of exactly those tools and
    the shared rows: an edit to a tool outside the set leaves it cached. None when none of the tools is left."""
    group = tuple(ids.values())

    def build(groups: list[tuple[int, ...]]) -> dict[tuple[int, ...], ComparisonTable]:
        tools = list(compared_tools_by_id(ids=ids, fingerprints=fingerprints).values())
        if not tools:
            return {}
        matrix = compare_matrix(tools)
        context = {
            "tools": tools,
            "matrix": matrix.only_differences() if only_differences else matrix,
            "tools_param": ",".join(tool.slug for tool in tools),
        }
        return {group: ComparisonTable(
            render_piece("catalog/_compare_matrix.html", context), matrix.row_count, matrix.differing_count,
            tuple(ComparedName(tool.slug, tool.name) for tool in tools),
            source_list_html(source for tool in tools for source in tool.sources),
        )}

    table = per_group_read(
        kind="compare-table", scopes=CATALOG_SCOPES, groups={group: list(group)}, build=build,
        vary=[ONLY_DIFFERENCES if only_differences else "all rows"], fingerprints=fingerprints,
    ).get(group)
    if table is None:
        return None
    return ComparisonTable(mark_safe(table.html), table.all_rows, table.differing_rows, table.tools,
                           mark_safe(table.sources_html))


@cached_page(scopes=CATALOG_SCOPES)
def compare(request: HttpRequest) -> HttpResponse:
    fingerprints = read_fingerprints(CATALOG_SCOPES)
    ids, error = _requested_ids(request, fingerprints)
    only_differences = request.GET.get("only") == ONLY_DIFFERENCES
    table = comparison_table(ids, only_differences=only_differences, fingerprints=fingerprints) if ids else None
    tools = list(table.tools) if table else None
    return render(
        request,
        "catalog/compare.html",
        {
            "tools": tools,
            "comparison_table": table.html if table else "",
            "all_rows": table.all_rows if table else 0,
            "differing_rows": table.differing_rows if table else 0,
            "only_differences": only_differences,
            "tools_param": ",".join(tool.slug for tool in tools or []),
            "error": error,
            "picker": picker_html(
                compare_picker(fingerprints),
                # "with" pre-ticks tools in the picker without asking for a comparison yet.
                set(compare_split_slugs([*request.GET.getlist("tools"), *request.GET.getlist("with")])),
            ),
            "min_tools": COMPARE_MIN_TOOLS,
            "max_tools": COMPARE_MAX_TOOLS,
            "page_sources_html": table.sources_html if table else "",
        },
        status=400 if error else 200,
    )


def compare_csv(request: HttpRequest) -> HttpResponse:
    """The compare matrix as CSV: one line per aspect, one column per tool, cells as the page words them."""
    compared, error = _requested_comparison(request)
    if compared is None:
        message = error.message if error else f"Name {COMPARE_MIN_TOOLS} to {COMPARE_MAX_TOOLS} tools in ?tools=."
        return HttpResponse(f"tools: {message}\n", status=400, content_type="text/plain; charset=utf-8")
    tools = list(compared.values())
    matrix = compare_matrix(tools)
    if request.GET.get("only") == ONLY_DIFFERENCES:
        matrix = matrix.only_differences()
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = "compare-" + "-".join(tool.slug for tool in tools) + ".csv"
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
