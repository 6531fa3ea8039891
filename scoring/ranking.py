"""Rank engines and hosted providers for a profile, with the reason behind every point.

Order of work: hard constraints remove tools (never-recommended tools, hardware a tool does not run on,
hosted providers when on-premises is required, a required API feature that a probe measured failing or
that the tool's own documentation says it rejects or ignores); the hardware recipe's first matching
condition decides the top engine; the recipe's other entries and the remaining compatible engines follow;
hosted providers (when allowed) are ranked on one evidence tier: the site's measured 72-hour medians when
any provider has them, else figures reported by a named publisher, else documented facts, and always prices.
Equal scores share a rank and are shown as ties, never ordered by name. Scores compare tools of the same
kind; engines are listed before providers unless the user has no hardware of their own.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from scoring.figures import preferred_publisher
from scoring.money import format_usd
from scoring.profile import Profile
from scoring.rules import (
    COMPARISON,
    DOCUMENTED_SPEED,
    ENGINE_GUIDE,
    EVALUATE,
    GUIDE_ENGINES,
    GUIDE_RULES_BY_ID,
    HARDWARE_TARGETS,
    LOCAL_ONLY_CITATION,
    LOCAL_ONLY_SERVERS,
    NEVER_RECOMMENDED,
    RECIPES_BY_HARDWARE,
    ProfileWarning,
    RecipeEntry,
    profile_warnings,
)
from scoring.vocabulary import (
    DOCUMENTED_FAILURES,
    MEASURED_FAILURES,
    OUTPUT_SPEED,
    TTFAT,
    TTFT,
    blended_price,
    model_slug,
    workload_input_tokens,
)

MEASURED = "inference-atlas-probes"
PROVIDER = "provider"
ORCHESTRATION = "orchestration"
# Evidence tiers for hosted providers' speed, strongest first. One answer ranks on one tier only.
EVIDENCE_MEASURED = "measured"
EVIDENCE_REPORTED = "reported"
EVIDENCE_DOCUMENTED = "documented"
# How each goal weighs output speed, time to first token and blended price when ranking providers.
PROVIDER_WEIGHTS: dict[str, tuple[float, float, float]] = {
    "latency": (0.35, 0.45, 0.20),
    "throughput": (0.60, 0.10, 0.30),
    "cost": (0.20, 0.10, 0.70),
}
DEFAULT_PROVIDER_WEIGHTS = (0.40, 0.30, 0.30)
# Scores closer than this are the same score: differences below it come from rounding, not evidence.
TIE_TOLERANCE = 0.005
# The catalog's quantization formats an answer asks for: the format of the same name, except FP4, which stands
# for every 4-bit float format. No preference, and unquantized FP16 / BF16, ask for none.
FP4_FORMAT_SLUGS = ("nvfp4", "mxfp4", "fp4")
NO_FORMAT_ASKED = frozenset({"any", "bf16"})


@dataclass(frozen=True)
class CaveatInfo:
    title: str
    body: str
    severity: str
    source_key: str


@dataclass(frozen=True)
class DocumentedCheck:
    """What a source says about one request parameter (a compat check name) of a tool: its outcome, the model it
    is limited to (empty: every model), the checks it cannot be combined with in one request, and a note."""

    check: str
    outcome: str
    source_key: str
    surface: str = ""
    model: str = ""
    not_with: tuple[str, ...] = ()
    note: str = ""

    @classmethod
    def parse(cls, check: str, value: object, *, source_key: str, surface: str = "") -> DocumentedCheck:
        """One entry of a catalog row's ``checks`` mapping: an outcome stated by the row's own source, or a mapping
        with ``outcome`` and any of ``source`` (a source key), ``model`` (a model slug), ``not_with`` (check
        names) and ``note``. ValueError names what is wrong."""
        if isinstance(value, str):
            return cls(check, value, source_key, surface)
        if not isinstance(value, dict) or not isinstance(value.get("outcome"), str):
            raise ValueError(f"{check}: expected an outcome or a mapping with an outcome")
        unknown = set(value) - {"outcome", "source", "model", "not_with", "note"}
        if unknown:
            raise ValueError(f"{check}: unknown keys {sorted(unknown)}")
        not_with = value.get("not_with") or []
        if not isinstance(not_with, list) or not all(isinstance(name, str) for name in not_with):
            raise ValueError(f"{check}: not_with must be a list of check names")
        return cls(check, value["outcome"], str(value.get("source") or source_key), surface,
                   str(value.get("model") or ""), tuple(not_with), str(value.get("note") or ""))

    def applies_to(self, model: str | None) -> bool:
        return not self.model or self.model == model

    def fails(self, needs: Iterable[str]) -> bool:
        """Whether a user needing ``needs`` (this check among them) cannot rely on it."""
        return self.outcome in DOCUMENTED_FAILURES or bool(set(self.not_with) & set(needs))

    @property
    def description(self) -> str:
        """The gap in words: 'unsupported on gpt-oss-120b; not together with tools, json_schema (note)'."""
        text = self.outcome + (f" on {self.model}" if self.model else "")
        if self.not_with:
            text += f"; not together with {', '.join(self.not_with)}"
        return text + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class ToolInfo:
    slug: str
    name: str
    kind: str
    hardware: dict[str, str] = field(default_factory=dict)
    quant_formats: frozenset[str] = frozenset()
    caveats: tuple[CaveatInfo, ...] = ()
    # Source keys of the catalog rows behind each hardware target and quantization format, where known.
    hardware_sources: dict[str, str] = field(default_factory=dict)
    quant_format_sources: dict[str, str] = field(default_factory=dict)
    documented_checks: dict[str, DocumentedCheck] = field(default_factory=dict)


@dataclass(frozen=True)
class PriceInfo:
    tool: str
    model: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    source_key: str
    verified_on: str | None = None

    @property
    def blended(self) -> float:
        return blended_price(self.input_usd_per_mtok, self.output_usd_per_mtok)


@dataclass(frozen=True)
class SpeedInfo:
    tool: str
    target: str
    model: str
    workload: str
    concurrency: int
    samples_72h: int
    output_speed_tps: float | None
    ttft_ms: float | None
    hardware: str = ""
    ttfat_ms: float | None = None


@dataclass(frozen=True)
class ReportedSpeed:
    """A speed figure published by a third party for a tool and model, never measured by this site."""

    tool: str
    model: str
    publisher: str
    url: str
    observed_on: str
    output_speed_tps: float | None = None
    ttft_ms: float | None = None
    ttfat_ms: float | None = None
    workload: str = ""
    concurrency: int | None = None
    # The provider's own headline figure: never weighed against a benchmark's.
    self_reported: bool = False


@dataclass(frozen=True)
class CompatInfo:
    tool: str
    target: str
    check: str
    outcome: str
    message: str = ""


@dataclass(frozen=True)
class CatalogData:
    tools: dict[str, ToolInfo]
    prices: tuple[PriceInfo, ...] = ()
    speeds: tuple[SpeedInfo, ...] = ()
    compat: tuple[CompatInfo, ...] = ()
    reported: tuple[ReportedSpeed, ...] = ()


@dataclass(frozen=True)
class ExternalSource:
    """A source outside the catalog's Source table: a publisher's page behind a reported figure."""

    title: str
    url: str
    observed_on: str


@dataclass(frozen=True)
class Reason:
    text: str
    rule: str
    source_key: str | None
    external: ExternalSource | None = None


@dataclass
class RankedTool:
    tool: str
    name: str
    kind: str
    score: float
    reasons: list[Reason]
    lost_because: str = ""
    rank: int = 0
    tied: bool = False
    # An orchestration layer is recommended together with the engine it runs on, never alone.
    companion: str = ""
    companion_name: str = ""


@dataclass
class ExcludedTool:
    tool: str
    name: str
    kind: str
    reasons: list[Reason]
    caveats: tuple[CaveatInfo, ...] = ()


@dataclass(frozen=True)
class SwitchOption:
    """Another answer's top pick: "switch to `name` when `when`", or, when that pick is the same engine with an
    orchestration layer on top, "add `companion_name` to `name` when `when`"."""

    tool: str
    name: str
    companion_name: str
    when: str
    adds_companion: bool = False


@dataclass
class Recommendation:
    profile: Profile
    results: list[RankedTool]
    excluded: list[ExcludedTool]
    not_recommended: list[ExcludedTool]
    warnings: list[ProfileWarning]
    reference_model: str | None = None
    provider_evidence: str | None = None
    switch_when: list[SwitchOption] = field(default_factory=list)
    # The one latency metric the providers were ranked on ("time to first answer token"), when any figure had one.
    latency_metric: str | None = None

    @property
    def top(self) -> RankedTool | None:
        return self.results[0] if self.results else None


# One answer changed at a time, in the order the wizard asks: when it changes the top pick, the page says
# "switch to <that pick> when <this>". Each is (field, value, wording).
SWITCH_VARIANTS: tuple[tuple[str, object, str], ...] = (
    ("fits_fast_memory", "unified_only", "the model only fits in system memory (CPU+GPU offload)"),
    ("context_tokens", 131_072, "contexts run to 100K tokens and more"),
    ("concurrency", 16, "you serve several users at once"),
    ("shared_prefixes", True, "prompts share long prefixes"),
    ("architecture", "moe", "the model is a mixture of experts"),
    ("deployment", "production", "it becomes production serving"),
    ("deployment", "fleet", "you orchestrate a fleet of nodes"),
    ("quantization", "gguf", "you run GGUF files"),
    ("quantization", "onnx", "the model ships as ONNX"),
    ("optimize_for", "latency", "latency matters most"),
    ("optimize_for", "throughput", "you optimize for throughput"),
    ("optimize_for", "cost", "cost matters most"),
    ("optimize_for", "portability", "portability matters most"),
)
MAX_SWITCHES = 4


def recommend(profile: Profile, catalog: CatalogData) -> Recommendation:
    recommendation = _recommend(profile, catalog)
    recommendation.switch_when = _switch_options(profile, catalog, recommendation.top)
    return recommendation


def _switch_options(profile: Profile, catalog: CatalogData, top: RankedTool | None) -> list[SwitchOption]:
    if top is None:
        return []
    options: list[SwitchOption] = []
    seen = {(top.tool, top.companion)}
    for name, value, wording in SWITCH_VARIANTS:
        if getattr(profile, name) == value:
            continue
        try:
            variant = dataclasses.replace(profile, **{name: value})
        except ValueError:
            continue
        results = _recommend(variant, catalog).results
        other = results[0] if results else None
        if other is None or (other.tool, other.companion) in seen or other.kind != top.kind:
            continue
        if other.tool == top.companion and not other.companion:
            # The bare engine the pick already runs on is no other pick.
            continue
        if len(results) > 1 and results[1].tied and results[1].rank == other.rank:
            # A tie at the top names no pick to switch to.
            continue
        seen.add((other.tool, other.companion))
        options.append(SwitchOption(other.tool, other.name, other.companion_name, wording,
                                    adds_companion=other.tool == top.tool))
        if len(options) == MAX_SWITCHES:
            break
    return options


def _recommend(profile: Profile, catalog: CatalogData) -> Recommendation:
    excluded: list[ExcludedTool] = []
    not_recommended: list[ExcludedTool] = []
    # A gap a source limits to one model counts where the providers are compared on that model.
    compared_model = _reference_model(catalog, [
        tool.slug for tool in catalog.tools.values() if tool.kind == PROVIDER and tool.slug not in NEVER_RECOMMENDED
    ])
    failing = _failing_checks(profile, catalog, compared_model)

    for slug, never in NEVER_RECOMMENDED.items():
        tool = catalog.tools.get(slug)
        # The notice belongs where the tool would otherwise be a candidate: on hardware it runs on.
        if tool and _hardware_match(profile, tool) is not None:
            not_recommended.append(ExcludedTool(
                slug, tool.name, tool.kind,
                [Reason(never.reason, "never-recommended", never.citation.source_key)], tool.caveats,
            ))

    engines = _rank_engines(profile, catalog, failing, excluded)
    providers, reference_model, evidence, latency_metric = _rank_providers(profile, catalog, failing, excluded)
    _assign_ranks(engines)
    _assign_ranks(providers)
    results = providers + engines if profile.hardware == "none" else engines + providers
    return Recommendation(profile, results, excluded, not_recommended, profile_warnings(profile), reference_model,
                          evidence, latency_metric=latency_metric)


def _assign_ranks(ranked: list[RankedTool]) -> None:
    """Equal scores share a rank and are marked tied; the order inside a tie carries no meaning."""
    for position, item in enumerate(ranked):
        previous = ranked[position - 1] if position else None
        if previous and abs(previous.score - item.score) < TIE_TOLERANCE:
            item.rank = previous.rank
            item.tied = previous.tied = True
        else:
            item.rank = position + 1


def _failing_checks(profile: Profile, catalog: CatalogData, model: str | None) -> dict[str, list[Reason]]:
    """Required checks each tool fails: a probe's measurement first, else what a source documents (for every
    model, or for `model`, the one providers are compared on)."""
    failing: dict[str, list[Reason]] = {}
    measured = {(status.tool, status.check) for status in catalog.compat}
    for status in catalog.compat:
        if status.check in profile.needs and status.outcome in MEASURED_FAILURES:
            failing.setdefault(status.tool, []).append(Reason(
                f"Measured: {status.check} was {status.outcome} by probe target {status.target}"
                + (f" ({status.message[:160]})" if status.message else "")
                + "; you need it to work.",
                f"compat:{status.check}",
                MEASURED,
            ))
    for tool in catalog.tools.values():
        for check in profile.needs:
            documented = tool.documented_checks.get(check)
            if (documented and documented.applies_to(model) and documented.fails(profile.needs)
                    and (tool.slug, check) not in measured):
                failing.setdefault(tool.slug, []).append(Reason(
                    _documented_gap_text(documented, profile.needs), f"documented-gap:{check}", documented.source_key,
                ))
    return failing


def _documented_gap_text(documented: DocumentedCheck, needs: Iterable[str]) -> str:
    where = f" on {documented.model}" if documented.model else ""
    note = f" ({documented.note})" if documented.note else ""
    if documented.outcome in DOCUMENTED_FAILURES:
        return (f"Documented: {documented.surface or 'API'} — {documented.check} is {documented.outcome}{where}"
                f"{note}; you need it to work.")
    together = [name for name in documented.not_with if name in set(needs)]
    return (f"Documented: {documented.surface or 'API'} — {documented.check} cannot be combined with "
            f"{', '.join(together)}{where}{note}; you need them together.")


def _hardware_match(profile: Profile, tool: ToolInfo) -> tuple[str, str] | None:
    """The best support level the tool has for the profile's hardware, and the target that gives it."""
    matches = [(tool.hardware[target], target) for target in HARDWARE_TARGETS[profile.hardware]
               if target in tool.hardware]
    if not matches:
        return None
    rank = {"native": 0, "provider": 1, "plugin": 2, "partial": 3}
    return min(matches, key=lambda match: rank.get(match[0], len(rank)))


