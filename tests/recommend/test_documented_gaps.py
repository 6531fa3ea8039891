"""Issue 23: a gap a source documents keeps a provider out of an answer that needs what it lacks, and the answer
says which gap and which source; the providers page shows the same gap."""
from __future__ import annotations

import re
from html import unescape

import pytest
from django.conf import settings
from django.urls import reverse

from catalog.loading import load

pytestmark = pytest.mark.django_db

HOSTED_LATENCY = {"hardware": "none", "hosted_ok": "on", "optimize_for": "latency"}


@pytest.fixture
def catalog():
    load(fixtures_dir=settings.BASE_DIR / "fixtures")


def _answer(client, needs: list[str]) -> dict:
    response = client.get(reverse("recommend:wizard"), {**HOSTED_LATENCY, "needs": needs})
    assert response.status_code == 200
    return response.context["result"]


def _exclusion(result: dict, tool: str) -> list[dict]:
    return next(item["reasons"] for item in result["excluded"] if item["tool"] == tool)


def test_tools_schema_and_logprobs_put_neither_groq_nor_cerebras_first_and_say_why(client, catalog):
    result = _answer(client, ["tools", "json_schema", "logprobs"])

    ranked = [item["tool"] for item in result["results"]]
    assert ranked and ranked[0] not in {"groq", "cerebras"}
    assert "groq" not in ranked and "cerebras" not in ranked
    groq = _exclusion(result, "groq")
    assert any(reason["rule"] == "documented-gap:logprobs" and "logprobs is rejected" in reason["text"]
               and reason["source"]["key"] == "groq-docs-openai" for reason in groq)
    cerebras = _exclusion(result, "cerebras")
    assert any(reason["rule"] == "documented-gap:logprobs" and "cannot be combined with tools, json_schema"
               in reason["text"] and "on gpt-oss-120b" in reason["text"]
               and reason["source"]["key"] == "cerebras-docs-gpt-oss" for reason in cerebras)


def test_several_answers_per_request_rule_out_both_on_their_own_sources(client, catalog):
    result = _answer(client, ["tools", "json_schema", "n"])

    ranked = [item["tool"] for item in result["results"]]
    assert ranked and "groq" not in ranked and "cerebras" not in ranked
    assert any(reason["source"]["key"] == "seed-002-engine-comparison" and "n is unsupported" in reason["text"]
               for reason in _exclusion(result, "cerebras"))
    assert any(reason["source"]["key"] == "groq-docs-openai" for reason in _exclusion(result, "groq"))


def test_tools_with_a_schema_in_one_request_rule_out_cerebras_on_gpt_oss_120b(client, catalog):
    result = _answer(client, ["tools_with_json_schema"])

    assert "cerebras" not in [item["tool"] for item in result["results"]]
    assert any("tools_with_json_schema is unsupported on gpt-oss-120b" in reason["text"]
               for reason in _exclusion(result, "cerebras"))


def test_strict_tool_schemas_rule_out_cerebras_on_gpt_oss_120b_on_its_own_page(client, catalog):
    result = _answer(client, ["strict_tools"])

    ranked = [item["tool"] for item in result["results"]]
    assert ranked and "cerebras" not in ranked and "groq" in ranked
    assert any(reason["rule"] == "documented-gap:strict_tools" and "on gpt-oss-120b" in reason["text"]
               and reason["source"]["key"] == "cerebras-docs-gpt-oss" for reason in _exclusion(result, "cerebras"))
    page = unescape(client.get(reverse("recommend:wizard"), HOSTED_LATENCY).content.decode())
    assert 'value="strict_tools"' in page and "(strict: true)" in page


def test_logprobs_alone_keeps_cerebras(client, catalog):
    result = _answer(client, ["logprobs"])

    assert "cerebras" in [item["tool"] for item in result["results"]]
    assert "groq" not in [item["tool"] for item in result["results"]]


