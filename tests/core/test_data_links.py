"""Every page with data links the same data in the API, as JSON and (for lists) CSV, and the links answer."""
import re
from html import unescape

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded_catalog(db):
    call_command("load_catalog", verbosity=0)


PAGES = [
    ("/?q=gpt-oss-120b&kind=provider&sort=name", True),
    ("/tools/fireworks-ai/", False),
    ("/compare/?tools=groq,cerebras", False),
    ("/recommend/?hardware=none&hosted_ok=on&context_tokens=&needs=tools", False),
    ("/fit/?model=gpt-oss-120b&hardware=nvidia-h100-sxm&context_tokens=8192&concurrency=4", False),
    ("/break-even/?input_tokens_per_day=50000000&output_tokens_per_day=10000000", False),
    ("/engines/evidence/", True),
    ("/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/", True),
    ("/providers/", True),
    ("/engines/", True),
    ("/use-cases/", True),
]


def _links(html: str) -> dict[str, str]:
    return {kind: unescape(url) for url, kind in re.findall(r'<a href="([^"]+)" type="[^"]+" data-link="(json|csv)"',
                                                            html)}


@pytest.mark.parametrize(("page", "csv"), PAGES)
def test_a_page_with_data_links_its_json_and_csv_and_they_answer(client, loaded_catalog, page, csv):
    response = client.get(page)
    assert response.status_code == 200
    links = _links(response.content.decode())
    assert "json" in links, page
    assert ("csv" in links) == csv, page
    answer = client.get(links["json"])
    assert answer.status_code == 200, (links["json"], answer.content[:300])
    assert answer["Content-Type"].startswith("application/json")
    if csv:
        table = client.get(links["csv"])
        assert table.status_code == 200 and table["Content-Type"].startswith("text/csv"), links["csv"]


def test_the_catalog_links_its_own_filters_under_the_apis_names(client, loaded_catalog):
    links = _links(client.get("/", {"q": "AMD", "sort": "name", "kind": ""}).content.decode())
    assert links["json"] == "/api/v1/tools/?q=AMD&ordering=name"
    rows = client.get(links["json"]).json()["results"]
    assert {"vllm", "sglang"} <= {row["slug"] for row in rows} and "mlx" not in {row["slug"] for row in rows}


def test_the_evidence_page_links_the_points_of_its_model_and_hardware(client, loaded_catalog):
    links = _links(client.get("/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/").content.decode())
    assert links["csv"] == "/api/v1/published-benchmarks/points/?model=gpt-oss-120b&hardware=nvidia-h100-sxm&format=csv"
    rows = client.get(links["json"]).json()["results"]
    assert rows and {(row["model"], row["hardware"]) for row in rows} == {("gpt-oss-120b", "nvidia-h100-sxm")}