def _rank_engines(
    profile: Profile, catalog: CatalogData, failing: dict[str, list[Reason]], excluded: list[ExcludedTool]
) -> list[RankedTool]:
    recipe = RECIPES_BY_HARDWARE.get(profile.hardware)
    if recipe is None:
        return []
    candidates: list[str] = []
    for slug in [entry.tool for entry in recipe.entries] + list(GUIDE_ENGINES):
        if slug not in candidates and slug in catalog.tools and slug not in NEVER_RECOMMENDED:
            candidates.append(slug)

    runnable: dict[str, tuple[str, str]] = {}
    for slug in candidates:
        tool = catalog.tools[slug]
        match = _hardware_match(profile, tool)
        if match is None:
            excluded.append(ExcludedTool(slug, tool.name, tool.kind, [Reason(
                f"The catalog lists no support for your hardware ({recipe.title}).", "constraint:hardware", None,
            )]))
            continue
        if slug in failing:
            excluded.append(ExcludedTool(slug, tool.name, tool.kind, failing[slug]))
            continue
        runnable[slug] = match
    if not runnable:
        return []

    decided = _decide(profile, recipe, runnable)
    orchestration = recipe.orchestration_for(profile)
    if orchestration and (orchestration.tool not in runnable or decided is None):
        orchestration = None
    # Runner-ups in the order the recipe would have decided: matching qualifiers by priority, then the
    # default, then the entries whose condition does not hold, in the order the guide lists them.
    matching = sorted((e for e in recipe.entries if e.when and e.when(profile)), key=lambda e: e.priority)
    defaults = [e for e in recipe.entries if e.when is None]
    decision_order = matching + defaults + [e for e in recipe.entries if e not in matching and e not in defaults]
    speeds_by_tool = _speeds_by_tool(catalog)
    ranked: list[RankedTool] = []
    for slug, (level, target) in runnable.items():
        tool = catalog.tools[slug]
        hardware_source = tool.hardware_sources.get(target)
        entry = next((entry for entry in recipe.entries if entry.tool == slug), None)
        is_top = bool(decided and slug == decided.tool)
        reasons: list[Reason] = []
        if is_top:
            score = 100.0
            reasons.append(_decision_reason(profile, recipe.title, decided, tool.name))
            first_choice = recipe.decide(profile)
            if first_choice.tool != slug and profile.public_serving and first_choice.tool in LOCAL_ONLY_SERVERS:
                reasons.append(Reason(
                    f"The recipe's first choice, {first_choice.tool}, is a local-only server and you serve more "
                    "than a handful of users in production, so the next entry leads.", "guide:local-only-server",
                    LOCAL_ONLY_CITATION.source_key,
                ))
            elif first_choice.tool != slug:
                reasons.append(Reason(
                    f"The recipe's first choice for your answers, {first_choice.tool}, is not listed for this "
                    "hardware in the catalog, so the next entry leads.", "constraint:hardware", None,
                ))
            if orchestration:
                reasons.append(Reason(
                    f"Run it under {catalog.tools[orchestration.tool].name}: {orchestration.reason}",
                    f"recipe:{recipe.hardware}:{orchestration.tool}", recipe.citation.source_key,
                ))
        elif orchestration and slug == orchestration.tool:
            # Just below the engine it runs on: an orchestration layer is never the answer on its own.
            score = 99.0
            reasons.append(Reason(
                f"Recipe '{recipe.title}': {entry.reason} It orchestrates engines and does not serve a model "
                f"itself, so it is recommended together with {catalog.tools[decided.tool].name}, not instead of it "
                f"(applies when {entry.condition}; it does).",
                f"recipe:{recipe.hardware}", recipe.citation.source_key,
            ))
        elif entry is not None:
            applies = entry.when is None or entry.when(profile)
            if entry.role == EVALUATE:
                score = (60.0 if applies else 50.0) - decision_order.index(entry)
            else:
                score = (80.0 if applies else 65.0) - decision_order.index(entry)
            reasons.append(Reason(
                f"Recipe '{recipe.title}': {entry.reason}"
                + ("" if entry.when is None else f" (applies when {entry.condition}"
                   + ("; it does)" if applies else "; it does not here)")),
                f"recipe:{recipe.hardware}", recipe.citation.source_key,
            ))
        else:
            score = 40.0 - GUIDE_ENGINES.index(slug) * 0.5
            reasons.append(Reason(
                f"Runs on your hardware ({target}) according to the catalog, but the guide's recipe for "
                f"'{recipe.title}' does not name it.", "catalog:hardware", hardware_source,
            ))
        if tool.kind == ORCHESTRATION and not (orchestration and slug == orchestration.tool):
            score = min(score, 30.0)
        if level in {"partial", "plugin"}:
            score -= 10
            reasons.append(Reason(
                f"Support for your hardware is {'via a plugin' if level == 'plugin' else 'partial or experimental'}.",
                "catalog:hardware-level", hardware_source,
            ))
        if slug == "llama-cpp" and profile.multi_device:
            score -= 30
            reasons.append(Reason(
                "The guide says not to use llama.cpp across several GPUs; its RPC backend is documented as a "
                "fragile, insecure proof of concept.", "guide:llama-cpp-multi-gpu", ENGINE_GUIDE,
            ))
        quant_reason = _quant_reason(profile, tool)
        if quant_reason:
            reasons.append(quant_reason)
            if not is_top:
                score -= 15
        if profile.interconnect == "thunderbolt" and slug in {"mlx", "mlx-lm"}:
            reasons.append(Reason(
                "Its distributed layer can span Macs over Thunderbolt (JACCL, RDMA over Thunderbolt).",
                "guide:mlx-thunderbolt", ENGINE_GUIDE,
            ))
        reasons.extend(_engine_measurements(speeds_by_tool.get(slug, [])))
        if profile.public_serving and (slug in LOCAL_ONLY_SERVERS or tool.kind == "desktop_app"):
            score -= 60
            why = LOCAL_ONLY_SERVERS.get(slug, "it is a desktop app for local convenience")
            reasons.append(Reason(
                f"Moved down: you serve more than a handful of users in production, and {why}. Production means "
                "security, observability, backpressure, routing and autoscaling.",
                "guide:local-only-server", LOCAL_ONLY_CITATION.source_key,
            ))
        elif profile.deployment != "local" and slug in {"mlx", "mlx-lm"}:
            reasons.append(Reason(
                "The MLX-LM server is not recommended for production by its authors (basic security checks only).",
                "guide:mlx-server", ENGINE_GUIDE,
            ))
        item = RankedTool(slug, tool.name, tool.kind, score, reasons)
        if is_top and orchestration:
            item.companion, item.companion_name = orchestration.tool, catalog.tools[orchestration.tool].name
        ranked.append(item)
    ranked.sort(key=lambda item: -item.score)
    _explain_engine_losses(ranked, recipe.title, decided)
    return ranked


