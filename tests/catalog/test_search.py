"""Catalog search: whole words, the field's synonyms, ranked by where the words are found, the same on PostgreSQL
and on the SQLite default."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from catalog import search
from catalog.selectors import tool_list

ROOT = Path(__file__).resolve().parents[2]


def test_words_not_substrings():
    machine = search.Document.build(1, prose=["Runs on any machine."])
    apple = search.Document.build(2, accelerators=["Apple silicon (Metal, unified memory)"])
    assert search.rank([machine, apple], "Mac") == {2: search.Match(3, ("Apple silicon (Metal, unified memory)",))}
    assert search.tokens("llama.cpp json_schema") == ("llama", "cpp", "json", "schema")


def test_synonyms_and_plurals_find_the_same_thing():
    tool = search.Document.build(1, listed=["Structured output", "logprobs Probabilities of the generated tokens"])
    for query in ("json schema", "structured outputs", "guided decoding", "logprob", "LOGPROBS"):
        assert search.rank([tool], query)[1].score == 3, query
    assert search.rank([tool], "json schema gpu") == {}  # every concept must be found


def test_names_rank_first_and_a_whole_name_first_of_all():
    named = search.Document.build(1, name=["vLLM", "vllm"])
    mentioned = search.Document.build(2, prose=["Faster than vLLM on some workloads."])
    assert list(search.rank([mentioned, named], "vllm")) == [1, 2]


def test_each_match_says_where_it_was_found():
    tool = search.Document.build(
        1, name=["vLLM"], accelerators=[("runs on AMD GPU", "AMD GPU amd-rocm AMD")],
        listed=[("serves gpt-oss-120b", "gpt-oss-120b"), "Structured output"], prose=["Fast on ROCm."],
    )
    assert search.rank([tool], "rocm json schema gpt-oss-120b")[1].reasons == (
        "runs on AMD GPU", "Structured output", "serves gpt-oss-120b"
    )
    assert search.rank([tool], "vllm")[1] == search.Match(8 + search.EXACT_NAME_BONUS, ("name",))


def test_a_vendors_word_means_its_accelerators_not_a_cpu_or_prose():
    cpu_only = search.Document.build(1, accelerators=[("runs on x86 CPU", "x86 CPU x86-cpu")],
                                     prose=["Runs on Intel and AMD x86 CPUs."])
    rocm = search.Document.build(2, accelerators=[("runs on AMD GPU", "AMD GPU (ROCm / HIP) amd-rocm AMD")])
    for query in ("AMD", "ROCm", "Intel"):
        assert 1 not in search.rank([cpu_only, rocm], query), query
    assert list(search.rank([cpu_only, rocm], "amd")) == [2]
    assert list(search.rank([cpu_only], "x86")) == [1]  # a CPU word still finds CPUs


@pytest.mark.django_db
@pytest.mark.parametrize(("query", "expected", "at_least"), [
    ("json schema", {"vllm", "sglang", "llama-cpp", "tensorrt-llm", "fireworks-ai"}, 5),
    ("json", {"vllm", "sglang"}, 5),
    ("Mac", {"mlx", "mlx-lm", "llama-cpp", "ollama"}, 4),
    ("AMD", {"vllm", "sglang", "llama-cpp"}, 3),
    ("gpt-oss-120b", {"groq", "cerebras", "together-ai", "fireworks-ai", "vllm", "sglang"}, 6),
    ("H100", {"fireworks-ai", "together-ai"}, 2),
    ("logprobs", {"llama-cpp"}, 1),
])
def test_the_real_catalog_answers_the_fields_questions(query, expected, at_least):
    call_command("load_catalog", verbosity=0)
    found = [tool.slug for tool in tool_list(filters={"q": query})]
    assert len(found) >= at_least and expected <= set(found), found
    if query == "Mac":
        assert found[0] in ("mlx", "mlx-lm") and "ctranslate2" not in found  # "machine" is not "Mac"


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["AMD", "ROCm", "Intel"])
def test_a_vendors_word_does_not_find_tools_that_only_run_on_its_cpus(query):
    call_command("load_catalog", verbosity=0)
    found = [tool.slug for tool in tool_list(filters={"q": query})]
    assert "mlx" not in found and "jan" not in found, found


@pytest.mark.django_db
def test_a_model_finds_every_provider_serving_it_and_says_why(client):
    call_command("load_catalog", verbosity=0)
    providers = {"groq", "cerebras", "together-ai", "fireworks-ai"}
    rows = client.get("/api/v1/tools/", {"q": "gpt-oss-120b", "kind": "provider"}).json()["results"]
    assert {row["slug"] for row in rows} == providers
    assert all(row["matched"] == ["serves gpt-oss-120b"] for row in rows)
    html = client.get("/", {"q": "gpt-oss-120b"}).content.decode()
    assert 'href="/models/gpt-oss-120b/"' in html and "Matched: serves gpt-oss-120b" in html
    hosts = html.split("Served by providers:")[1].split("<br>")[0]
    assert all(f'href="/tools/{slug}/"' in hosts for slug in providers)


@pytest.mark.django_db
def test_a_device_is_found_with_its_family_and_the_fit_page(client):
    call_command("load_catalog", verbosity=0)
    response = client.get("/", {"q": "H100"})
    devices = [device.slug for device, _ in response.context["found"]["devices"]]
    assert set(devices) == {"nvidia-h100-sxm", "nvidia-h100-pcie"}
    html = response.content.decode()
    assert 'href="/fit/?hardware=nvidia-h100-sxm"' in html and 'href="/?hardware=nvidia-cuda"' in html


@pytest.mark.django_db
def test_the_catalog_page_and_the_api_rank_the_same(client):
    call_command("load_catalog", verbosity=0)
    page = client.get("/", {"q": "json schema"}).content.decode()
    api = [row["slug"] for row in client.get("/api/v1/tools/", {"q": "json schema"}).json()["results"]]
    positions = [page.index(f'id="pick-{slug}"') for slug in api]
    assert len(api) >= 5 and positions == sorted(positions)


@pytest.mark.slow
def test_the_sqlite_default_answers_like_postgresql(tmp_path, db):
    call_command("load_catalog", verbosity=0)
    here = {query: [tool.slug for tool in tool_list(filters={"q": query})] for query in ("json schema", "Mac")}
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "READ_CACHE_WARM": "false",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'atlas.sqlite3'}"}
    env.pop("REDIS_URL", None)
    for command in (["migrate", "-v0"], ["load_catalog", "-v0"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True)
    script = ("import json; from catalog.selectors import tool_list; print(json.dumps({q: [t.slug for t in "
              "tool_list(filters={'q': q})] for q in ('json schema', 'Mac')}))")
    answer = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT, env=env, check=True,
                            capture_output=True, text=True).stdout
    assert json.loads(answer.strip().splitlines()[-1]) == here
