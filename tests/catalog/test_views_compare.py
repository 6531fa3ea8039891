import csv
import io
import re

import pytest
from django.urls import reverse

from tests.catalog.test_selectors import _grow_catalog

pytestmark = pytest.mark.django_db


def header_tools(html: str) -> list[str]:
    thead = html.split("<thead>")[1].split("</thead>")[0]
    return re.findall(r'href="/tools/([^/]+)/"', thead)


def matrix_rows(html: str) -> dict[str, list[str]]:
    """data-row key -> the cells' data-state values, in tool order."""
    rows = {}
    for key, body in re.findall(r'<tr class="row-[a-z]+" data-row="([^"]+)">(.*?)</tr>', html, re.S):
        rows[key] = re.findall(r'data-state="([a-z]+)"', body)
    return rows


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
    assert all(len(states) == len(slugs) for states in matrix_rows(html).values())


def test_compare_accepts_repeated_params_from_checkboxes(client, catalog):
    response = client.get(reverse("catalog:compare") + "?tools=groq&tools=cerebras&tools=vllm")
    assert response.status_code == 200
    assert header_tools(response.content.decode()) == ["groq", "cerebras", "vllm"]


def test_matrix_rows_are_the_catalog_facts_of_the_compared_tools(client, catalog):
    html = client.get(reverse("catalog:compare"), {"tools": "llama-cpp,vllm,tgi,groq"}).content.decode()
    rows = matrix_rows(html)

    hardware = [key for key in rows if key.startswith("hardware:")]
    # Every target any of them lists, in the catalog's order; none that no compared tool has (cerebras-wse).
    assert hardware == ["hardware:nvidia-cuda", "hardware:apple-silicon", "hardware:groq-lpu"]
    assert rows["hardware:nvidia-cuda"] == ["yes", "yes", "yes", "unknown"]
    assert rows["hardware:apple-silicon"] == ["yes", "unknown", "unknown", "unknown"]
    assert rows["feature:multi-lora"] == ["unknown", "yes", "unknown", "unknown"]
    assert [key for key in rows if key.startswith("format:")] == ["format:fp8", "format:gguf"]
    # A gap documented as rejected is "no"; a supported one "yes"; unknown where no source says.
    assert rows["check:logprobs"] == ["unknown", "yes", "unknown", "no"]
    assert rows["api:openai-chat"] == ["unknown", "yes", "unknown", "partial"]
    assert "Probabilities of the generated tokens (logprobs)" in html


def test_rows_differ_only_where_the_tools_do_and_say_so_in_text(client, catalog):
    html = client.get(reverse("catalog:compare"), {"tools": "groq,cerebras"}).content.decode()

    kind_row = re.search(r'<tr class="([^"]+)" data-row="kind">(.*?)</tr>', html, re.S)
    assert kind_row.group(1) == "row-same" and "(differs)" not in kind_row.group(2)
    price_row = re.search(r'<tr class="([^"]+)" data-row="same_model_price">(.*?)</tr>', html, re.S)
    assert price_row.group(1) == "row-differs" and "(differs)" in price_row.group(2)
    assert "$0.15 in / $0.60 out per 1M tokens" in price_row.group(2)
    assert "$0.35 in / $0.75 out per 1M tokens" in price_row.group(2)


def test_two_free_engines_have_the_same_price_row(client, catalog):
    for tool in ("llama-cpp", "vllm"):
        catalog[tool].price_items.create(item=f"{tool} (self-hosted)", unit="free", tier="free",
                                         source=catalog[tool].sources.first())
    html = client.get(reverse("catalog:compare"), {"tools": "llama-cpp,vllm"}).content.decode()

    price_row = re.search(r'<tr class="([^"]+)" data-row="same_model_price">(.*?)</tr>', html, re.S)
    assert price_row.group(1) == "row-same"
    assert "Free software: you pay for the hardware" in price_row.group(2)