def _speeds_by_tool(catalog: CatalogData) -> dict[str, list[SpeedInfo]]:
    grouped: dict[str, list[SpeedInfo]] = {}
    for speed in catalog.speeds:
        grouped.setdefault(speed.tool, []).append(speed)
    return grouped


def _engine_measurements(speeds: list[SpeedInfo]) -> list[Reason]:
    """Measured engine speed is shown, never scored: it was taken on the probe target's hardware, not yours."""
    best = max((s for s in speeds if s.samples_72h and s.output_speed_tps), key=lambda s: s.samples_72h,
               default=None)
    if best is None:
        return []
    return [Reason(
        f"Measured for reference (not scored): {best.output_speed_tps:.0f} tokens/s output, 72-hour median over "
        f"{best.samples_72h} requests to {best.target}"
        + (f" on {best.hardware}" if best.hardware else "") + f", workload {best.workload}.",
        "measurement:engine-reference", MEASURED,
    )]


def _decide(profile: Profile, recipe, runnable: dict[str, tuple[str, str]]) -> RecipeEntry | None:
    eligible = {slug for slug in runnable if not (profile.public_serving and slug in LOCAL_ONLY_SERVERS)}
    decided = recipe.decide(profile)
    if decided.tool in eligible:
        return decided
    # The recipe's pick cannot run here (per the catalog) or is a local-only server for public serving:
    # fall back to its next eligible pick.
    for entry in recipe.picks:
        if entry.tool in eligible and (entry.when is None or entry.when(profile)):
            return entry
    return next((entry for entry in recipe.picks if entry.tool in eligible), None)


