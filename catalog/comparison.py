"""The compare page's matrix: one row per fact any compared tool has, one cell per tool.

Cells say yes, partial, no or not stated, in words (colour only repeats them). "No" is used only where a
source says so (a documented check that is rejected, ignored or unsupported); a fact no source states for
a tool is "not stated", never "no".

What the page, its CSV and the compare API show of each tool depends on that tool alone, so it is kept
per tool (`ComparedTool`, plain data) in the read cache under that tool's own rows (`compared_tools`);
whatever depends on the set compared (which rows exist, in which order, where the tools differ) is
built from those pieces, and the page keeps it rendered per set under the rows of exactly the tools in
it (catalog.views.comparison_table).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from catalog.models import HardwareSupport, Source, Tool, ToolApiSurface
from catalog.selectors import REFERENCE_MODEL_SLUG, compare_tools, compare_values, headline_price_value, tool_ids
from core.cache import Fingerprints, per_owner_read
from scoring.profile import NEEDS_CHOICES

YES = "yes"
PARTIAL = "partial"
NO = "no"
UNKNOWN = "unknown"
TEXT = "text"
STATE_LABELS = {YES: "Yes", PARTIAL: "Partial", NO: "No", UNKNOWN: "Not stated"}

CHECK_LABELS = dict(NEEDS_CHOICES)
_CHECK_STATES = {
    ToolApiSurface.CheckOutcome.SUPPORTED: YES,
    ToolApiSurface.CheckOutcome.PARTIAL: PARTIAL,
    ToolApiSurface.CheckOutcome.IGNORED: NO,
    ToolApiSurface.CheckOutcome.UNSUPPORTED: NO,
    ToolApiSurface.CheckOutcome.REJECTED: NO,
}
_HARDWARE_STATES = {
    HardwareSupport.Level.NATIVE: YES,
    HardwareSupport.Level.PROVIDER: YES,
    HardwareSupport.Level.PARTIAL: PARTIAL,
    HardwareSupport.Level.PLUGIN: PARTIAL,
}


@dataclass(frozen=True)
class Cell:
    state: str
    text: str = ""
    note: str = ""

    @property
    def label(self) -> str:
        return self.text if self.state == TEXT else STATE_LABELS[self.state]


@dataclass(frozen=True)
class MatrixRow:
    key: str
    label: str
    cells: list[Cell]
    help: str = ""

    @property
    def differs(self) -> bool:
        first = (self.cells[0].state, self.cells[0].text)
        return any((cell.state, cell.text) != first for cell in self.cells[1:])


@dataclass(frozen=True)
class MatrixSection:
    key: str
    title: str
    rows: list[MatrixRow] = field(default_factory=list)

    def only_differences(self) -> MatrixSection:
        return MatrixSection(self.key, self.title, [row for row in self.rows if row.differs])


# One fact of one tool in a section built by _fact_rows: (key, label, position, cell).
Fact = tuple[str, str, int, Cell]


@dataclass(frozen=True)
class ComparedTool:
    """What a comparison shows of one tool, as plain data."""

    slug: str
    name: str
    kind_display: str
    sources: list[Source]
    values: list[Any]  # catalog.selectors.compare_values
    summary: list[Cell]  # one per SUMMARY_ROWS row
    facts: dict[str, list[Fact]]  # per FACT_SECTIONS section


@dataclass(frozen=True)
class CompareMatrix:
    tools: list[ComparedTool]
    sections: list[MatrixSection]

    @property
    def row_count(self) -> int:
        return sum(len(section.rows) for section in self.sections)

    @property
    def differing_count(self) -> int:
        return sum(row.differs for section in self.sections for row in section.rows)

    def only_differences(self) -> CompareMatrix:
        sections = [section.only_differences() for section in self.sections]
        return CompareMatrix(self.tools, [section for section in sections if section.rows])


def _text(value: Any) -> Cell:
    return Cell(TEXT, str(value)) if value not in (None, "") else Cell(UNKNOWN)


def same_model_price(tool: Tool) -> Cell:
    """The tool's per-token price for the model every provider prices, so the row compares like with like."""
    headline = headline_price_value(tool)
    if headline and headline["is_reference_model"]:
        return Cell(TEXT, f"${Decimal(headline['input_usd_per_mtok']):.2f} in / "
                          f"${Decimal(headline['output_usd_per_mtok']):.2f} out per 1M tokens")
    if headline and headline["free"] and tool.kind != Tool.Kind.PROVIDER:
        return Cell(TEXT, "Free software: you pay for the hardware")
    return Cell(UNKNOWN)


def _fact_rows(per_tool_facts: list[list[Fact]]) -> list[MatrixRow]:
    """One row per fact key any tool has, in catalog order; tools without it get "not stated"."""
    per_tool = [{key: (label, position, cell) for key, label, position, cell in facts} for facts in per_tool_facts]
    keys: dict[str, tuple[str, int]] = {}
    for facts_of_tool in per_tool:
        for key, (label, position, _) in facts_of_tool.items():
            keys.setdefault(key, (label, position))
    ordered = sorted(keys.items(), key=lambda item: (item[1][1], item[1][0].lower()))
    return [
        MatrixRow(key, label, [facts_of_tool[key][2] if key in facts_of_tool else Cell(UNKNOWN)
                               for facts_of_tool in per_tool])
        for key, (label, _) in ordered
    ]


def _hardware(tool: Tool):
    for support in tool.hardware_support.all():
        yield (f"hardware:{support.hardware.slug}", support.hardware.name, support.hardware.position,
               Cell(_HARDWARE_STATES.get(support.level, PARTIAL),
                    note=support.get_level_display() if support.level not in ("native",) else support.notes))