def test_ideal_for_row_and_warnings_row(client, catalog):
    catalog["vllm"].ideal_for = "Teams serving many users."
    catalog["vllm"].save()
    catalog["tgi"].ideal_for = ""
    catalog["tgi"].save()
    html = client.get(reverse("catalog:compare"), {"tools": "vllm,tgi"}).content.decode()

    ideal = re.search(r'data-row="ideal_for">(.*?)</tr>', html, re.S).group(1)
    assert "Teams serving many users." in ideal and "Not stated" in ideal
    assert "Someone must own upgrades and network exposure" in html


def test_only_differences_is_a_plain_link_that_drops_the_equal_rows(client, catalog):
    url = reverse("catalog:compare")
    full = client.get(url, {"tools": "vllm,tgi"}).content.decode()
    assert 'href="?tools=vllm,tgi&amp;only=differences"' in full
    only = client.get(url, {"tools": "vllm,tgi", "only": "differences"}).content.decode()

    assert "hardware:nvidia-cuda" in matrix_rows(full) and "feature:continuous-batching" in matrix_rows(full)
    kept = matrix_rows(only)
    assert "hardware:nvidia-cuda" not in kept and "feature:continuous-batching" not in kept
    # vLLM documents multi-LoRA and no source says whether TGI has it: not a difference, and the row says so.
    assert "feature:multi-lora" not in kept
    assert "Not stated for: " in full.split('data-row="feature:multi-lora"')[1].split("</tr>")[0]
    assert 'class="row-same"' not in only
    assert 'aria-current="true">Only differences' in only


def test_compare_csv_has_one_line_per_aspect(client, catalog):
    response = client.get(reverse("catalog:compare_csv"), {"tools": "vllm,groq"})

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="compare-vllm-groq.csv"' in response["Content-Disposition"]
    lines = list(csv.reader(io.StringIO(response.content.decode())))
    assert lines[0] == ["section", "aspect", "vLLM", "Groq"]
    assert ["Hardware", "NVIDIA CUDA", "Yes", "Not stated"] in lines
    assert ["API gaps (documented request parameters)", "Probabilities of the generated tokens (logprobs)",
            "Yes", "No"] in lines


def test_compare_csv_without_tools_is_a_400_naming_the_parameter(client, catalog):
    response = client.get(reverse("catalog:compare_csv"), {"tools": "vllm"})

    assert response.status_code == 400
    assert response.content.decode().startswith("tools: Only one tool was chosen")


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
    # slug check, tools + 8 prefetches (documented absences among them), picker
    with django_assert_num_queries(11):
        response = client.get(reverse("catalog:compare"), {"tools": "grown-0,grown-1,grown-2,grown-3"})
    assert response.status_code == 200
    assert response.content.decode().count('name="tools"') == count


@pytest.mark.parametrize("raw", ["a%00,b", "llama-cpp,%3Cscript%3E", "vllm," + "x" * 200])
def test_malformed_slugs_get_a_message_not_a_500(client, raw):
    response = client.get(f"/compare/?tools={raw}")
    assert response.status_code == 400
    assert "not tool slugs" in response.content.decode()
    assert "<script>" not in response.content.decode()


def test_differences_are_pairs_of_known_values_and_unknowns_are_listed_apart(client):
    """The three datacenter engines side by side on the real catalog: a row differs only where two of them have
    known, different values; TensorRT-LLM on AMD is a documented "No", not "Not stated"."""
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)
    url = reverse("catalog:compare")
    full = client.get(url, {"tools": "vllm,sglang,tensorrt-llm"}).content.decode()
    only = client.get(url, {"tools": "vllm,sglang,tensorrt-llm", "only": "differences"}).content.decode()
    rows, kept = matrix_rows(full), matrix_rows(only)

    assert rows["hardware:amd-rocm"] == ["yes", "yes", "no"]
    assert "hardware:amd-rocm" in kept
    for key, states in rows.items():
        if key.startswith(("hardware:", "format:", "feature:", "api:", "check:")):
            assert (key in kept) == (len({state for state in states if state != "unknown"}) > 1), (key, states)
    assert kept, "these engines do differ somewhere"
    row = full.split('data-row="feature:multi-lora"')[1].split("</tr>")[0]
    assert ("Not stated for" in row) == ("unknown" in rows["feature:multi-lora"])
