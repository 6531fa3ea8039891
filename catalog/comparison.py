"""The compare page's matrix: one row per fact any compared tool has, one cell per tool.

Cells say yes, partial, no or not stated, in words (colour only repeats them). "No" is used only where a
source says so (a documented absence, or a documented check that is rejected, ignored or unsupported); a fact
no source states for a tool is "not stated", never "no". A row differs only where two tools have known,
different values; the tools for which a row is not stated are listed apart. The tools come from
catalog.selectors.tool_compare with their details prefetched, so building the matrix runs no query.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from decimal import Decimal
from typing import Any

from catalog.models import HardwareSupport, Tool, ToolApiSurface
from catalog.selectors import CHECK_LABELS, REFERENCE_MODEL_SLUG, headline_price_value

YES = "yes"
PARTIAL = "partial"
NO = "no"
UNKNOWN = "unknown"
TEXT = "text"
STATE_LABELS = {YES: "Yes", PARTIAL: "Partial", NO: "No", UNKNOWN: "Not stated"}

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
    tools: tuple[str, ...] = ()

    @property
    def differs(self) -> bool:
        """Two tools have known values here, and they are not the same."""
        return len({(cell.state, cell.text) for cell in self.cells if cell.state != UNKNOWN}) > 1

    @property
    def labelled_cells(self) -> list[tuple[str, Cell]]:
        """(tool name, cell) pairs: a phone shows each cell under its tool's name."""
        return list(zip(self.tools, self.cells, strict=True))

    @property
    def not_stated_for(self) -> list[str]:
        return [name for name, cell in zip(self.tools, self.cells, strict=True) if cell.state == UNKNOWN]


@dataclass(frozen=True)
class MatrixSection:
    key: str
    title: str
    rows: list[MatrixRow] = field(default_factory=list)

    def only_differences(self) -> MatrixSection:
        return MatrixSection(self.key, self.title, [row for row in self.rows if row.differs])


@dataclass(frozen=True)
class CompareMatrix:
    tools: list[Tool]
    sections: list[MatrixSection]

    @property
    def row_count(self) -> int:
        return sum(len(section.rows) for section in self.sections)

    @property
    def differing_count(self) -> int:
        return sum(row.differs for section in self.sections for row in section.rows)

    @property
    def partly_stated_count(self) -> int:
        return sum(bool(row.not_stated_for) for section in self.sections for row in section.rows)

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


def _fact_rows(tools: list[Tool], facts: Callable[[Tool], Iterable[tuple[str, str, int, Cell]]]) -> list[MatrixRow]:
    """One row per fact key any tool has, in catalog order; tools without it get "not stated"."""
    per_tool = [{key: (label, position, cell) for key, label, position, cell in facts(tool)} for tool in tools]
    keys: dict[str, tuple[str, int]] = {}
    for facts_of_tool in per_tool:
        for key, (label, position, _) in facts_of_tool.items():
            keys.setdefault(key, (label, position))
    ordered = sorted(keys.items(), key=lambda item: (item[1][1], item[1][0].lower()))
    names = tuple(tool.name for tool in tools)
    return [
        MatrixRow(key, label, [facts_of_tool[key][2] if key in facts_of_tool else Cell(UNKNOWN)
                               for facts_of_tool in per_tool], tools=names)
        for key, (label, _) in ordered
    ]


def _absent(tool: Tool, aspect: str, prefix: str):
    """The tool's documented absences of one aspect, as "no" cells under the same keys as the supported facts."""
    for absence in tool.absences.all():
        if absence.aspect == aspect:
            subject = absence.subject
            yield (f"{prefix}:{subject.slug}", subject.name, getattr(subject, "position", 0),
                   Cell(NO, note=absence.notes or f"Not supported, per {absence.source.title}"))


