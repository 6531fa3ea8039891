"""Reads of the catalog shared by the site pages and the REST API.

Every function returns rows with everything its callers show already fetched, so a page or an
API response costs the same number of queries whether the catalog holds five tools or five hundred.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import BooleanField, Case, Count, DecimalField, Exists, ExpressionWrapper, F, FilteredRelation
from django.db.models import IntegerField, Model
from django.db.models import OuterRef, Prefetch, Q
from django.db.models import QuerySet, Subquery, Value, When
from django.db.models.functions import Coalesce, Lower

from catalog.models import (
    ABSENCE_ASPECTS,
    Change,
    DocumentedAbsence,
    ApiSurface,
    Caveat,
    Feature,
    HardwareSpec,
    HardwareSupport,
    HardwareTarget,
    LanguageModel,
    ModelOffering,
    PriceItem,
    QuantFormat,
    ReportedFigure,
    Source,
    Tool,
    ToolApiSurface,
    ToolFeature,
    ToolQuantFormat,
    UseCase,
    UseCaseRecommendation,
)
from catalog import search
from core.cache import PerGeneration
from core.decimals import decimal_text
from scoring.vocabulary import BLEND_INPUT_WEIGHT, BLEND_OUTPUT_WEIGHT, COMPAT_CHECK_CHOICES

CHECK_LABELS = dict(COMPAT_CHECK_CHOICES)

COMPARE_MIN_TOOLS = 2
COMPARE_MAX_TOOLS = 4

TOOL_SORTS = ("rating", "name", "price")
# Headline prices are compared on one model that every hosted provider in the catalog prices.
REFERENCE_MODEL_SLUG = "gpt-oss-120b"
BLENDED_QUANTUM = Decimal("0.0001")
# A documented check counts for search where the tool does what it names.
SEARCHED_CHECK_OUTCOMES = ("supported", "partial")


def _accelerator_text(hardware: HardwareTarget) -> str:
    """A hardware target as search reads it: a CPU architecture without its vendors (x86 CPUs are "Intel, AMD",
    which says nothing about running on AMD or Intel accelerators)."""
    vendor = "" if hardware.category == HardwareTarget.Category.CPU else hardware.vendor
    return f"{hardware.name} {hardware.slug} {vendor}"


def _tool_documents() -> tuple[search.Document, ...]:
    """What catalog.search reads of every tool: its names; the hardware it runs on; what it lists (models it
    serves, priced items, formats, features, API surfaces, the request parameters it documents as working);
    its prose."""
    tools = Tool.objects.prefetch_related(
        Prefetch("hardware_support", queryset=HardwareSupport.objects.select_related("hardware")),
        Prefetch("quant_format_support", queryset=ToolQuantFormat.objects.select_related("quant_format")),
        Prefetch("feature_support", queryset=ToolFeature.objects.select_related("feature")),
        Prefetch("api_surface_support", queryset=ToolApiSurface.objects.select_related("api_surface", "source")),
        Prefetch("model_offerings", queryset=ModelOffering.objects.select_related("model")),
        Prefetch("price_items", queryset=PriceItem.objects.order_by("position", "pk")),
    )
    documents = []
    for tool in tools:
        hardware = list(tool.hardware_support.all())
        formats = list(tool.quant_format_support.all())
        features = list(tool.feature_support.all())
        surfaces = list(tool.api_surface_support.all())
        checks = [entry.check for surface in surfaces for entry in surface.documented_checks()
                  if entry.outcome in SEARCHED_CHECK_OUTCOMES]
        documents.append(search.Document.build(
            tool.pk,
            name=[tool.name, tool.slug, tool.family],
            accelerators=[(f"runs on {link.hardware.name}", _accelerator_text(link.hardware)) for link in hardware],
            listed=[
                *((f"serves {offer.model.name}", f"{offer.model.name} {offer.model.slug} {offer.api_model_id}")
                  for offer in tool.model_offerings.all()),
                *((f"prices {price.item}", price.item) for price in tool.price_items.all()),
                *((f"loads {link.quant_format.name}", f"{link.quant_format.name} {link.quant_format.slug}")
                  for link in formats),
                *((f"has {link.feature.name}", f"{link.feature.name} {link.feature.slug}") for link in features),
                *((f"speaks {link.api_surface.name}", link.api_surface.name) for link in surfaces),
                *((f"documents {check} as working", f"{check} {CHECK_LABELS.get(check, '')}") for check in checks),
                (tool.get_kind_display(), tool.get_kind_display()),
            ],
            prose=[tool.summary, tool.verdict, tool.ideal_for,
                   *((f"notes on {link.hardware.name}", link.notes) for link in hardware),
                   *((f"notes on {link.quant_format.name}", link.notes) for link in formats),
                   *((f"notes on {link.feature.name}", link.notes) for link in features)],
        ))
    return tuple(documents)


def _model_documents() -> tuple[search.Document, ...]:
    return tuple(
        search.Document.build(model.pk, name=[model.name, model.slug], listed=[(f"published by {model.publisher}",
                              model.publisher)], prose=[model.summary])
        for model in LanguageModel.objects.all()
    )


def _device_documents() -> tuple[search.Document, ...]:
    return tuple(
        search.Document.build(spec.pk, name=[spec.name, spec.slug], accelerators=[
            (f"a {spec.hardware_target.name}", _accelerator_text(spec.hardware_target))
        ] if spec.hardware_target else [(spec.vendor, spec.vendor)])
        for spec in HardwareSpec.objects.select_related("hardware_target")
    )


# The documents of each kind of thing searched, built once per data generation.
search_documents = PerGeneration(lambda: {"tools": _tool_documents(), "models": _model_documents(),
                                          "devices": _device_documents()}).get


def tool_search(*, query: str) -> dict[int, search.Match]:
    """{tool pk: Match} of the tools matching `query`, best first."""
    return search.rank(search_documents()["tools"], query)


def with_match_reasons(tools: Iterable[Tool], query: str) -> list[Tool]:
    """The tools, each with `match_reasons`: where `query` was found in it (empty without a query)."""
    matches = tool_search(query=query) if query.strip() else {}
    tools = list(tools)
    for tool in tools:
        match = matches.get(tool.pk)
        tool.match_reasons = list(match.reasons) if match else []
    return tools


def catalog_search(*, query: str) -> dict[str, list[tuple[Any, search.Match]]]:
    """The models and hardware devices matching `query`, best first, each with its Match (tools: tool_list's
    `q`). Models come with the hosted providers serving them (`providers`) and the other tools running them
    (`runners`), devices with their hardware family."""
    documents = search_documents()
    found: dict[str, list[tuple[Any, search.Match]]] = {}
    for kind, queryset in (
        ("models", LanguageModel.objects.prefetch_related(
            Prefetch("offerings", queryset=ModelOffering.objects.select_related("tool").order_by("tool__name")))),
        ("devices", HardwareSpec.objects.select_related("hardware_target")),
    ):
        matches = search.rank(documents[kind], query)
        rows = queryset.in_bulk(list(matches)) if matches else {}
        found[kind] = [(rows[key], match) for key, match in matches.items() if key in rows]
    for model, _ in found["models"]:
        tools = [offering.tool for offering in model.offerings.all()]
        model.providers = [tool for tool in tools if tool.kind == Tool.Kind.PROVIDER]
        model.runners = [tool for tool in tools if tool.kind != Tool.Kind.PROVIDER]
    return found


def _headline_prices() -> QuerySet[PriceItem]:
    """The price a list row shows: the reference model's on-demand per-token price where the tool has one,
    otherwise its cheapest on-demand per-token item by output price (a different model, named as such)."""
    return PriceItem.objects.filter(
        tool=OuterRef("pk"),
        unit=PriceItem.Unit.PER_MTOK,
        tier=PriceItem.Tier.ON_DEMAND,
        output_usd_per_mtok__isnull=False,
    ).order_by(
        Case(When(model__slug=REFERENCE_MODEL_SLUG, then=Value(0)), default=Value(1)),
        "output_usd_per_mtok", F("input_usd_per_mtok").asc(nulls_last=True), "position", "pk",
    )


class HeadlineGroup:
    """Price-sort groups: only rows pricing the reference model are ordered by price among themselves."""

    FREE = 0
    REFERENCE_MODEL = 1
    OTHER_MODEL = 2
    UNKNOWN = 3


def _with_headline_price(queryset: QuerySet[Tool]) -> QuerySet[Tool]:
    # One join on the headline row rather than a subquery per column: every column of a subquery
    # annotation (and every expression built on one) repeats the whole subquery in the SQL, which made
    # compiling and planning it the largest cost of a catalog read.
    money = DecimalField(max_digits=10, decimal_places=4)
    blended = DecimalField(max_digits=14, decimal_places=6)
    headline_row = FilteredRelation(
        "price_items", condition=Q(price_items__pk=Subquery(_headline_prices().values("pk")[:1]))
    )
    return queryset.annotate(headline_row=headline_row).annotate(
        headline_item=F("headline_row__item"),
        headline_model_slug=F("headline_row__model__slug"),
        headline_model_name=F("headline_row__model__name"),
        headline_input_usd_per_mtok=ExpressionWrapper(F("headline_row__input_usd_per_mtok"), output_field=money),
        headline_output_usd_per_mtok=ExpressionWrapper(F("headline_row__output_usd_per_mtok"), output_field=money),
        headline_is_free=Case(
            When(licence__is_open_source=True, then=Value(True)),
            default=Value(False),
            output_field=BooleanField(),
        ),
    ).annotate(
        # Sorts as headline_price_value displays: open-source software without a per-token price first
        # (it costs nothing beyond the hardware), then the reference model's prices cheapest first by
        # blended price, then prices of other models (not compared with each other: by rating and
        # name), then tools with no per-token price.
        headline_group=Case(
            When(headline_output_usd_per_mtok__isnull=False, headline_model_slug=REFERENCE_MODEL_SLUG,
                 then=Value(HeadlineGroup.REFERENCE_MODEL)),
            When(headline_output_usd_per_mtok__isnull=False, then=Value(HeadlineGroup.OTHER_MODEL)),
            When(headline_is_free=True, then=Value(HeadlineGroup.FREE)),
            default=Value(HeadlineGroup.UNKNOWN),
            output_field=IntegerField(),
        ),
        headline_blended_usd_per_mtok=ExpressionWrapper(
            (BLEND_INPUT_WEIGHT * F("headline_input_usd_per_mtok") + BLEND_OUTPUT_WEIGHT * F("headline_output_usd_per_mtok"))
            / (BLEND_INPUT_WEIGHT + BLEND_OUTPUT_WEIGHT),
            output_field=blended,
        ),
    )


def _timestamps(relation: str = "") -> tuple[str, str]:
    # No page or API read shows when a catalog row was created or changed; reading the two columns cost a
    # datetime conversion per row and column (a few thousand for a catalog list ten times today's).
    prefix = f"{relation}__" if relation else ""
    return f"{prefix}created_at", f"{prefix}updated_at"


def _without_timestamps(queryset: QuerySet, *relations: str) -> QuerySet:
    """The rows and their select_related `relations`, without the timestamps no read shows."""
    return queryset.select_related(*relations).defer(
        *_timestamps(), *(name for relation in relations for name in _timestamps(relation))
    )


def tool_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[Tool]:
    """Tools matching already-validated filters, annotated with their headline price.

    Keys (all optional): kind, hardware (target slug), licence (SPDX id), feature (slug),
    open_source (bool), min_rating (Decimal), q (text), sort ("rating", "name" or "price").
    """
    filters = dict(filters or {})
    queryset = _without_timestamps(Tool.objects, "licence", "rating_source").prefetch_related(
        Prefetch("hardware_support", queryset=_without_timestamps(HardwareSupport.objects, "hardware")),
    )
    if filters.get("kind"):
        queryset = queryset.filter(kind=filters["kind"])
    if filters.get("hardware"):
        queryset = queryset.filter(
            Exists(HardwareSupport.objects.filter(tool=OuterRef("pk"), hardware__slug=filters["hardware"]))
        )
    if filters.get("licence"):
        queryset = queryset.filter(licence__spdx_id=filters["licence"])
    if filters.get("feature"):
        queryset = queryset.filter(
            Exists(ToolFeature.objects.filter(tool=OuterRef("pk"), feature__slug=filters["feature"]))
        )
    if filters.get("open_source") is not None:
        if filters["open_source"]:
            queryset = queryset.filter(licence__is_open_source=True)
        else:
            queryset = queryset.filter(Q(licence__isnull=True) | Q(licence__is_open_source=False))
    if filters.get("min_rating") is not None:
        queryset = queryset.filter(rating__gte=filters["min_rating"])
    text = (filters.get("q") or "").strip()
    relevance = tool_search(query=text) if text else None
    if relevance is not None:
        queryset = queryset.filter(pk__in=list(relevance))

    caveat_counts = (
        Caveat.objects.filter(tool=OuterRef("pk")).order_by().values("tool").annotate(total=Count("pk")).values("total")
    )
    queryset = _with_headline_price(queryset).annotate(
        caveat_count=Coalesce(Subquery(caveat_counts, output_field=IntegerField()), 0)
    )
    if relevance and not filters.get("sort"):
        score = Case(*(When(pk=pk, then=Value(match.score)) for pk, match in relevance.items()))
        return queryset.order_by(score.desc(), F("rating").desc(nulls_last=True), F("rank").asc(nulls_last=True), "name")
    sort = filters.get("sort") or "rating"
    if sort == "name":
        return queryset.order_by(Lower("name"), "slug")
    if sort == "price":
        return queryset.order_by(
            "headline_group",
            Case(
                When(headline_group=HeadlineGroup.REFERENCE_MODEL, then=F("headline_blended_usd_per_mtok")),
                default=Value(None),
                output_field=DecimalField(max_digits=14, decimal_places=6),
            ).asc(nulls_last=True),
            F("rating").desc(nulls_last=True),
            Lower("name"),
        )
    return queryset.ranked()


def _with_details(queryset: QuerySet[Tool]) -> QuerySet[Tool]:
    return _without_timestamps(_with_headline_price(queryset), "licence", "rating_source").prefetch_related(
        Prefetch(
            "price_items", queryset=_without_timestamps(PriceItem.objects.order_by("position", "pk"), "source")
        ),
        Prefetch("hardware_support", queryset=_without_timestamps(HardwareSupport.objects, "hardware", "source")),
        Prefetch(
            "quant_format_support", queryset=_without_timestamps(ToolQuantFormat.objects, "quant_format", "source")
        ),
        Prefetch(
            "api_surface_support", queryset=_without_timestamps(ToolApiSurface.objects, "api_surface", "source")
        ),
        Prefetch("feature_support", queryset=_without_timestamps(ToolFeature.objects, "feature", "source")),
        Prefetch("caveats", queryset=_without_timestamps(Caveat.objects, "source")),
        Prefetch("sources", queryset=_without_timestamps(Source.objects)),
        Prefetch("absences", queryset=DocumentedAbsence.objects.select_related(*ABSENCE_ASPECTS, "source")),
    )


def tool_get(*, slug: str, details: bool = True) -> Tool:
    """One tool, by default with everything its page shows (with the models it serves and the figures others
    reported about it; read-only rows: timestamps are not loaded, so saving one would not move its
    updated_at); `details=False` for the bare row a write needs.

    Raises Tool.DoesNotExist.
    """
    if not details:
        return Tool.objects.get(slug=slug)
    return _with_details(Tool.objects.all()).prefetch_related(
        Prefetch("model_offerings", queryset=ModelOffering.objects.select_related("model", "source")),
        Prefetch(
            "reported_figures",
            queryset=ReportedFigure.objects.select_related("tool", "model", "hardware").order_by(
                "-observed_on", "position", "pk"
            ),
        ),
    ).get(slug=slug)


# --- Prices and sources ----------------------------------------------------------------------


def price_item_list(*, filters: Mapping[str, Any] | None = None) -> QuerySet[PriceItem]:
    """Price items with their tool and source, by tool then position; `filters`: tool, unit, tier."""
    filters = filters or {}
    queryset = PriceItem.objects.select_related("tool", "source").order_by("tool__name", "tool__slug", "position", "id")
    for name in ("tool", "unit", "tier"):
        if filters.get(name):
            queryset = queryset.filter(**{name: filters[name]})
    return queryset


def price_item_get(*, pk: int) -> PriceItem:
    """One price item with its tool and source. Raises PriceItem.DoesNotExist."""
    return price_item_list().get(pk=pk)


def source_list() -> QuerySet[Source]:
    return Source.objects.order_by("key")


def source_get(*, key: str) -> Source:
    """Raises Source.DoesNotExist."""
    return Source.objects.get(key=key)


def sources_by_title(sources: Iterable[Source | None]) -> list[Source]:
    """Each of `sources` once (a missing one left out), by title: the sources list of a page."""
    unique = {source.pk: source for source in sources if source is not None}
    return sorted(unique.values(), key=lambda source: source.title.lower())


def guide_sources(*, keys: Sequence[str]) -> list[Source]:
    """The sources among `keys` that the catalog holds, by key."""
    return list(source_list().filter(key__in=keys))


# --- Hardware, formats, features, API surfaces, use cases ----------------------------------------


def _tools_supporting(link: type[Model]) -> QuerySet:
    """Links of a tool to one kind of catalog entry, with the tool, by tool name."""
    return link.objects.select_related("tool").order_by("tool__name", "tool__slug")


def hardware_spec_list() -> QuerySet[HardwareSpec]:
    return HardwareSpec.objects.select_related("source", "hardware_target").order_by("position", "name", "slug")


def hardware_target_list() -> QuerySet[HardwareTarget]:
    """Hardware families with their device specs (`specs`) and the tools that run on them (`support`)."""
    return HardwareTarget.objects.order_by("position", "name", "slug").prefetch_related(
        Prefetch("specs", queryset=hardware_spec_list()),
        Prefetch("support", queryset=_tools_supporting(HardwareSupport)),
    )


def quant_format_list() -> QuerySet[QuantFormat]:
    """Quantization formats with their source and the tools that load them (`support`)."""
    return QuantFormat.objects.select_related("source").order_by("name", "slug").prefetch_related(
        Prefetch("support", queryset=_tools_supporting(ToolQuantFormat))
    )


def feature_list() -> QuerySet[Feature]:
    """Serving features with the tools that have them (`support`)."""
    return Feature.objects.order_by("position", "name", "slug").prefetch_related(
        Prefetch("support", queryset=_tools_supporting(ToolFeature))
    )


def api_surface_list() -> QuerySet[ApiSurface]:
    """API surfaces with the tools that speak them (`support`)."""
    return ApiSurface.objects.order_by("name", "slug").prefetch_related(
        Prefetch("support", queryset=_tools_supporting(ToolApiSurface))
    )


def use_case_list(*, group: str | None = None) -> QuerySet[UseCase]:
    """Use cases, in the guide's order, with their ordered recommendations and sources; one group if given."""
    use_cases = UseCase.objects.order_by("group", "position", "title", "slug").prefetch_related(
        Prefetch(
            "recommendations",
            queryset=UseCaseRecommendation.objects.select_related("tool", "source").order_by("position", "id"),
        ),
        Prefetch("sources", queryset=Source.objects.order_by("key")),
    )
    return use_cases.filter(group=group) if group else use_cases