def _decision_reason(profile: Profile, title: str, entry: RecipeEntry, name: str) -> Reason:
    guide = GUIDE_RULES_BY_ID.get(entry.guide_rule or "")
    if entry.when is None:
        trigger = "as the recipe's default"
    elif entry.when(profile):
        trigger = f"because {entry.condition}"
    else:
        # A fallback: the entries before it cannot run here or step aside for public serving.
        trigger = "as its next entry that can serve your answers"
    text = f"Decided by the hardware recipe '{title}', {trigger}: {entry.reason}"
    if guide and guide.tool == entry.tool:
        text += f" The one-page guide agrees: {guide.situation} → {name}."
    return Reason(text, f"recipe:{profile.hardware}:{entry.tool}", ENGINE_GUIDE)


def _quant_reason(profile: Profile, tool: ToolInfo) -> Reason | None:
    if profile.quantization in NO_FORMAT_ASKED or not tool.quant_formats:
        return None
    wanted = FP4_FORMAT_SLUGS if profile.quantization == "fp4" else (profile.quantization,)
    supported = sorted(set(wanted) & tool.quant_formats)
    if supported:
        return Reason(f"The catalog lists optimized support for {profile.quantization.upper()}.",
                      "catalog:quant-format", tool.quant_format_sources.get(supported[0]))
    return Reason(
        f"The catalog does not list {profile.quantization.upper()} for it; the right format is the one your engine "
        "has optimized kernels for.", "guide:quant-format", ENGINE_GUIDE,
    )


