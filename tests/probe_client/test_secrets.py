"""With a key in the environment, the key reaches the server and nothing else: no result, repr, message or log;
and what a run stores is scrubbed of it (plain functions, tested without a database)."""

import dataclasses
import json
import logging
import math
import os

import pytest

from probe_client import run_compat_suite, run_speed_suite
from probe_client.secrets import MAX_TEXT, REDACTED, clean_text, redact, scrub, scrub_text, secret_value
from tests.probe_client.conftest import config_for, run

KEY_ENV = "ATLAS_C_CANARY_API_KEY"


@pytest.fixture
def canary(monkeypatch):
    value = "sk-canary-" + os.urandom(16).hex()
    monkeypatch.setenv(KEY_ENV, value)
    return value


def everything_visible(*objects) -> str:
    parts = []
    for obj in objects:
        parts.append(repr(obj))
        parts.append(str(obj))
        if dataclasses.is_dataclass(obj):
            parts.append(json.dumps(dataclasses.asdict(obj), default=str))
        if hasattr(obj, "to_json"):
            parts.append(json.dumps(obj.to_json(), default=str))
    return "\n".join(parts)


@pytest.mark.parametrize("fault", [None, "echo_auth_500", "unauthorized_401", "stall_mid_stream", "stream_error_event"])
def test_key_is_sent_but_never_reported(simulator_factory, canary, caplog, fault):
    caplog.set_level(logging.DEBUG)
    sim = simulator_factory("openai", schedule={"ttft_ms": 5, "itl_ms": 1, "tokens": 8})
    sim.reset()
    headers = {"x-simulator-options": json.dumps({"fault": fault})} if fault else None
    config = config_for(sim, api_key_env=KEY_ENV, extra_headers=headers, read_timeout_s=0.5, request_deadline_s=2)
    speed = run(run_speed_suite(config, input_tokens=50, max_tokens=8, requests=2, concurrency=2))
    compat = run(run_compat_suite(config, checks=["n", "stream_usage", "json_schema"]))

    received = sim.chat_requests
    assert received and all(r["headers"]["authorization"] == f"Bearer {canary}" for r in received)

    visible = everything_visible(config, speed, compat, *speed.requests, *compat.checks)
    visible += "\n".join(record.getMessage() + repr(record.args) + str(record.exc_text) for record in caplog.records)
    assert canary not in visible
    assert canary[10:30] not in visible
    if fault == "echo_auth_500":
        assert "[REDACTED]" in speed.requests[0].error_message
        assert "[REDACTED]" in compat.checks[0].message


def test_config_holds_only_the_variable_name(canary):
    from probe_client import EndpointConfig

    config = EndpointConfig(base_url="http://127.0.0.1:1/v1", model="m", api_key_env=KEY_ENV)
    assert canary not in repr(config) and canary not in json.dumps(config.describe())
    assert config.api_key() == canary  # read at request time, from the environment


def test_extra_headers_values_stay_out_of_repr():
    from probe_client import EndpointConfig

    config = EndpointConfig(
        base_url="http://127.0.0.1:1/v1", model="m", extra_headers={"x-api-key": "hidden-value-123"}
    )
    assert "hidden-value-123" not in repr(config) and "hidden-value-123" not in json.dumps(config.describe())


@pytest.mark.parametrize("header", ["Authorization", "accept-encoding"])
def test_reserved_headers_cannot_be_overridden(header):
    from probe_client import EndpointConfig

    with pytest.raises(ValueError, match="extra_headers"):
        EndpointConfig(base_url="http://127.0.0.1:1/v1", model="m", extra_headers={header: "x"})


def test_httpx_loggers_are_quiet():
    import probe_client.http  # noqa: F401  (importing the client quiets them)

    assert logging.getLogger("httpx").getEffectiveLevel() >= logging.WARNING
    assert logging.getLogger("httpcore").getEffectiveLevel() >= logging.WARNING


# --- what a run stores ---

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


def test_any_piece_of_eight_or_more_characters_is_replaced_wherever_it_sat_in_the_key():
    secret = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2"
    for start in range(len(secret) - 8 + 1):
        for size in (8, 10, 13):
            piece = secret[start:start + size]
            if len(piece) < 8:
                continue
            text = clean_text(f"x-ratelimit-key: {piece}; retry later", secret)
            assert text == f"x-ratelimit-key: {REDACTED}; retry later", piece
    assert clean_text(f"{secret[12:22]}{secret[3:11]} twice", secret) == f"{REDACTED} twice"
    assert clean_text(f"short {secret[12:19]} stays", secret) == f"short {secret[12:19]} stays"  # seven characters


def test_a_piece_is_removed_before_a_text_is_cut():
    secret = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2"
    header = "remaining=10; " + "x" * 80 + secret[:20]  # a cut at 100 characters would leave 6 of the key's start
    assert secret[:6] not in redact(header, [secret])[:100]
    assert secret[:6] not in clean_text(header, secret)[:100]


@pytest.mark.parametrize("mask", ["...", "…", "***", "****", "••••"])
def test_a_masked_echo_is_replaced_whatever_the_length_of_its_visible_parts(mask):
    secret = "sk-canary-123"
    for echoed in (f"sk-can{mask}y-123", f"sk-ca{mask}", f"{mask}y-123", f"s{mask}123"):
        assert clean_text(f"Incorrect API key provided: {echoed} (check it)", secret) == (
            f"Incorrect API key provided: {REDACTED} (check it)"
        ), echoed


def test_a_mask_next_to_too_little_of_the_key_or_to_other_words_stays():
    secret = "sk-canary-123"
    for text in ("Loading... done", "sk-...", "wait***", "see sk-ca and y-123", "a...b"):
        assert clean_text(text, secret) == text


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
