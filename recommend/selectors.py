"""Reads for the recommendation pages: catalog and probe rows turned into scoring's plain values.

What the wizard, the fit calculator and the break-even page read is one snapshot of the catalog, built once
per data generation by each process and shared by every request (core.cache.PerGeneration): an answer then
costs one query, for the generation. Each selector runs a fixed number of queries however many tools,
prices or measurements exist.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet

from core.cache import PerGeneration
from lab.evidence import Comparison, comparisons

from catalog.models import (
    Caveat,
    HardwareSpec,
    HardwareSupport,
    LanguageModel,
    PriceItem,
    Source,
    Tool,
    ToolApiSurface,
    ToolQuantFormat,
    UseCaseRecommendation,
)
from catalog.selectors import reported_figures_for_scoring
from probes.models import CompatStatus, MeasurementSummary
from scoring.breakeven import GpuPrice, TokenPrice
from scoring.ranking import (
    MEASURED,
    CaveatInfo,
    CatalogData,
    CompatInfo,
    DocumentedCheck,
    PriceInfo,
    Recommendation,
    ReportedSpeed,
    SpeedInfo,
    ToolInfo,
)
from scoring.vocabulary import METRIC_BY_REPORTED, OUTPUT_SPEED, TTFAT, TTFT, model_slug

MEASURED_LABEL = "Measured by Inference Atlas probes"


def _tools_with_relations() -> QuerySet[Tool]:
    return Tool.objects.prefetch_related(
        Prefetch("hardware_support", queryset=HardwareSupport.objects.select_related("hardware", "source")),
        Prefetch("quant_format_support", queryset=ToolQuantFormat.objects.select_related("quant_format", "source")),
        Prefetch("caveats", queryset=Caveat.objects.select_related("source")),
        Prefetch("api_surface_support", queryset=ToolApiSurface.objects.select_related("api_surface", "source")),
    )


def _catalog_data() -> CatalogData:
    tools: dict[str, ToolInfo] = {}
    for tool in _tools_with_relations():
        tools[tool.slug] = ToolInfo(
            slug=tool.slug,
            name=tool.name,
            kind=tool.kind,
            hardware={support.hardware.slug: support.level for support in tool.hardware_support.all()},
            quant_formats=frozenset(link.quant_format.slug for link in tool.quant_format_support.all()),
            hardware_sources={
                support.hardware.slug: support.source.key
                for support in tool.hardware_support.all() if support.source
            },
            quant_format_sources={
                link.quant_format.slug: link.source.key for link in tool.quant_format_support.all() if link.source
            },
            caveats=tuple(
                CaveatInfo(caveat.title, caveat.body, caveat.severity, caveat.source.key)
                for caveat in tool.caveats.all()
            ),
            documented_checks=_documented_checks(tool),
        )
    prices = tuple(
        PriceInfo(
            tool=item.tool.slug,
            model=model_slug(item.item),
            input_usd_per_mtok=float(item.input_usd_per_mtok),
            output_usd_per_mtok=float(item.output_usd_per_mtok),
            source_key=item.source.key,
            verified_on=_date(item.verified_on or item.source.verified_on),
        )
        for item in _provider_token_price_items().order_by("tool__slug", "position", "id")
    )
    speeds = tuple(
        SpeedInfo(
            tool=summary.target.tool.slug,
            target=summary.target.slug,
            model=model_slug(summary.target.model_id),
            workload=summary.workload,
            concurrency=summary.concurrency,
            samples_72h=summary.samples_72h,
            output_speed_tps=_median_72h(summary.metrics, OUTPUT_SPEED.key),
            ttft_ms=_median_72h(summary.metrics, TTFT.key),
            hardware=summary.target.hardware,
            ttfat_ms=_median_72h(summary.metrics, TTFAT.key),
        )
        for summary in MeasurementSummary.objects.select_related("target__tool").order_by("id")
    )
    compat = tuple(
        CompatInfo(
            tool=status.target.tool.slug, target=status.target.slug, check=status.check_name,
            outcome=status.outcome, message=status.message,
        )
        for status in CompatStatus.objects.select_related("target__tool").order_by("id")
    )
    return CatalogData(tools=tools, prices=prices, speeds=speeds, compat=compat, reported=_reported_speeds())


# Reported figures scoring can weigh, per publisher's page and date: output speed, and the latencies (scoring
# weighs one of them for every provider, never a mix).
SCORED_METRICS = (OUTPUT_SPEED, TTFT, TTFAT)


def _reported_speeds() -> tuple[ReportedSpeed, ...]:
    """One ReportedSpeed per tool, model and publisher's page and date, its speed and TTFT (ms) together."""
    merged: dict[tuple, dict] = {}
    for figure in reported_figures_for_scoring():
        metric = METRIC_BY_REPORTED.get(figure["metric"])
        if metric not in SCORED_METRICS or figure["model"] is None or figure["concurrency"] is not None:
            continue
        key = (figure["tool"], figure["model"], figure["publisher"], figure["url"], figure["observed_on"])
        entry = merged.setdefault(key, {"workload": figure["workload"], "self_reported": figure["self_reported"]})
        entry.setdefault(metric.key, metric.converted(figure["value"], unit=figure["unit"]))
    return tuple(
        ReportedSpeed(
            tool=tool, model=model_slug(model), publisher=publisher, url=url, observed_on=observed_on.isoformat(),
            output_speed_tps=entry.get("output_speed_tps"), ttft_ms=entry.get("ttft_ms"),
            ttfat_ms=entry.get("ttfat_ms"), workload=entry["workload"], self_reported=entry["self_reported"],
        )
        for (tool, model, publisher, url, observed_on), entry in merged.items()
    )