def _explain_engine_losses(ranked: list[RankedTool], title: str, decided: RecipeEntry | None) -> None:
    if not ranked:
        return
    leader = ranked[0]
    for position, item in enumerate(ranked[1:], start=1):
        above = ranked[position - 1]
        if abs(above.score - item.score) < TIE_TOLERANCE:
            item.lost_because = f"Tied with {above.name}: the guide and the catalog give no reason to prefer either."
            continue
        penalties = [reason.text for reason in item.reasons[1:] if not reason.rule.startswith("catalog:quant")]
        if leader.companion == item.tool:
            because = f"Not an engine: it runs on top of {leader.name}, which it is recommended with."
        elif decided and leader.tool == decided.tool:
            because = f"{leader.name} leads because the recipe '{title}' decides it for your answers."
        else:
            because = f"{leader.name} scores higher."
        item.lost_because = because + (f" Also: {penalties[0]}" if penalties and leader.companion != item.tool
                                       else "")


def _reference_model(catalog: CatalogData, providers: list[str]) -> str | None:
    """The model with the most prices from these providers (the first by name on a tie), or None."""
    counts = Counter(price.model for price in catalog.prices if price.tool in providers)
    return min(counts, key=lambda model: (-counts[model], model), default=None)


def _best_speed(profile: Profile, options: list[SpeedInfo], model: str | None) -> SpeedInfo | None:
    """The summary closest to the profile's workload: same model, nearest input size, nearest concurrency."""
    options = [speed for speed in options if speed.samples_72h > 0]
    if not options:
        return None

    def closeness(speed: SpeedInfo) -> tuple:
        tokens = workload_input_tokens(speed.workload) or 0
        return (
            speed.model != model,
            abs(tokens - profile.context_tokens),
            abs(speed.concurrency - profile.concurrency),
            -speed.samples_72h,
            speed.target,
        )

    return min(options, key=closeness)


