"""The use cases and hardware recipes that name one catalog tool, for its page.

The catalog does not import the recommendation app: its tool page template loads this library and asks
for the section, as it does for the probes' measurements.
"""
from django import template

from catalog.models import Tool
from recommend.selectors import use_cases_naming

register = template.Library()


@register.inclusion_tag("recommend/_tool_use_cases.html")
def tool_use_cases_section(tool: Tool) -> dict:
    return {"tool": tool, "mentions": use_cases_naming(tool=tool)}
