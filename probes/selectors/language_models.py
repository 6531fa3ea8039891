"""Read model of the per-model comparisons: /models/, /models/<slug>/, the model tables of /providers/ and
/engines/, and /api/v1/models/.

One row per tool serving (provider) or running (engine) the model, with the tool's price for that same model,
the context it serves, its documented API gaps, the figures third parties reported and the figures this site
measured. Each figure column holds one metric, and each cell the one figure that speaks for that tool and model
on every page (scoring.figures: this site's measurement, else the most preferred publisher's); the column names
its publisher when every cell has the same one, and each cell names its own. A provider's own headline figure is
never put in a column or a chart. A reported figure always carries its publisher, link and dates. A fixed number
of queries, whatever the number of models, tools, figures or summaries.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import QuerySet

from catalog.models import LanguageModel, ModelOffering, PriceItem, ReportedFigure, Tool, ToolApiSurface
from catalog.selectors import REFERENCE_MODEL_SLUG
from probes.models import CompatStatus, MeasurementSummary, ProbeTarget
from probes.selectors.cells import MetricFigures, WorkloadOption
from scoring.figures import preferred_publisher
from scoring.ranking import DocumentedCheck
from scoring.vocabulary import (
    DOCUMENTED_GAPS,
    METRIC_BY_KEY,
    METRIC_BY_REPORTED,
    OUTPUT_SPEED,
    PAGE_METRICS,
    TTFAT,
    TTFT,
    Metric,
    blended_price,
    model_slug,
    workload_input_tokens,
)

# The compat surface every probe speaks; its documented checks are the ones a model row summarises.
OPENAI_CHAT_SURFACE = "openai-chat"

MEASURED = "measured"
REPORTED = "reported"


@dataclass(frozen=True)
class Figure:
    """One figure of a row, in the unit of this site's measured metric (ms, tok/s), labelled by where it came from."""

    key: str
    value: float
    evidence: str
    reported: ReportedFigure | None = None
    workload: str = ""

    @property
    def metric(self) -> Metric:
        return METRIC_BY_KEY[self.key]

    @property
    def text(self) -> str:
        decimals = self.metric.decimals
        return f"{'~' if self.reported is not None and self.reported.is_approximate else ''}{self.value:,.{decimals}f}"

    @property
    def attr(self) -> str:
        return f"{self.value:.15g}"


@dataclass
class OfferingRow:
    offering: ModelOffering
    price: PriceItem | None
    reported: list[ReportedFigure]
    measured: dict[str, float]
    measured_workload: WorkloadOption | None
    measured_target: ProbeTarget | None
    # The documented checks that hold for this row's model, by check name.
    documented_checks: dict[str, DocumentedCheck]
    measured_compat: dict[str, int] = field(default_factory=dict)
    # The figure each column shows (COLUMN_METRICS), chosen for the whole comparison by ModelComparison.
    columns: dict[str, Figure | None] = field(default_factory=dict)

    @property
    def tool(self) -> Tool:
        return self.offering.tool

    @property
    def is_provider(self) -> bool:
        return self.tool.kind == Tool.Kind.PROVIDER

    @property
    def context_tokens(self) -> int | None:
        return self.offering.context_tokens or None

    @property
    def blended_usd(self) -> Decimal | None:
        if self.price is None or self.price.input_usd_per_mtok is None or self.price.output_usd_per_mtok is None:
            return None
        return blended_price(self.price.input_usd_per_mtok, self.price.output_usd_per_mtok)

    def reported_figures(self, key: str) -> dict[str, Figure]:
        """The newest independent figure of the metric `key` per publisher, in the unit of the measured metric.
        A provider's own headline figure is left out: it is not a benchmark and never sits beside one."""
        figures: dict[str, Figure] = {}
        for figure in self.reported:
            metric = METRIC_BY_REPORTED.get(figure.metric)
            if metric is not None and metric.key == key and not figure.is_self_reported:
                value = metric.converted(float(figure.value), unit=figure.unit)
                figures.setdefault(figure.publisher, Figure(key, value, REPORTED, reported=figure,
                                                            workload=figure.workload))
        return figures

    def measured_figure(self, key: str) -> Figure | None:
        if self.measured.get(key) is None:
            return None
        return Figure(key, self.measured[key], MEASURED,
                      workload=self.measured_workload.workload if self.measured_workload else "")

    @property
    def output_speed(self) -> Figure | None:
        return self.columns.get("output_speed_tps")

    @property
    def ttft(self) -> Figure | None:
        return self.columns.get("ttft_ms")

    @property
    def ttfat(self) -> Figure | None:
        return self.columns.get("ttfat_ms")

    def preferred_figure(self, key: str) -> Figure | None:
        """The one figure of the metric `key` that speaks for this tool and model (scoring.figures)."""
        measured = self.measured_figure(key)
        if measured is not None:
            return measured
        reported = self.reported_figures(key)
        publisher = preferred_publisher({name: figure.reported.observed_on for name, figure in reported.items()})
        return reported[publisher] if publisher else None

    @property
    def figure_cells(self) -> list[tuple[Metric, Figure | None]]:
        """(metric, the column's figure) for each figure column."""
        return [(metric, self.columns.get(metric.key)) for metric in COLUMN_METRICS]

    @property
    def documented_problems(self) -> list[tuple[str, str]]:
        """(check, the gap in words) of every documented check short of working."""
        return sorted((name, entry.description) for name, entry in self.documented_checks.items()
                      if entry.outcome in DOCUMENTED_GAPS)

    @property
    def price_sort_key(self) -> tuple:
        blended = self.blended_usd
        return (blended is None, blended or 0, self.tool.name.lower())