@dataclass(frozen=True)
class _SpeedEvidence:
    """One provider's speed on the answer's evidence tier, with the reasons that state it."""

    output_speed_tps: float | None
    latency_ms: float | None
    reasons: tuple[Reason, ...]
    latency_label: str = "time to first token"


# The latencies a publisher may report, in the order one is preferred: a publisher reports the time to the first
# answer token for reasoning models, whose first token starts the thinking, not the answer the user waits for.
LATENCY_FIGURES: tuple[tuple[str, str], ...] = (
    (TTFAT.key, TTFAT.label.lower()), (TTFT.key, TTFT.label.lower()),
)


def _measured_evidence(profile: Profile, catalog: CatalogData, slugs: list[str],
                       model: str | None) -> dict[str, _SpeedEvidence]:
    speeds_by_tool = _speeds_by_tool(catalog)
    best = {slug: speed for slug in slugs
            if (speed := _best_speed(profile, speeds_by_tool.get(slug, []), model)) is not None
            and (speed.output_speed_tps or speed.ttft_ms or speed.ttfat_ms)}
    # One latency for every provider: the time to the first answer token when every measured provider has it
    # (a reasoning model's first token starts its thinking), otherwise the time to the first token.
    with_latency = [speed for speed in best.values() if speed.ttft_ms or speed.ttfat_ms]
    latency_key, label = next(
        ((key, label) for key, label in LATENCY_FIGURES
         if with_latency and all(getattr(speed, key) for speed in with_latency)),
        LATENCY_FIGURES[-1],
    )
    evidence: dict[str, _SpeedEvidence] = {}
    for slug, speed in best.items():
        latency = getattr(speed, latency_key)
        reasons = []
        if speed.output_speed_tps:
            reasons.append(Reason(
                f"Measured output speed, 72-hour median: {speed.output_speed_tps:.0f} tokens/s "
                f"({speed.samples_72h} requests to {speed.target}, workload {speed.workload}, "
                f"concurrency {speed.concurrency}).", "measurement:output_speed_tps", MEASURED,
            ))
        if latency:
            reasons.append(Reason(
                f"Measured {label}, 72-hour median: {latency:.0f} ms.", f"measurement:{latency_key}", MEASURED,
            ))
        evidence[slug] = _SpeedEvidence(speed.output_speed_tps, latency, tuple(reasons), label)
    return evidence


