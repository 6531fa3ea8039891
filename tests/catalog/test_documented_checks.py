"""Every documented API gap is data: a request parameter that a feature note, a caveat or an API surface's gap
text names has a structured check (ToolApiSurface.checks) on the same tool, with its outcome and source, so the
wizard, the comparison, the providers page and the API, which read only the checks, never miss one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from scoring.ranking import DocumentedCheck
from scoring.vocabulary import COMPAT_CHECKS, DOCUMENTED_OUTCOMES

CATALOG_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "catalog"

# How prose names each check: the parameter itself, or the capability in words.
CHECK_MENTIONS: dict[str, re.Pattern] = {
    "logprobs": re.compile(r"\blogprobs\b", re.IGNORECASE),
    "top_logprobs": re.compile(r"\btop_logprobs\b"),
    "logit_bias": re.compile(r"\blogit_bias\b|\blogit bias\b", re.IGNORECASE),
    "n": re.compile(r"\bn (?:must|is|to 1|=)|\bn ?[=>] ?\d|\blimits n\b|\bN must\b"),
    "tool_choice_required": re.compile(r"\btool_choice\b"),
    "parallel_tool_calls": re.compile(r"\bparallel_tool_calls\b|\bparallel tool calls\b", re.IGNORECASE),
    "json_object": re.compile(r"\bjson_object\b|\bJSON mode\b", re.IGNORECASE),
    "tools_with_json_schema": re.compile(
        r"\btools?\b[^.]{0,60}\b(?:response schema|json_schema|JSON schema|response format)"
        r"|(?:response schema|json_schema|JSON schema|response format)[^.]{0,60}\btools?\b",
        re.IGNORECASE,
    ),
    "stream_usage": re.compile(r"\binclude_usage\b|\bstream_options\b"),
    "max_completion_tokens": re.compile(r"\bmax_completion_tokens\b"),
}


def _tools() -> list[dict]:
    return [row for path in sorted(CATALOG_FIXTURES.glob("tools_*.yaml"))
            for row in yaml.safe_load(path.read_text())["tools"]]


def _texts(tool: dict) -> list[tuple[str, str]]:
    """(where, text) of every feature note, caveat and gap text of a tool."""
    texts = [(f"feature {item['feature']}", item.get("notes") or "") for item in tool.get("features") or []]
    texts += [(f"caveat {item['key']}", f"{item['title']} {item['body']}") for item in tool.get("caveats") or []]
    texts += [(f"api surface {item['api_surface']}", item.get("gaps") or "") for item in tool.get("api_surfaces") or []]
    return texts


def _checks(tool: dict) -> dict[str, DocumentedCheck]:
    return {
        name: DocumentedCheck.parse(name, value, source_key=surface["source"], surface=surface["api_surface"])
        for surface in tool.get("api_surfaces") or [] for name, value in (surface.get("checks") or {}).items()
    }


def test_every_check_pattern_names_a_check_of_the_vocabulary():
    assert set(CHECK_MENTIONS) <= set(COMPAT_CHECKS)


@pytest.mark.parametrize("tool", _tools(), ids=lambda tool: tool["slug"])
def test_every_parameter_a_text_names_has_a_structured_check(tool):
    checks = _checks(tool)
    missing = [
        f"{where} names {check}: {text.strip()[:120]!r}"
        for where, text in _texts(tool) for check, pattern in CHECK_MENTIONS.items()
        if pattern.search(text) and check not in checks
    ]
    assert not missing, f"{tool['slug']}: add a check for each of these\n" + "\n".join(missing)


@pytest.mark.parametrize("tool", _tools(), ids=lambda tool: tool["slug"])
def test_every_check_is_well_formed(tool):
    outcomes = {outcome.value for outcome in DOCUMENTED_OUTCOMES}
    for check in _checks(tool).values():
        assert check.check in COMPAT_CHECKS and set(check.not_with) <= set(COMPAT_CHECKS)
        assert check.outcome in outcomes and check.source_key


def test_the_pattern_catches_the_ways_the_seeds_state_gaps():
    assert CHECK_MENTIONS["n"].search("Cerebras limits n to 1")
    assert CHECK_MENTIONS["n"].search("n must be 1.")
    assert not CHECK_MENTIONS["n"].search("run it on n GPUs")
    assert CHECK_MENTIONS["tools_with_json_schema"].search("not together with a response schema on gpt-oss-120b, tools")
    assert CHECK_MENTIONS["tools_with_json_schema"].search("tool calling with a response schema")


def test_cerebras_documents_its_gaps_on_gpt_oss_120b():
    cerebras = _checks(next(tool for tool in _tools() if tool["slug"] == "cerebras"))

    assert cerebras["n"].outcome == "unsupported" and not cerebras["n"].model
    assert (cerebras["tools_with_json_schema"].outcome, cerebras["tools_with_json_schema"].model) == (
        "unsupported", "gpt-oss-120b")
    logprobs = cerebras["logprobs"]
    assert logprobs.model == "gpt-oss-120b"
    assert {"tools", "json_schema", "json_object"} <= set(logprobs.not_with)
    assert logprobs.fails(("logprobs", "tools")) and not logprobs.fails(("logprobs",))
    assert logprobs.source_key == "cerebras-docs-gpt-oss"


def test_a_check_value_names_only_known_keys():
    with pytest.raises(ValueError, match="unknown keys"):
        DocumentedCheck.parse("n", {"outcome": "rejected", "sauce": "x"}, source_key="s")
    with pytest.raises(ValueError, match="not_with"):
        DocumentedCheck.parse("n", {"outcome": "rejected", "not_with": "tools"}, source_key="s")


def _sources() -> dict[str, dict]:
    return {row["key"]: row for path in sorted(CATALOG_FIXTURES.glob("*.yaml"))
            for row in yaml.safe_load(path.read_text()).get("sources") or []}


RECHECKED_ON = "2026-12-03"


def test_stale_facts_were_checked_again_against_their_sources():
    sources = _sources()
    offerings = yaml.safe_load((CATALOG_FIXTURES / "models.yaml").read_text())["model_offerings"]
    groq_120b = next(row for row in offerings if (row["tool"], row["model"]) == ("groq", "gpt-oss-120b"))
    assert groq_120b["context_tokens"] == 131072 and "65,536 completion tokens" in groq_120b["notes"]
    assert str(groq_120b["verified_on"]) == RECHECKED_ON
    assert sources[groq_120b["source"]]["url"] == "https://console.groq.com/docs/models"

    groq = next(tool for tool in _tools() if tool["slug"] == "groq")
    responses = next(row for row in groq["api_surfaces"] if row["api_surface"] == "openai-responses")
    assert sources[responses["source"]]["url"] == "https://console.groq.com/docs/responses-api"

    cerebras = _checks(next(tool for tool in _tools() if tool["slug"] == "cerebras"))
    assert sources[cerebras["logprobs"].source_key]["url"] == "https://inference-docs.cerebras.ai/models/openai-oss"
    for key in ("groq-docs-models", "groqdocs-responses-api", "groq-docs-openai", "cerebras-docs-gpt-oss"):
        assert str(sources[key]["verified_on"]) == RECHECKED_ON, key
        assert sources[key]["url"] in (CATALOG_FIXTURES.parents[1] / "docs" / "catalog-data.md").read_text(), key
