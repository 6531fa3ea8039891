"""Server-rendered catalog pages. Reads come from catalog.selectors; views only wire requests to them.

Rendered pages are cached under the catalog's fingerprint (one aggregate query, reused for up to a
second per process), so a page is rebuilt only after the data it shows has changed; see docs/site.md
for the measurements behind this.
"""
from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from catalog.forms import CatalogFilterForm
from catalog.models import Source, Tool
from catalog.selectors import (
    COMPARE_MAX_TOOLS,
    COMPARE_MIN_TOOLS,
    CompareError,
    catalog_fingerprint_recent,
    compare_parse_slugs,
    compare_split_slugs,
    tool_compare,
    tool_get,
    tool_list,
)
from probes.selectors.dashboards import tool_measurements

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

logger = logging.getLogger(__name__)

CACHEABLE_STATUSES = (200, 400)


def _page_cache_seconds() -> int:
    return getattr(settings, "CATALOG_PAGE_CACHE_SECONDS", 300)


def cached_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Serve the page from the cache while the catalog fingerprint is unchanged.

    The pages show nothing user-specific, so the full path and the fingerprint identify the HTML.
    A cache outage only costs speed: the page is rendered as if nothing were cached.
    """

    # Read-only pages gain nothing from ATOMIC_REQUESTS (PostgreSQL's READ COMMITTED takes a snapshot per
    # statement anyway); without it a cache hit costs one round trip instead of three.
    @transaction.non_atomic_requests
    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        timeout = _page_cache_seconds()
        if timeout <= 0 or request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        path = hashlib.blake2b(request.get_full_path().encode(), digest_size=16).hexdigest()
        key = f"catalog-page:{catalog_fingerprint_recent()}:{path}"
        try:
            cached = cache.get(key)
        except Exception:  # noqa: BLE001 - any cache backend failure degrades to rendering
            logger.warning("page cache unavailable; rendering %s", request.path, exc_info=True)
            cached = None
        if cached is not None:
            status, body = cached
            response = HttpResponse(body, status=status)
            response["X-Page-Cache"] = "hit"
            return response
        response = view(request, *args, **kwargs)
        if response.status_code in CACHEABLE_STATUSES:
            try:
                cache.set(key, (response.status_code, response.content), timeout)
            except Exception:  # noqa: BLE001
                logger.warning("page cache unavailable; not storing %s", request.path, exc_info=True)
        response["X-Page-Cache"] = "miss"
        return response

    return wrapper


def _unique_sources(sources) -> list[Source]:
    seen: dict[int, Source] = {}
    for source in sources:
        if source is not None and source.pk not in seen:
            seen[source.pk] = source
    return sorted(seen.values(), key=lambda source: source.title.lower())


@cached_page
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


@cached_page
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
            "tool_measurements": tool_measurements(tool=tool),
        },
    )


@cached_page
def compare(request: HttpRequest) -> HttpResponse:
    requested = request.GET.getlist("tools")
    comparison = None
    error = None
    status = 200
    if requested:
        try:
            slugs = compare_parse_slugs(requested)
        except CompareError as exc:
            error = exc
            status = 400
        else:
            comparison = tool_compare(slugs=slugs)
    page_sources = (
        _unique_sources(source for tool in comparison.tools for source in tool.sources.all()) if comparison else []
    )
    return render(
        request,
        "catalog/compare.html",
        {
            "comparison": comparison,
            "error": error,
            # "with" pre-ticks tools in the picker without asking for a comparison yet.
            "chosen": set(compare_split_slugs([*requested, *request.GET.getlist("with")])),
            "picker_tools": Tool.objects.ranked().only("slug", "name", "rating", "kind"),
            "min_tools": COMPARE_MIN_TOOLS,
            "max_tools": COMPARE_MAX_TOOLS,
            "page_sources": page_sources,
        },
        status=status,
    )


@cached_page
def guide(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "catalog/guide.html",
        {"page_sources": list(Source.objects.filter(key__in=GUIDE_SOURCE_KEYS))},
    )