def _reported_evidence(profile: Profile, catalog: CatalogData, slugs: list[str],
                       model: str | None) -> dict[str, _SpeedEvidence]:
    """Figures of one publisher only, and one latency metric of it, so they compare like for like: the most
    preferred publisher (scoring.figures, the rule every page follows) among those with figures (with a latency
    figure, for a latency goal), and its latency metric covering most providers (time to first answer token on a
    tie). A provider's own headline figures are left out."""
    figures = [figure for figure in catalog.reported if figure.tool in slugs and model_slug(figure.model) == model
               and not figure.self_reported and (figure.output_speed_tps or figure.ttft_ms or figure.ttfat_ms)]
    if not figures:
        return {}
    latency_keys = [key for key, _ in LATENCY_FIGURES]
    coverage: dict[tuple[str, str], set[str]] = {}
    latest: dict[str, str] = {}
    for figure in figures:
        latest[figure.publisher] = max(latest.get(figure.publisher, ""), figure.observed_on)
        for key in (OUTPUT_SPEED.key, *latency_keys):
            if getattr(figure, key):
                coverage.setdefault((figure.publisher, key), set()).add(figure.tool)
    with_latency = {name: latest[name] for name, key in coverage if key in latency_keys}
    publisher = preferred_publisher(with_latency if profile.optimize_for == "latency" and with_latency else latest)
    latency_key = max(latency_keys, key=lambda key: (len(coverage.get((publisher, key), ())), key == latency_keys[0]))
    label = dict(LATENCY_FIGURES)[latency_key]
    evidence: dict[str, _SpeedEvidence] = {}
    for figure in sorted((f for f in figures if f.publisher == publisher), key=lambda f: f.observed_on):
        latency = getattr(figure, latency_key)
        if not (figure.output_speed_tps or latency):
            continue
        parts = []
        if figure.output_speed_tps:
            parts.append(f"output speed {figure.output_speed_tps:g} tokens/s")
        if latency:
            parts.append(f"{label} {latency:g} ms")
        workload = f", workload {figure.workload.rstrip('.')}" if figure.workload else ""
        concurrency = f", concurrency {figure.concurrency}" if figure.concurrency else ""
        evidence[figure.tool] = _SpeedEvidence(figure.output_speed_tps, latency, (Reason(
            f"Reported by {figure.publisher} on {figure.observed_on} for {model}: {', '.join(parts)}"
            f"{workload}{concurrency}. Not measured by this site.",
            "reported:speed", None, ExternalSource(figure.publisher, figure.url, figure.observed_on),
        ),), label)
    return evidence


def reported_latency_evidence(catalog: CatalogData, *, tools: list[str], model: str) -> dict[str, _SpeedEvidence]:
    """The reported figures the answers would weigh for a latency goal: one publisher, one latency metric."""
    return _reported_evidence(Profile(hardware="none", optimize_for="latency"), catalog, tools, model)


def _documented_evidence(profile: Profile, slugs: list[str]) -> dict[str, _SpeedEvidence]:
    """Seeds sell some providers on per-user speed: that counts for latency only, and as a claim, not a figure."""
    if profile.optimize_for != "latency":
        return {}
    return {
        slug: _SpeedEvidence(1.0, 1.0, (Reason(
            f"Documented, not measured: {DOCUMENTED_SPEED[slug].claim}", "documented:speed",
            DOCUMENTED_SPEED[slug].citation.source_key,
        ),))
        for slug in slugs if slug in DOCUMENTED_SPEED
    }


