"""The link every page with data gives to the same data in the API, as JSON and, for lists, CSV."""
from __future__ import annotations

from urllib.parse import urlencode

from django import template

register = template.Library()


@register.inclusion_tag("includes/_data_links.html", takes_context=True)
def data_links(context: template.Context, json_url: str, *, csv: bool = False, query: str | None = None,
               renames: str = "") -> dict:
    """Links to `json_url` and, with `csv`, its CSV. The query is `query` when given, else the page's own query
    string without its empty values (the API reads an empty value as a value); `renames` maps page parameters to
    the API's names ("sort:ordering")."""
    if query is None:
        names = dict(pair.split(":", 1) for pair in renames.split(",") if pair)
        request = context.get("request")
        pairs = [(names.get(key, key), value) for key, values in (request.GET.lists() if request else ())
                 for value in values if value != ""]
        query = urlencode(pairs)
    separator = "&" if "?" in json_url else "?"
    json_link = f"{json_url}{separator}{query}" if query else json_url
    csv_link = f"{json_link}{'&' if '?' in json_link else '?'}format=csv" if csv else ""
    return {"json_link": json_link, "csv_link": csv_link}