def _documented_checks(tool: Tool) -> dict[str, DocumentedCheck]:
    """Check outcomes from the tool's API surfaces; an OpenAI chat surface speaks for the checks first."""
    checks: dict[str, DocumentedCheck] = {}
    surfaces = sorted(tool.api_surface_support.all(), key=lambda link: link.api_surface.slug != "openai-chat")
    for link in surfaces:
        for entry in link.documented_checks():
            if entry.check not in checks and entry.source_key:
                checks[entry.check] = entry
    return checks


def _median_72h(metrics: dict, name: str) -> float | None:
    value = (metrics or {}).get(name, {}).get("median_72h")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


@dataclass(frozen=True)
class SourceLabel:
    key: str
    title: str
    url: str
    verified_on: str | None


def source_labels(*, keys: set[str] | None = None) -> dict[str, SourceLabel]:
    """The label of every source (of `keys` only, when given), and of this site's own measurements."""
    sources = Source.objects.all() if keys is None else Source.objects.filter(key__in=keys)
    labels = {
        source.key: SourceLabel(source.key, source.title, source.url,
                                str(source.verified_on) if source.verified_on else None)
        for source in sources
    }
    labels[MEASURED] = SourceLabel(MEASURED, MEASURED_LABEL, "", None)
    return labels


def answer_sources(*, keys: set[str]) -> dict[str, SourceLabel]:
    """The labels of `keys`, from the snapshot the answer was computed from."""
    labels = snapshot().sources
    return {key: labels[key] for key in keys if key in labels}


def recommendation_source_keys(recommendation: Recommendation) -> set[str]:
    keys = {reason.source_key for item in recommendation.results for reason in item.reasons if reason.source_key}
    keys |= {reason.source_key for item in recommendation.excluded + recommendation.not_recommended
             for reason in item.reasons if reason.source_key}
    keys |= {caveat.source_key for item in recommendation.not_recommended for caveat in item.caveats}
    keys |= {warning.citation.source_key for warning in recommendation.warnings}
    return keys


def tool_names(*, slugs: list[str]) -> dict[str, str]:
    return dict(Tool.objects.filter(slug__in=slugs).values_list("slug", "name"))


def use_cases_naming(*, tool: Tool) -> list[UseCaseRecommendation]:
    """Every use case and recipe that names the tool, recommended or only listed, in the use cases' order."""
    return list(
        UseCaseRecommendation.objects.filter(tool=tool)
        .select_related("use_case", "source")
        .order_by("use_case__group", "use_case__position", "use_case__title")
    )


def hardware_spec_get(*, slug: str) -> HardwareSpec | None:
    return HardwareSpec.objects.filter(slug=slug).first()


def _hardware_specs() -> QuerySet[HardwareSpec]:
    return HardwareSpec.objects.select_related("source", "hardware_target").order_by("position", "name")


def _provider_token_price_items() -> QuerySet[PriceItem]:
    """Hosted providers' on-demand prices per token that state both the input and the output price."""
    return PriceItem.objects.filter(
        unit=PriceItem.Unit.PER_MTOK, tier=PriceItem.Tier.ON_DEMAND, tool__kind=Tool.Kind.PROVIDER,
        input_usd_per_mtok__isnull=False, output_usd_per_mtok__isnull=False,
    ).select_related("tool", "source")


