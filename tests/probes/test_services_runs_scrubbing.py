"""Scrubbing of what a run stores: plain functions, tested without a database."""
import ast
import json
import math
from pathlib import Path

import pytest

import probes.services.runs as runs_package
from probes.services.runs import claim, enqueue, execute, recover, scrubbing
from probes.services.runs.scrubbing import MAX_TEXT, REDACTED, clean_text, scrub, scrub_text, secret_value

SECRET = "sk-live-abcdef0123456789"


def test_the_key_is_replaced_in_keys_values_and_lists_at_any_depth():
    value = {"message": f"bad key {SECRET}", "headers": [f"Bearer {SECRET}"], SECRET: {"deep": (SECRET,)}}

    stored = scrub(value, SECRET)

    assert SECRET not in json.dumps(stored)
    assert stored["message"] == f"bad key {REDACTED}"
    assert stored["headers"] == [f"Bearer {REDACTED}"]
    assert stored[REDACTED] == {"deep": [REDACTED]}


def test_an_echoed_start_or_end_of_the_key_is_replaced_too():
    text = clean_text(f"key {SECRET[:10]}…{SECRET[-9:]} refused", SECRET)

    assert SECRET[:10] not in text and SECRET[-9:] not in text
    assert text.startswith("key ") and text.endswith(" refused")


def test_text_loses_nul_bytes_and_lone_surrogates_and_is_cut_to_the_column():
    assert clean_text("a\x00b", "") == "ab"
    assert clean_text(json.loads('"\\ud800x"'), "") == "?x"
    assert len(clean_text("x" * (MAX_TEXT + 50), "")) == MAX_TEXT


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_numbers_jsonb_refuses_become_null(value):
    assert scrub({"figure": value, "kept": 1.5, "count": 3, "flag": True}, "") == {
        "figure": None,
        "kept": 1.5,
        "count": 3,
        "flag": True,
    }


def test_scrub_text_writes_structures_as_sorted_json_and_removes_a_non_ascii_key():
    secret = "clé-0123456789abcdef"
    assert scrub_text(None, secret) == ""
    assert scrub_text({"b": 1, "a": [secret]}, secret) == f'{{"a": ["{REDACTED}"], "b": 1}}'
    assert scrub_text(f"plain {secret}", secret) == f"plain {REDACTED}"


def test_secret_value_reads_the_named_variable_only_when_long_enough(monkeypatch):
    monkeypatch.setenv("ATLAS_SCRUB_TEST_API_KEY", SECRET)
    monkeypatch.setenv("ATLAS_SCRUB_SHORT_API_KEY", "abc")
    monkeypatch.delenv("ATLAS_SCRUB_ABSENT_API_KEY", raising=False)

    assert secret_value("ATLAS_SCRUB_TEST_API_KEY") == SECRET
    assert secret_value("ATLAS_SCRUB_SHORT_API_KEY") == ""
    assert secret_value("ATLAS_SCRUB_ABSENT_API_KEY") == ""
    assert secret_value(None) == "" and secret_value("") == ""


def test_scrubbing_imports_neither_django_nor_models():
    tree = ast.parse(Path(scrubbing.__file__).read_text())
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [name for name in imported if name.startswith(("django", "probes.models", "probes.services"))]


def test_the_package_keeps_every_public_name_importable_from_its_step_module():
    homes = (claim, enqueue, execute, recover)
    for name in runs_package.__all__:
        assert any(getattr(home, name, None) is getattr(runs_package, name) for home in homes), name