def test_providers_page_shows_cerebras_gaps_instead_of_not_documented(client, catalog):
    page = unescape(client.get(reverse("probes:providers")).content.decode())

    section = re.search(r'<section class="model-comparison" id="model-gpt-oss-120b".*?</section>', page, re.S)
    row = re.search(r'<tr data-tool="cerebras">(.*?)</tr>', section.group(0), re.S).group(1)
    assert "not documented in the catalog" not in row
    assert "<code>n</code>: unsupported (n is limited to 1)" in row
    assert "<code>tools_with_json_schema</code>: unsupported on gpt-oss-120b" in row
    assert "<code>logprobs</code>: partial on gpt-oss-120b; not together with tools" in row


def test_a_gap_limited_to_one_model_is_not_shown_for_another(client, catalog):
    page = unescape(client.get(reverse("probes:model-detail", args=["qwen3-8-27b"])).content.decode())

    row = re.search(r'<tr data-tool="cerebras">(.*?)</tr>', page, re.S).group(1)
    assert "<code>n</code>: unsupported" in row
    assert "tools_with_json_schema" not in row and "<code>logprobs</code>" not in row


# --- one latency metric from one publisher ------------------------------------------------------------------


def _latency_reasons(result: dict) -> list[tuple[str, str]]:
    return [(item["tool"], reason["text"]) for item in result["results"] if item["kind"] == "provider"
            for reason in item["reasons"] if reason["rule"] == "reported:speed"]


def test_latency_ranking_uses_one_metric_from_one_publisher_and_says_which(client, catalog):
    result = _answer(client, [])

    reasons = _latency_reasons(result)
    assert reasons
    publishers = {re.match(r"Reported by (.+?) on ", text).group(1) for _, text in reasons}
    assert len(publishers) == 1
    assert result["latency_metric"] == "time to first answer token"
    latency = [text for _, text in reasons if "ms" in text]
    assert latency and all("time to first answer token" in text for text in latency)
    assert not any("time to first token" in text for _, text in reasons)
    assert "latency as time to first answer token" in result["provider_evidence_note"]


def test_a_providers_own_headline_figure_never_ranks_it(client, catalog):
    result = _answer(client, [])

    assert not any(text.startswith("Reported by Groq ") or text.startswith("Reported by Cerebras ")
                   for _, text in _latency_reasons(result))


def test_the_tool_api_gives_each_documented_check_with_its_source(client, catalog):
    response = client.get(reverse("api:tool-detail", args=["cerebras"]))

    surface = next(item for item in response.json()["api_surfaces"] if item["slug"] == "openai-chat")
    checks = {item["check"]: item for item in surface["checks"]}
    assert checks["n"] == {"check": "n", "outcome": "unsupported", "model": "", "not_with": [],
                           "note": "n is limited to 1", "source": "seed-002-engine-comparison"}
    assert checks["logprobs"]["model"] == "gpt-oss-120b" and "tools" in checks["logprobs"]["not_with"]


def test_the_wizard_page_says_why_each_was_removed(client, catalog):
    response = client.get(reverse("recommend:wizard"), {**HOSTED_LATENCY, "needs": ["tools", "json_schema", "logprobs"]})

    page = unescape(response.content.decode())
    removed = page[page.index('class="reco-excluded"'):]
    assert "logprobs is rejected" in removed
    assert "logprobs cannot be combined with tools, json_schema on gpt-oss-120b" in removed


def test_compare_shows_the_same_checks_with_their_model_and_source(client, catalog):
    page = unescape(client.get(reverse("catalog:compare"), {"tools": "groq,cerebras"}).content.decode())

    rows = {key: body for key, body in re.findall(r'<tr class="row-[a-z]+" data-row="([^"]+)">(.*?)</tr>', page, re.S)}
    states = {key: re.findall(r'data-state="([a-z]+)"', body) for key, body in rows.items()}
    assert states["check:n"] == ["no", "no"]
    assert states["check:tools_with_json_schema"] == ["unknown", "no"]
    assert states["check:logprobs"] == ["no", "partial"]
    assert "unsupported on gpt-oss-120b" in rows["check:tools_with_json_schema"]
    assert "seed-002-engine-comparison" in rows["check:tools_with_json_schema"]