def _token_prices() -> list[TokenPrice]:
    items = _provider_token_price_items().select_related("model").order_by("tool__name", "position", "id")
    return [
        TokenPrice(
            tool=item.tool.slug, tool_name=item.tool.name, item=item.item,
            input_usd_per_mtok=float(item.input_usd_per_mtok), output_usd_per_mtok=float(item.output_usd_per_mtok),
            source=item.source.title, verified_on=_date(item.verified_on or item.source.verified_on),
            # Price lists spell one model many ways ('Qwen 3.8 27B', 'qwen3.8-27b'): the catalog model the
            # item is linked to names it, and an unlinked item stands for itself.
            model=item.model.slug if item.model else model_slug(item.item),
            model_name=item.model.name if item.model else item.item,
        )
        for item in items
    ]


def _gpu_prices() -> list[GpuPrice]:
    items = PriceItem.objects.filter(unit=PriceItem.Unit.PER_HOUR, amount_usd__isnull=False).select_related(
        "tool", "source"
    ).order_by("amount_usd", "tool__name", "id")
    return [
        GpuPrice(
            tool=item.tool.slug, tool_name=item.tool.name, item=item.item, tier=item.get_tier_display(),
            usd_per_hour=float(item.amount_usd), source=item.source.title,
            verified_on=_date(item.verified_on or item.source.verified_on),
        )
        for item in items
    ]


def _date(value) -> str | None:
    return str(value) if value else None


@dataclass(frozen=True)
class PricedModel:
    slug: str
    name: str
    providers: int


def _priced_models(prices: list[TokenPrice]) -> list[PricedModel]:
    """Models with a per-token price, most widely priced first."""
    names: dict[str, str] = {}
    tools: dict[str, set[str]] = {}
    for price in prices:
        names.setdefault(price.model, price.model_name)
        tools.setdefault(price.model, set()).add(price.tool)
    return sorted((PricedModel(slug, names[slug], len(tools[slug])) for slug in tools),
                  key=lambda model: (-model.providers, model.name.lower()))


@dataclass(frozen=True)
class CatalogModel:
    slug: str
    name: str


@dataclass(frozen=True)
class Snapshot:
    """Everything the answers read, as plain values and model instances that no request changes."""

    catalog: CatalogData
    sources: dict[str, SourceLabel]
    hardware_specs: tuple[HardwareSpec, ...]
    token_prices: tuple[TokenPrice, ...]
    gpu_prices: tuple[GpuPrice, ...]
    priced_models: tuple[PricedModel, ...]
    # Published comparisons of several engines on one model and hardware, for the answers to cite.
    evidence: tuple[Comparison, ...]
    # Every catalog model, as (slug, name) in catalog order: the wizard takes any of them.
    models: tuple[CatalogModel, ...]


def _snapshot() -> Snapshot:
    prices = _token_prices()
    return Snapshot(
        catalog=_catalog_data(), sources=source_labels(), hardware_specs=tuple(_hardware_specs()),
        token_prices=tuple(prices), gpu_prices=tuple(_gpu_prices()), priced_models=tuple(_priced_models(prices)),
        evidence=tuple(comparisons(engines_at_least=2)),
        models=tuple(CatalogModel(model.slug, model.name) for model in LanguageModel.objects.order_by("position", "name")),
    )


snapshot = PerGeneration(_snapshot).get


def catalog_data() -> CatalogData:
    return snapshot().catalog


def hardware_spec_list() -> tuple[HardwareSpec, ...]:
    return snapshot().hardware_specs


def token_prices(*, model: str | None = None) -> list[TokenPrice]:
    prices = snapshot().token_prices
    return [price for price in prices if model is None or price.model == model]


def gpu_prices() -> list[GpuPrice]:
    return list(snapshot().gpu_prices)


def language_models() -> tuple[CatalogModel, ...]:
    return snapshot().models


def priced_models() -> list[PricedModel]:
    return list(snapshot().priced_models)


def priced_model_find(name: str) -> PricedModel | None:
    """The priced model a name means, by its slug, its name or any price item's spelling of it."""
    models = {model.slug: model for model in snapshot().priced_models}
    spellings = {model_slug(model.slug): model.slug for model in models.values()}
    spellings |= {model_slug(model.name): model.slug for model in models.values()}
    spellings |= {model_slug(price.item): price.model for price in snapshot().token_prices}
    slug = spellings.get(model_slug(name))
    return models.get(slug) if slug else None