# The figure columns of a model table, one metric each: time to first token and time to first answer token are
# different questions (the second waits out a reasoning model's thinking), so they never share a column.
COLUMN_METRICS = (OUTPUT_SPEED, TTFT, TTFAT)


@dataclass(frozen=True)
class ColumnEvidence:
    """Where one column's figures come from: one publisher (this site's measurements count as one) when every
    figure of the column has the same, else `mixed`, and each cell names its own."""

    metric: Metric
    publisher: str | None
    mixed: bool


def _publisher_of(figure: Figure) -> str:
    return MEASURED if figure.reported is None else figure.reported.publisher


def _choose_columns(rows: list[OfferingRow]) -> dict[str, ColumnEvidence]:
    """Fill each row's columns with its preferred figure of each metric (OfferingRow.preferred_figure)."""
    evidence: dict[str, ColumnEvidence] = {}
    for metric in COLUMN_METRICS:
        publishers = set()
        for row in rows:
            figure = row.columns[metric.key] = row.preferred_figure(metric.key)
            if figure is not None:
                publishers.add(_publisher_of(figure))
        whole = next(iter(publishers)) if len(publishers) == 1 else None
        evidence[metric.key] = ColumnEvidence(metric, whole, mixed=len(publishers) > 1)
    return evidence


@dataclass
class ModelComparison:
    model: LanguageModel
    rows: list[OfferingRow]
    columns: dict[str, ColumnEvidence] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Providers and engines are compared within their own kind: each group picks its own publisher, and the
        # column headings describe the providers' (the engines' on a model no provider serves).
        engines = _choose_columns(self.engines)
        providers = _choose_columns(self.providers)
        self.columns = providers if self.providers else engines

    @property
    def providers(self) -> list[OfferingRow]:
        return [row for row in self.rows if row.is_provider]

    @property
    def engines(self) -> list[OfferingRow]:
        return [row for row in self.rows if not row.is_provider]

    @property
    def is_reference(self) -> bool:
        return self.model.slug == REFERENCE_MODEL_SLUG

    @property
    def speed_price_points(self) -> list[OfferingRow]:
        """Providers with both a blended price and an output speed: the points of the speed-against-price chart."""
        return [row for row in self.providers if row.blended_usd is not None and row.output_speed is not None]

    @property
    def first_token_chart(self) -> tuple[Metric, list[tuple[OfferingRow, Figure]]] | None:
        """The bars of the first-token chart: one metric for every bar (time to first token, or to the first
        answer token, whichever more tools have) from the column's publisher, so no bar compares one with the
        other."""
        candidates = []
        for metric in (TTFT, TTFAT):
            bars = [(row, figure) for row in self.rows if (figure := row.columns.get(metric.key)) is not None]
            candidates.append((len(bars), metric is TTFT, metric.key, bars))
        count, _, key, bars = max(candidates)
        if not count:
            return None
        return METRIC_BY_KEY[key], sorted(bars, key=lambda bar: bar[1].value)

    @property
    def reported_figures(self) -> list[ReportedFigure]:
        return [figure for row in self.rows for figure in row.reported]

    @property
    def cited(self) -> list[tuple[str, str]]:
        """(title, url) of every page the comparison cites: the model card, each price's source and each
        reported figure's page, once each, in that order."""
        cited: dict[str, str] = {}
        sources = [self.model.source, *(row.price.source for row in self.rows if row.price), *(
            row.offering.source for row in self.rows)]
        for source in sources:
            cited.setdefault(source.url or source.title, source.title)
        for figure in self.reported_figures:
            cited.setdefault(figure.url, f"{figure.publisher}: reported figures")
        return [(title, key if key.startswith("http") else "") for key, title in cited.items()]


