import re

import pytest
from django.urls import reverse

from tests.catalog.pages_data import build_sample_catalog
from tests.catalog.test_selectors import _grow_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog():
    return build_sample_catalog()


def header_tools(html: str) -> list[str]:
    thead = html.split("<thead>")[1].split("</thead>")[0]
    return re.findall(r'href="/tools/([^/]+)/"', thead)


@pytest.mark.parametrize(
    "slugs",
    [["groq", "cerebras"], ["llama-cpp", "vllm", "mlx"], ["groq", "cerebras", "vllm", "tgi"]],
)
def test_compare_two_to_four_tools(client, catalog, slugs):
    response = client.get(reverse("catalog:compare"), {"tools": ",".join(slugs)})
    assert response.status_code == 200
    html = response.content.decode()
    assert header_tools(html) == slugs
    assert 'class="notice notice-error"' not in html
    assert html.count('data-row="') == 12


def test_compare_accepts_repeated_params_from_checkboxes(client, catalog):
    response = client.get(reverse("catalog:compare") + "?tools=groq&tools=cerebras&tools=vllm")
    assert response.status_code == 200
    assert header_tools(response.content.decode()) == ["groq", "cerebras", "vllm"]


def test_differing_rows_are_marked_in_text_not_only_colour(client, catalog):
    html = client.get(reverse("catalog:compare"), {"tools": "groq,cerebras"}).content.decode()
    kind_row = re.search(r'<tr class="([^"]+)" data-row="kind">\s*<th scope="row">([^<]+)(.*?)</th>', html, re.S)
    assert kind_row.group(1) == "row-same" and "Differs" not in kind_row.group(3)
    rating_row = re.search(r'<tr class="([^"]+)" data-row="rating">\s*<th scope="row">([^<]+)(.*?)</th>', html, re.S)
    assert rating_row.group(1) == "row-same"
    prices_row = re.search(r'<tr class="([^"]+)" data-row="price_items">\s*<th scope="row">([^<]+)(.*?)</th>', html, re.S)
    assert prices_row.group(1) == "row-differs" and "Differs" in prices_row.group(3)
    assert "Rejects logprobs" not in html  # gaps are summarised in the table, detailed on the tool page
    assert "OpenAI chat completions: gaps documented" in html
    assert "$0.35 in / $0.75 out per 1M tokens" in html
    assert "$5.00 credit" in html


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("tools=", "Choose 2 to 4 tools to compare."),
        ("tools=groq", "Only one tool was chosen (groq)"),
        ("tools=groq,cerebras,vllm,tgi,mlx", "5 tools were chosen; at most 4 fit side by side."),
        ("tools=groq,groq", "repeated: groq"),
        ("tools=groq&tools=groq", "repeated: groq"),
        ("tools=groq,ghost,phantom", "No tool with the slug: ghost, phantom."),
        ("tools=%3Cscript%3E,groq", "These are not tool slugs: &#x27;&lt;script&gt;&#x27;."),
    ],
)
def test_bad_compare_requests_get_a_message_and_a_picker(client, catalog, query, message):
    response = client.get(reverse("catalog:compare") + "?" + query)
    assert response.status_code == 400
    html = response.content.decode()
    assert "These tools cannot be compared:" in html
    assert message in html
    assert "<script>" not in html
    assert "Tick 2 to 4 tools" in html
    assert html.count('name="tools"') == 6


def test_compare_without_tools_shows_only_the_picker(client, catalog):
    response = client.get(reverse("catalog:compare"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Choose tools to compare" in html and "cannot be compared" not in html


def test_with_param_pretics_a_tool_in_the_picker(client, catalog):
    html = client.get(reverse("catalog:compare"), {"with": "vllm"}).content.decode()
    assert 'value="vllm" checked' in html
    assert 'value="groq" checked' not in html


@pytest.mark.parametrize("count", [5, 50])
def test_compare_query_count_is_constant(client, django_assert_num_queries, count):
    _grow_catalog(count)
    # fingerprint, slug check, tools + 7 prefetches, picker
    with django_assert_num_queries(11):
        response = client.get(reverse("catalog:compare"), {"tools": "grown-0,grown-1,grown-2,grown-3"})
    assert response.status_code == 200
    assert response.content.decode().count('name="tools"') == count


def test_list_entries_not_every_tool_has_are_emphasised(client, catalog):
    html = client.get(reverse("catalog:compare"), {"tools": "vllm,tgi"}).content.decode()
    features = html.split('data-row="features"')[1].split("</tr>")[0]
    assert "<li>Continuous batching</li>" in features  # both have it
    assert '<li class="only-some"><strong>Multi-LoRA</strong>' in features
    assert "(not every tool compared)" in features
    caveats = html.split('data-row="caveats"')[1].split("</tr>")[0]
    assert "Warning: Someone must own upgrades and network exposure" in caveats


@pytest.mark.parametrize("raw", ["a%00,b", "llama-cpp,%3Cscript%3E", "vllm," + "x" * 200])
def test_malformed_slugs_get_a_message_not_a_500(client, raw):
    response = client.get(f"/compare/?tools={raw}")
    assert response.status_code == 400
    assert "not tool slugs" in response.content.decode()
    assert "<script>" not in response.content.decode()