def use_case_get(*, slug: str) -> UseCase:
    """One use case with its ordered recommendations and sources. Raises UseCase.DoesNotExist."""
    return use_case_list().get(slug=slug)


# --- Compare ---------------------------------------------------------------------------------


class CompareError(ValueError):
    """The tools asked for cannot be compared; the message says why, naming the slugs at fault."""

    def __init__(self, message: str, *, code: str, slugs: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.slugs = list(slugs)


# Tool.slug is a SlugField of at most 80 characters; anything else cannot name a tool.
TOOL_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,79}")


def compare_split_slugs(raw: str | Sequence[str]) -> list[str]:
    """Slugs as given, lower-cased, from "a,b" strings or repeated values; not validated."""
    parts = [raw] if isinstance(raw, str) else list(raw)
    return [slug.strip().lower() for part in parts for slug in str(part).split(",") if slug.strip()]


def compare_parse_slugs(raw: str | Sequence[str]) -> list[str]:
    """Validate a comparison request: "a,b,c", or repeated values as checkboxes send them.

    Returns the slugs in the order given. Raises CompareError for an empty request, duplicates,
    fewer than two or more than four tools, and slugs that name no tool.
    """
    slugs = compare_split_slugs(raw)
    if not slugs:
        raise CompareError(
            f"Choose {COMPARE_MIN_TOOLS} to {COMPARE_MAX_TOOLS} tools to compare.", code="empty"
        )
    malformed = [slug for slug in slugs if not TOOL_SLUG.fullmatch(slug)]
    if malformed:
        shown = ", ".join(repr(slug[:40]) for slug in malformed[:COMPARE_MAX_TOOLS])
        raise CompareError(f"These are not tool slugs: {shown}.", code="invalid", slugs=malformed)
    duplicates = sorted({slug for slug in slugs if slugs.count(slug) > 1})
    if duplicates:
        raise CompareError(
            f"Each tool can appear only once; repeated: {', '.join(duplicates)}.", code="duplicate", slugs=duplicates
        )
    if len(slugs) < COMPARE_MIN_TOOLS:
        raise CompareError(
            f"Only one tool was chosen ({slugs[0]}); pick at least {COMPARE_MIN_TOOLS} to compare.",
            code="too_few",
            slugs=slugs,
        )
    if len(slugs) > COMPARE_MAX_TOOLS:
        raise CompareError(
            f"{len(slugs)} tools were chosen; at most {COMPARE_MAX_TOOLS} fit side by side.",
            code="too_many",
            slugs=slugs,
        )
    known = set(Tool.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    unknown = [slug for slug in slugs if slug not in known]
    if unknown:
        raise CompareError(f"No tool with the slug: {', '.join(unknown)}.", code="unknown", slugs=unknown)
    return slugs




def headline_price_value(tool: Tool) -> dict[str, Any] | None:
    """The headline price of a tool from tool_list/tool_get annotations, as plain data.

    `model` names the model the price is for; `is_reference_model` says whether it is the model every
    headline price is compared on (REFERENCE_MODEL_SLUG), so a list never ranks prices of different models.
    """
    if tool.headline_output_usd_per_mtok is not None:
        blended = tool.headline_blended_usd_per_mtok
        return {
            "free": False,
            "item": tool.headline_item,
            "model": tool.headline_model_slug,
            "model_name": tool.headline_model_name,
            "is_reference_model": tool.headline_model_slug == REFERENCE_MODEL_SLUG,
            "input_usd_per_mtok": decimal_text(tool.headline_input_usd_per_mtok),
            "output_usd_per_mtok": decimal_text(tool.headline_output_usd_per_mtok),
            "blended_usd_per_mtok": decimal_text(blended, quantum=BLENDED_QUANTUM),
        }
    if tool.headline_is_free:
        return {"free": True, "item": None, "model": None, "model_name": None, "is_reference_model": False,
                "input_usd_per_mtok": None, "output_usd_per_mtok": None, "blended_usd_per_mtok": None}
    return None


def tool_compare(*, slugs: Sequence[str]) -> list[Tool]:
    """The tools of already-validated slugs (see compare_parse_slugs), in the order given, with everything the
    comparison shows (catalog.comparison.compare_matrix builds it without a query)."""
    by_slug = {tool.slug: tool for tool in _with_details(Tool.objects.filter(slug__in=slugs))}
    return [by_slug[slug] for slug in slugs if slug in by_slug]


def reported_figures_for_scoring() -> list[dict[str, Any]]:
    """Every third-party figure as plain data (no ORM objects), newest observation first per tool and metric.

    Keys: tool, model, hardware (slugs; model and hardware may be None), device_count, metric, value
    (float), unit, is_approximate, concurrency, workload, publisher, self_reported (the tool's own headline
    figure), url, observed_on, verified_on (dates).
    These are reported, never measured here: a caller ranks them after this site's own measurements.
    """
    figures = ReportedFigure.objects.select_related("tool", "model", "hardware").order_by(
        "tool__slug", "metric", "-observed_on", "position", "pk"
    )
    return [
        {
            "tool": figure.tool.slug,
            "model": figure.model.slug if figure.model else None,
            "hardware": figure.hardware.slug if figure.hardware else None,
            "device_count": figure.device_count,
            "metric": figure.metric,
            "value": float(figure.value),
            "unit": figure.unit,
            "is_approximate": figure.is_approximate,
            "concurrency": figure.concurrency,
            "workload": figure.workload,
            "publisher": figure.publisher,
            "self_reported": figure.is_self_reported,
            "url": figure.url,
            "observed_on": figure.observed_on,
            "verified_on": figure.verified_on,
        }
        for figure in figures
    ]


CHANGE_LIMIT = 200
CHANGE_MAX_LIMIT = 5000


def change_list(*, filters: Mapping[str, Any] | None = None, limit: int = CHANGE_LIMIT) -> QuerySet[Change]:
    """The latest changes, newest first: `kind`, and `tool`, `model`, `hardware` as slugs, `since` as a date."""
    filters = filters or {}
    changes = Change.objects.for_listing()
    if filters.get("kind"):
        changes = changes.filter(kind=filters["kind"])
    for name in ("tool", "model", "hardware"):
        if filters.get(name):
            changes = changes.filter(**{f"{name}__slug": filters[name]})
    if filters.get("since"):
        changes = changes.filter(recorded_at__date__gte=filters["since"])
    return changes[:limit]