def _models(slugs: Iterable[str] | None) -> QuerySet[LanguageModel]:
    queryset = LanguageModel.objects.select_related("licence", "source")
    if slugs is not None:
        queryset = queryset.filter(slug__in=list(slugs))
    return queryset.order_by("position", "name")


def _default_option(summaries: list[MeasurementSummary]) -> WorkloadOption | None:
    """The single-stream workload measured for the most rows (the smallest input on a tie), as on the dashboards."""
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for summary in summaries:
        counts[(summary.workload, summary.concurrency)] += 1
    if not counts:
        return None
    (workload, concurrency), count = min(
        counts.items(),
        key=lambda item: (item[0][1] != 1, -item[1], workload_input_tokens(item[0][0]) or 0, item[0][0]),
    )
    return WorkloadOption(workload, concurrency, count)


def model_comparisons(
    *, slugs: Iterable[str] | None = None, providers: bool | None = None, keep_empty: bool = False
) -> list[ModelComparison]:
    """Comparisons of the models named by `slugs` (all by default): only hosted providers' rows with
    `providers=True`, only the other tools' (engines, apps) with False, both with None.

    Models without such a row are left out unless `keep_empty`. Eight queries whatever the
    row counts.
    """
    models = list(_models(slugs))
    offerings = ModelOffering.objects.filter(model__in=models).select_related("tool", "model", "source", "tool__licence")
    if providers is True:
        offerings = offerings.filter(tool__kind=Tool.Kind.PROVIDER)
    elif providers is False:
        offerings = offerings.exclude(tool__kind=Tool.Kind.PROVIDER)
    offerings = list(offerings.order_by("model__position", "tool__name"))
    tool_ids = {offering.tool_id for offering in offerings}
    model_ids = {model.pk for model in models}

    prices: dict[tuple[int, int], PriceItem] = {}
    for price in (
        PriceItem.objects.filter(
            tool_id__in=tool_ids, model_id__in=model_ids, unit=PriceItem.Unit.PER_MTOK,
            output_usd_per_mtok__isnull=False,
        )
        .select_related("source")
        .order_by("-tier", "position", "pk")
    ):
        key = (price.tool_id, price.model_id)
        current = prices.get(key)
        if current is None or (current.tier != PriceItem.Tier.ON_DEMAND and price.tier == PriceItem.Tier.ON_DEMAND):
            prices[key] = price

    reported: dict[tuple[int, int], list[ReportedFigure]] = defaultdict(list)
    for figure in ReportedFigure.objects.filter(tool_id__in=tool_ids, model_id__in=model_ids).select_related(
        "tool", "model", "hardware"
    ).order_by("-observed_on", "position", "pk"):
        reported[(figure.tool_id, figure.model_id)].append(figure)

    documented: dict[int, list[DocumentedCheck]] = {}
    for support in ToolApiSurface.objects.filter(
        tool_id__in=tool_ids, api_surface__slug=OPENAI_CHAT_SURFACE
    ).select_related("api_surface", "source"):
        documented[support.tool_id] = support.documented_checks()

    targets = list(ProbeTarget.objects.filter(tool_id__in=tool_ids).order_by("-enabled", "slug"))
    summaries = list(MeasurementSummary.objects.filter(target__in=targets).only(
        "target_id", "workload", "concurrency", "metrics", "samples_72h", "last_run_at"
    ))
    compat_counts: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for target_id, outcome in CompatStatus.objects.filter(target__in=targets).values_list("target_id", "outcome"):
        compat_counts[target_id][outcome] += 1

    targets_by_offering: dict[int, list[ProbeTarget]] = defaultdict(list)
    for offering in offerings:
        wanted = {model_slug(offering.api_model_id), model_slug(offering.model.slug)} - {""}
        targets_by_offering[offering.pk] = [
            target for target in targets if target.tool_id == offering.tool_id and model_slug(target.model_id) in wanted
        ]
    summaries_by_target: dict[int, list[MeasurementSummary]] = defaultdict(list)
    for summary in summaries:
        summaries_by_target[summary.target_id].append(summary)

    by_model: dict[int, list[OfferingRow]] = defaultdict(list)
    for model in models:
        model_offerings = [offering for offering in offerings if offering.model_id == model.pk]
        model_summaries = [
            summary
            for offering in model_offerings
            for target in targets_by_offering[offering.pk]
            for summary in summaries_by_target[target.pk]
        ]
        option = _default_option(model_summaries)
        for offering in model_offerings:
            measured: dict[str, float] = {}
            measured_target = None
            compat: dict[str, int] = {}
            for target in targets_by_offering[offering.pk]:
                if not compat and compat_counts.get(target.pk):
                    compat = dict(compat_counts[target.pk])
                for summary in summaries_by_target[target.pk]:
                    if option and (summary.workload, summary.concurrency) == (option.workload, option.concurrency):
                        figures = summary.metrics if isinstance(summary.metrics, dict) else {}
                        for metric in PAGE_METRICS:
                            value = MetricFigures.from_json(metric, figures.get(metric.key)).median_72h
                            if value is not None:
                                measured[metric.key] = value
                        measured_target = target
                if measured:
                    break
            by_model[model.pk].append(
                OfferingRow(
                    offering=offering,
                    price=prices.get((offering.tool_id, model.pk)),
                    reported=reported.get((offering.tool_id, model.pk), []),
                    measured=measured,
                    measured_workload=option if measured else None,
                    measured_target=measured_target,
                    documented_checks={entry.check: entry for entry in documented.get(offering.tool_id, [])
                                       if entry.applies_to(model.slug)},
                    measured_compat=compat,
                )
            )
    comparisons = []
    for model in models:
        rows = by_model.get(model.pk, [])
        if not rows and not keep_empty:
            continue
        rows.sort(key=lambda row: (not row.is_provider, *row.price_sort_key))
        comparisons.append(ModelComparison(model=model, rows=rows))
    return comparisons


