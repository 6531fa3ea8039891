"""Error envelopes of every documented shape, Retry-After parsing, status classes and config validation."""

import email.utils
import time

import pytest

from probe_client import EndpointConfig, ProbeError
from probe_client.errors import classify_status, parse_error_envelope, parse_retry_after
from probe_client.secrets import redact


@pytest.mark.parametrize(
    "body, content_type, message, shape",
    [
        (
            b'{"error": {"message": "bad n", "type": "invalid_request_error", "code": "x"}}',
            "application/json",
            "bad n",
            "openai",
        ),
        (
            b'{"object": "error", "message": "extra_forbidden", "type": "BadRequestError", "code": 400}',
            None,
            "extra_forbidden",
            "flat_object",
        ),
        (
            b'{"message": "reasoning_content unsupported", "type": "invalid_request_error", "param": "validation_error", "code": "wrong_api_format"}',
            None,
            "reasoning_content unsupported",
            "flat",
        ),
        (b'{"error": "Not Found"}', None, "Not Found", "flat_string"),
        (
            b'{"error": "Grammar and tools are mutually exclusive", "error_type": "validation"}',
            None,
            "Grammar and tools are mutually exclusive",
            "tgi",
        ),
        (
            b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>",
            "text/html",
            "502 Bad Gateway",
            "html",
        ),
        (
            b"upstream connect error or disconnect/reset before headers",
            "text/plain",
            "upstream connect error or disconnect/reset before headers",
            "text",
        ),
        (b'{"error": {"message": "x", "status_code": 400, "code": "tool_use_failed"}}', None, "x", "openai"),
    ],
    ids=[
        "openai-nested",
        "sglang-trtllm-flat-object",
        "cerebras-flat",
        "mlx-flat-string",
        "tgi-error-type",
        "html-proxy",
        "plain-text",
        "groq-stream-event",
    ],
)
def test_every_documented_error_envelope(body, content_type, message, shape):
    envelope = parse_error_envelope(body, content_type)
    assert envelope.message == message
    assert envelope.shape == shape


def test_vllm_integer_code_is_kept_as_text():
    envelope = parse_error_envelope(b'{"error": {"message": "m", "type": "BadRequestError", "code": 400}}')
    assert envelope.code == "400" and envelope.error_type == "BadRequestError"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2", 2.0),
        ("0.5", 0.5),
        ("0", 0.0),
        ("-1", None),
        ("abc", None),
        ("nan", None),
        ("1e999", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_values(value, expected):
    assert parse_retry_after(value) == expected


def test_retry_after_http_date():
    now = time.time()
    future = email.utils.formatdate(now + 10, usegmt=True)
    assert parse_retry_after(future, now=now) == pytest.approx(10, abs=1)
    past = email.utils.formatdate(now - 100, usegmt=True)
    assert parse_retry_after(past, now=now) == 0.0


@pytest.mark.parametrize(
    "status, error_class",
    [
        (400, "http_4xx"),
        (401, "auth_failed"),
        (403, "auth_failed"),
        (429, "rate_limited"),
        (500, "http_5xx"),
        (503, "overloaded"),
        (529, "overloaded"),
        (302, "redirect"),
    ],
)
def test_status_classes(status, error_class):
    assert classify_status(status) == error_class


def test_redact_removes_secrets_and_bearer_tokens():
    assert redact("key sk-abc123456 leaked", ["sk-abc123456"]) == "key [REDACTED] leaked"
    assert "tok_live_0123456789" not in redact("Authorization: Bearer tok_live_0123456789", [])
    assert len(redact("x" * 10000, [])) <= 2001


def test_probe_error_rejects_unknown_classes():
    with pytest.raises(ValueError):
        ProbeError("made_up", "x")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"base_url": "ftp://x/v1"}, "base_url"),
        ({"base_url": "https://user:pw@x/v1"}, "base_url"),
        ({"base_url": "https://x/v1?key=abc"}, "base_url"),
        ({"model": ""}, "model"),
        ({"api_key_env": "lower_case"}, "api_key_env"),
        ({"api_key_env": "sk-live-123"}, "api_key_env"),
        ({"read_timeout_s": 0}, "read_timeout_s"),
        ({"max_response_bytes": 10}, "max_response_bytes"),
    ],
)
def test_config_validation_names_the_field(kwargs, field):
    values = {"base_url": "https://api.example.com/v1", "model": "m", **kwargs}
    with pytest.raises(ValueError, match=field):
        EndpointConfig(**values)