def _rank_providers(
    profile: Profile, catalog: CatalogData, failing: dict[str, list[Reason]], excluded: list[ExcludedTool]
) -> tuple[list[RankedTool], str | None, str | None, str | None]:
    providers = [
        tool for tool in catalog.tools.values() if tool.kind == PROVIDER and tool.slug not in NEVER_RECOMMENDED
    ]
    if not profile.hosted_allowed:
        for tool in providers:
            excluded.append(ExcludedTool(tool.slug, tool.name, tool.kind, [Reason(
                "You answered that the model may not run on a hosted API.", "constraint:on-premises", None,
            )]))
        return [], None, None, None
    allowed = []
    for tool in providers:
        if tool.slug in failing:
            excluded.append(ExcludedTool(tool.slug, tool.name, tool.kind, failing[tool.slug]))
        else:
            allowed.append(tool)
    if not allowed:
        return [], None, None, None
    slugs = [tool.slug for tool in allowed]
    model = _reference_model(catalog, slugs)
    prices = {price.tool: price for price in catalog.prices if price.model == model}
    tier, evidence = EVIDENCE_DOCUMENTED, {}
    for name, gather in ((EVIDENCE_MEASURED, lambda: _measured_evidence(profile, catalog, slugs, model)),
                         (EVIDENCE_REPORTED, lambda: _reported_evidence(profile, catalog, slugs, model)),
                         (EVIDENCE_DOCUMENTED, lambda: _documented_evidence(profile, slugs))):
        evidence = gather()
        if evidence:
            tier = name
            break
    measured_checks = {(status.tool, status.check) for status in catalog.compat}

    fastest = max((e.output_speed_tps for e in evidence.values() if e.output_speed_tps), default=None)
    quickest = min((e.latency_ms for e in evidence.values() if e.latency_ms), default=None)
    cheapest = min((p.blended for p in prices.values() if p.blended > 0), default=None)
    w_speed, w_ttft, w_price = PROVIDER_WEIGHTS.get(profile.optimize_for, DEFAULT_PROVIDER_WEIGHTS)
    missing = {
        EVIDENCE_MEASURED: "No probe measurement in the last 72 hours while others have one; it gets no credit "
        "for speed.",
        EVIDENCE_REPORTED: "No figure from the same publisher as the others; it gets no credit for speed.",
        EVIDENCE_DOCUMENTED: "Nothing measured, reported or documented about its speed for your goal; it gets no "
        "credit for speed.",
    }[tier]

    ranked: list[RankedTool] = []
    for tool in allowed:
        reasons: list[Reason] = []
        mine, price = evidence.get(tool.slug), prices.get(tool.slug)
        speed_part = ttft_part = price_part = 0.0
        if mine:
            reasons.extend(mine.reasons)
            if mine.output_speed_tps and fastest:
                speed_part = mine.output_speed_tps / fastest
            if mine.latency_ms and quickest:
                ttft_part = quickest / mine.latency_ms
        else:
            # Only the measured tier speaks for this site's probes; a missing reported or documented figure does not.
            reasons.append(Reason(missing, "measurement:none", MEASURED if tier == EVIDENCE_MEASURED else None))
        if price and cheapest:
            price_part = cheapest / price.blended if price.blended > 0 else 1.0
            reasons.append(Reason(
                f"Price for {model}: {format_usd(price.input_usd_per_mtok)} in / {format_usd(price.output_usd_per_mtok)} out per 1M "
                f"tokens (blended 3:1: ${price.blended:.3f})"
                + (f", verified {price.verified_on}" if price.verified_on else "") + ".",
                "price:per-mtok", price.source_key,
            ))
        elif model:
            reasons.append(Reason(f"The catalog has no per-token price for {model}.", "price:none", None))
        unmeasured = [need for need in profile.needs if (tool.slug, need) not in measured_checks]
        if unmeasured:
            reasons.append(Reason(
                f"Not yet measured for: {', '.join(unmeasured)}; test these before relying on them.",
                "compat:unmeasured", MEASURED,
            ))
        if profile.optimize_for == "privacy":
            reasons.append(Reason(
                "You optimize for privacy: prompts leave your machines with any hosted API.", "goal:privacy",
                COMPARISON,
            ))
        score = round(100 * (w_speed * speed_part + w_ttft * ttft_part + w_price * price_part), 2)
        ranked.append(RankedTool(tool.slug, tool.name, tool.kind, score, reasons))
    ranked.sort(key=lambda item: -item.score)
    for better, item in zip(ranked, ranked[1:]):
        item.lost_because = _provider_loss(better, item, evidence, prices, tier)
    latency_metric = next((e.latency_label for e in evidence.values() if e.latency_ms), None) \
        if tier != EVIDENCE_DOCUMENTED else None
    return ranked, model, tier, latency_metric


def _provider_loss(better: RankedTool, item: RankedTool, evidence: dict[str, _SpeedEvidence], prices: dict,
                   tier: str) -> str:
    if abs(item.score - better.score) < TIE_TOLERANCE:
        return f"Tied with {better.name}: the {tier} evidence and the prices give no reason to prefer either."
    parts = []
    mine, theirs = evidence.get(item.tool), evidence.get(better.tool)
    label = {EVIDENCE_MEASURED: "median", EVIDENCE_REPORTED: "reported"}.get(tier)
    if theirs and (not mine):
        parts.append({EVIDENCE_MEASURED: "it has no recent speed measurement",
                      EVIDENCE_REPORTED: "it has no reported speed figure from the same publisher",
                      EVIDENCE_DOCUMENTED: "no source documents it as fast per user"}[tier])
    elif label and mine and theirs and mine.output_speed_tps and theirs.output_speed_tps and \
            mine.output_speed_tps < theirs.output_speed_tps:
        parts.append(f"slower {label} output ({mine.output_speed_tps:.0f} vs {theirs.output_speed_tps:.0f} tokens/s)")
    if label and mine and theirs and mine.latency_ms and theirs.latency_ms and mine.latency_ms > theirs.latency_ms:
        parts.append(f"slower {mine.latency_label} ({mine.latency_ms:.0f} vs {theirs.latency_ms:.0f} ms)")
    my_price, their_price = prices.get(item.tool), prices.get(better.tool)
    if my_price and their_price and my_price.blended > their_price.blended:
        parts.append(f"higher blended price (${my_price.blended:.3f} vs ${their_price.blended:.3f})")
    if not parts:
        parts.append("a lower combined score for your goal")
    return f"Below {better.name}: " + "; ".join(parts) + "."