def model_comparison_get(*, slug: str) -> ModelComparison:
    """Every provider and engine of one model. Raises LanguageModel.DoesNotExist."""
    comparisons = model_comparisons(slugs=[slug], keep_empty=True)
    if not comparisons:
        raise LanguageModel.DoesNotExist(f"No model with the slug {slug!r}.")
    return comparisons[0]


@dataclass(frozen=True)
class ModelListRow:
    model: LanguageModel
    provider_count: int
    engine_count: int
    cheapest: OfferingRow | None
    fastest: OfferingRow | None


def model_list() -> list[ModelListRow]:
    """The model index: each model with how many providers and engines serve it, its cheapest like-for-like
    price and its fastest provider (measured first, else reported)."""
    rows = []
    for comparison in model_comparisons(keep_empty=True):
        providers = comparison.providers
        priced = [row for row in providers if row.blended_usd is not None]
        speeds = [row for row in providers if row.output_speed is not None]
        rows.append(
            ModelListRow(
                model=comparison.model,
                provider_count=len(providers),
                engine_count=len(comparison.engines),
                cheapest=min(priced, key=lambda row: row.blended_usd) if priced else None,
                fastest=max(speeds, key=lambda row: (row.output_speed.evidence == MEASURED, row.output_speed.value))
                if speeds else None,
            )
        )
    return rows


def reported_engine_figures() -> list[ReportedFigure]:
    """Every figure reported about a self-hosted engine, with the hardware it was obtained on, newest first."""
    return list(
        ReportedFigure.objects.exclude(tool__kind=Tool.Kind.PROVIDER)
        .select_related("tool", "model", "hardware")
        .order_by("-observed_on", "position", "pk")
    )
