"""What the probes know about one catalog tool, for its page.

The catalog sits below the probes and does not import them: its tool page template loads this library
and asks for the section, so the measurements reach the page without the catalog knowing where they
come from.
"""
from django import template

from catalog.models import Tool
from probes.selectors.tool_measurements import tool_measurements

register = template.Library()


@register.inclusion_tag("probes/_tool_measurements.html")
def tool_measurements_section(tool: Tool) -> dict:
    return {"tool_measurements": tool_measurements(tool=tool)}