def _formats(tool: Tool):
    for support in tool.quant_format_support.all():
        yield f"format:{support.quant_format.slug}", support.quant_format.name, 0, Cell(YES, note=support.notes)


def _features(tool: Tool):
    for support in tool.feature_support.all():
        yield f"feature:{support.feature.slug}", support.feature.name, support.feature.position, Cell(
            YES, note=support.notes)


def _surfaces(tool: Tool):
    for support in tool.api_surface_support.all():
        state = PARTIAL if support.gaps else YES
        yield (f"api:{support.api_surface.slug}", support.api_surface.name, 0,
               Cell(state, note="Documented gaps; see the API gaps rows and the tool page." if support.gaps else ""))


def _checks(tool: Tool):
    order = list(CHECK_LABELS)
    for support in tool.api_surface_support.all():
        for check, outcome in (support.checks or {}).items():
            label = CHECK_LABELS.get(check, check)
            position = order.index(check) if check in order else len(order)
            yield (f"check:{check}", f"{label} ({check})", position,
                   Cell(_CHECK_STATES.get(outcome, UNKNOWN),
                        note=f"{ToolApiSurface.CheckOutcome(outcome).label} ({support.api_surface.name})"
                        if outcome in ToolApiSurface.CheckOutcome.values else outcome))


def _rating(tool: Tool) -> Cell:
    return Cell(TEXT, f"{tool.rating:.1f} / 5") if tool.rating is not None else Cell(TEXT, "Not rated by any source")


def _caveats(tool: Tool) -> Cell:
    caveats = tool.caveats.all()
    return Cell(TEXT, "; ".join(caveat.title for caveat in caveats)) if caveats else Cell(TEXT, "None listed")


# The summary section: (key, label, help, the cell of one tool).
SUMMARY_ROWS: tuple[tuple[str, str, str, Callable[[Tool], Cell]], ...] = (
    ("kind", "Kind", "", lambda tool: Cell(TEXT, tool.get_kind_display())),
    ("ideal_for", "Ideal for", "", lambda tool: _text(tool.ideal_for)),
    ("rating", "Rating", "", _rating),
    ("licence", "Licence", "", lambda tool: _text(tool.licence.spdx_id if tool.licence else None)),
    ("same_model_price", f"Price for {REFERENCE_MODEL_SLUG}",
     "The one model every hosted provider here prices, so the prices compare like for like.", same_model_price),
    ("caveats", "Warnings", "", _caveats),
    ("last_verified", "Last verified", "",
     lambda tool: _text(tool.last_verified.isoformat() if tool.last_verified else None)),
)
# The sections of facts: (key, title, the facts of one tool).
FACT_SECTIONS: tuple[tuple[str, str, Callable[[Tool], Iterable[Fact]]], ...] = (
    ("hardware", "Hardware", _hardware),
    ("formats", "Quantization formats", _formats),
    ("features", "Features", _features),
    ("api", "API surfaces", _surfaces),
    ("gaps", "API gaps (documented request parameters)", _checks),
)


def compared_tool(tool: Tool) -> ComparedTool:
    """The comparison's piece of one tool loaded by catalog.selectors.compare_tools."""
    return ComparedTool(
        slug=tool.slug,
        name=tool.name,
        kind_display=tool.get_kind_display(),
        sources=list(tool.sources.all()),
        values=compare_values(tool),
        summary=[cell(tool) for _, _, _, cell in SUMMARY_ROWS],
        facts={key: list(facts(tool)) for key, _, facts in FACT_SECTIONS},
    )


def compared_tools_by_id(*, ids: Mapping[str, int], fingerprints: Fingerprints | None = None) -> dict[int, ComparedTool]:
    """{tool id: piece} of the tools of `ids` ({slug: id}, in the order to show), each cached under its own
    tool's rows (`fingerprints`: core.cache.read_fingerprints of the catalog, when the caller has them)."""
    pieces = per_owner_read(
        kind="compared-tool", scopes=("catalog",), owners=list(ids.values()),
        build=lambda missing: {tool.pk: compared_tool(tool) for tool in compare_tools(ids=missing)},
        fingerprints=fingerprints,
    )
    return {tool_id: pieces[tool_id] for tool_id in ids.values() if tool_id in pieces}


def compared_tools(*, slugs: list[str], fingerprints: Fingerprints | None = None) -> list[ComparedTool]:
    """The pieces of the tools named by already-validated slugs, in that order (see compared_tools_by_id)."""
    found = tool_ids(slugs=slugs)
    ids = {slug: found[slug] for slug in slugs if slug in found}
    return list(compared_tools_by_id(ids=ids, fingerprints=fingerprints).values())


def compare_matrix(tools: list[ComparedTool]) -> CompareMatrix:
    summary = [
        MatrixRow(key, label, [tool.summary[position] for tool in tools], help=help_text)
        for position, (key, label, help_text, _) in enumerate(SUMMARY_ROWS)
    ]
    sections = [
        MatrixSection("summary", "Summary", summary),
        *(MatrixSection(key, title, _fact_rows([tool.facts[key] for tool in tools]))
          for key, title, _ in FACT_SECTIONS),
    ]
    return CompareMatrix(tools, [section for section in sections if section.rows])


def matrix_csv_rows(matrix: CompareMatrix) -> Iterable[list[str]]:
    yield ["section", "aspect", *(tool.name for tool in matrix.tools)]
    for section in matrix.sections:
        for row in section.rows:
            yield [section.title, row.label, *(cell.label for cell in row.cells)]