def _hardware(tool: Tool):
    for support in tool.hardware_support.all():
        yield (f"hardware:{support.hardware.slug}", support.hardware.name, support.hardware.position,
               Cell(_HARDWARE_STATES.get(support.level, PARTIAL),
                    note=support.get_level_display() if support.level not in ("native",) else support.notes))
    yield from _absent(tool, "hardware", "hardware")


def _formats(tool: Tool):
    for support in tool.quant_format_support.all():
        yield f"format:{support.quant_format.slug}", support.quant_format.name, 0, Cell(YES, note=support.notes)
    yield from _absent(tool, "quant_format", "format")


def _features(tool: Tool):
    for support in tool.feature_support.all():
        yield f"feature:{support.feature.slug}", support.feature.name, support.feature.position, Cell(
            YES, note=support.notes)
    yield from _absent(tool, "feature", "feature")


def _surfaces(tool: Tool):
    for support in tool.api_surface_support.all():
        state = PARTIAL if support.gaps else YES
        yield (f"api:{support.api_surface.slug}", support.api_surface.name, 0,
               Cell(state, note="Documented gaps; see the API gaps rows and the tool page." if support.gaps else ""))
    yield from _absent(tool, "api_surface", "api")


def _checks(tool: Tool):
    order = list(CHECK_LABELS)
    for support in tool.api_surface_support.all():
        for entry in support.documented_checks():
            label = CHECK_LABELS.get(entry.check, entry.check)
            position = order.index(entry.check) if entry.check in order else len(order)
            state = _CHECK_STATES.get(entry.outcome, UNKNOWN)
            # A limit to one model or a combination that fails makes a working parameter a partial one.
            if state == YES and (entry.model or entry.not_with):
                state = PARTIAL
            yield (f"check:{entry.check}", f"{label} ({entry.check})", position,
                   Cell(state, note=f"{entry.description} ({support.api_surface.name}; source {entry.source_key})"))


def _rating(tool: Tool) -> Cell:
    return Cell(TEXT, f"{tool.rating:.1f} / 5") if tool.rating is not None else Cell(TEXT, "Not rated by any source")


def compare_matrix(tools: list[Tool]) -> CompareMatrix:
    row = partial(MatrixRow, tools=tuple(tool.name for tool in tools))
    summary = [
        row("kind", "Kind", [Cell(TEXT, tool.get_kind_display()) for tool in tools]),
        row("ideal_for", "Ideal for", [_text(tool.ideal_for) for tool in tools]),
        row("rating", "Rating", [_rating(tool) for tool in tools]),
        row("licence", "Licence", [_text(tool.licence.spdx_id if tool.licence else None) for tool in tools]),
        row("same_model_price", f"Price for {REFERENCE_MODEL_SLUG}", [same_model_price(tool) for tool in tools],
                  help="The one model every hosted provider here prices, so the prices compare like for like."),
        row("caveats", "Warnings", [
            Cell(TEXT, "; ".join(caveat.title for caveat in tool.caveats.all())) if tool.caveats.all()
            else Cell(TEXT, "None listed") for tool in tools
        ]),
        row("last_verified", "Last verified", [_text(tool.last_verified.isoformat() if tool.last_verified
                                                           else None) for tool in tools]),
    ]
    sections = [
        MatrixSection("summary", "Summary", summary),
        MatrixSection("hardware", "Hardware", _fact_rows(tools, _hardware)),
        MatrixSection("formats", "Quantization formats", _fact_rows(tools, _formats)),
        MatrixSection("features", "Features", _fact_rows(tools, _features)),
        MatrixSection("api", "API surfaces", _fact_rows(tools, _surfaces)),
        MatrixSection("gaps", "API gaps (documented request parameters)", _fact_rows(tools, _checks)),
    ]
    return CompareMatrix(tools, [section for section in sections if section.rows])


def matrix_csv_rows(matrix: CompareMatrix) -> Iterable[list[str]]:
    yield ["section", "aspect", *(tool.name for tool in matrix.tools)]
    for section in matrix.sections:
        for row in section.rows:
            yield [section.title, row.label, *(cell.label for cell in row.cells)]
