"""What the probes know about one catalog tool, for its page.

The catalog sits below the probes and does not import them: its tool page template loads this library
and asks for the section, so the measurements reach the page without the catalog knowing where they
come from.
"""
from django import template

from catalog.models import Tool
from probes.selectors.language_models import COLUMN_METRICS, model_comparisons
from probes.selectors.tool_measurements import tool_measurements

register = template.Library()


@register.inclusion_tag("probes/_tool_measurements.html")
def tool_measurements_section(tool: Tool) -> dict:
    return {"tool_measurements": tool_measurements(tool=tool)}


@register.inclusion_tag("probes/_tool_model_figures.html")
def tool_model_figures_section(tool: Tool, heading_id: str) -> dict:
    """Per model the tool serves or runs, the one figure of each metric that every page shows (the model page's
    row of this tool)."""
    slugs = [offering.model.slug for offering in tool.model_offerings.all()]
    rows = [row for comparison in model_comparisons(slugs=slugs) for row in comparison.rows
            if row.tool.pk == tool.pk] if slugs else []
    return {"rows": [row for row in rows if any(figure for _, figure in row.figure_cells)],
            "metrics": COLUMN_METRICS, "heading_id": heading_id}
