"""Keeping an API key inside the request that carries it.

The client redacts every message it builds from what a server said (``redact``); whatever the probes and the
lab store of a run passes ``scrub`` as a last defence: no key (nor an echoed part of one), no NUL byte, no
unencodable character, no NaN, and no text longer than the column. Plain Python, tested without a database.
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from .errors import MAX_MESSAGE_CHARS

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 4
MIN_ECHOED_PART_CHARS = 8
MAX_TEXT = 4000


# What providers put in place of the middle of a key they echo: "sk-ab...yz12", "sk-ab***yz12", "sk-ab…yz12".
_MASK = re.compile(r"\.{2,}|…+|\*{2,}|•+")


def _remove_masked_forms(text: str, secret: str) -> str:
    """Replace each masked echo of ``secret``: a mask with a start of the key just before it and/or an end of the
    key just after, together at least MIN_SECRET_CHARS visible characters. Next to a mask even a short visible
    part is the key's, so this catches what the 8-character rule below lets through."""
    spans = []
    for mask in _MASK.finditer(text):
        start, end = mask.span()
        # A key has no whitespace: only the word touching the mask can be part of it.
        before = text[max(0, start - len(secret) + 1):start]
        after = text[end:end + len(secret) - 1]
        word_before = len(before.split()[-1]) if before[-1:].strip() else 0
        word_after = len(after.split()[0]) if after[:1].strip() else 0
        head = next((size for size in range(word_before, 0, -1)
                     if text.endswith(secret[:size], 0, start)), 0)
        tail = next((size for size in range(word_after, 0, -1)
                     if text.startswith(secret[-size:], end)), 0)
        if head + tail >= MIN_SECRET_CHARS:
            spans.append((start - head, end + tail))
    pieces, kept_from = [], 0
    for start, end in spans:
        if start >= kept_from:
            pieces += [text[kept_from:start], REDACTED]
        kept_from = max(kept_from, end)
    return "".join(pieces) + text[kept_from:] if spans else text


def _remove_fragments(text: str, secret: str) -> str:
    """Replace every run of MIN_ECHOED_PART_CHARS or more characters that is a piece of ``secret``, wherever it
    sits in the text and wherever it sat in the key (its start, its end, its middle). Such a run is a chain of
    overlapping pieces of exactly MIN_ECHOED_PART_CHARS characters, each one a piece of the key: every window
    of that size that is one is marked, and overlapping marks are replaced together."""
    size = MIN_ECHOED_PART_CHARS
    pieces = {secret[start:start + size] for start in range(len(secret) - size + 1)}
    spans: list[list[int]] = []
    for start in range(len(text) - size + 1):
        if text[start:start + size] in pieces:
            if spans and start <= spans[-1][1]:
                spans[-1][1] = start + size
            else:
                spans.append([start, start + size])
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return text


def remove_secrets(text: str, secrets) -> str:
    """Replace each secret in ``text``, each masked echo of it (``sk-can...y-123``, whatever the length of the
    visible parts), and every bare run of 8 or more characters that is a piece of it, from anywhere in the key:
    what a provider leaves visible is still part of the key. Shorter bare pieces stay: a few characters are not
    a secret, and they would hit unrelated text. Callers remove secrets before they cut a text to a length, so
    that no cut leaves a shorter piece behind."""
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET_CHARS:
            continue
        text = text.replace(secret, REDACTED)
        text = _remove_masked_forms(text, secret)
        if len(secret) >= MIN_ECHOED_PART_CHARS:
            text = _remove_fragments(text, secret)
    return text


def redact(text: str | None, secrets: tuple[str, ...] | list[str]) -> str:
    """Remove every secret, every echoed start or end of one, and any bearer token from ``text``; cap its length."""
    if not text:
        return ""
    text = remove_secrets(text, secrets)
    text = re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}", r"\1" + REDACTED, text)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + "…"
    return text


def secret_value(api_key_env: str | None) -> str:
    """The key a run must keep out of storage: the value of the target's variable, when long enough to be one."""
    value = os.environ.get(api_key_env, "") if api_key_env else ""
    return value if len(value) >= MIN_SECRET_CHARS else ""


def clean_text(text: str, secret: str) -> str:
    """A string without the key, NUL bytes or unencodable characters, cut to MAX_TEXT."""
    text = remove_secrets(text, (secret,))
    # PostgreSQL refuses NUL in text and JSONB, and a lone surrogate (json.loads makes one of "\\ud800") cannot be
    # encoded for it: either would fail the whole recording transaction.
    text = text.replace("\x00", "")
    return text.encode("utf-8", "replace").decode("utf-8")[:MAX_TEXT]


def scrub(value: Any, secret: str) -> Any:
    """Make a value from a provider storable and secret-free: every string (keys included) loses the key, any
    echoed part of it, NUL bytes and unencodable characters, and is cut to MAX_TEXT; NaN and Infinity (which
    JSONB refuses) become null. Every stored text and JSON value of a run passes through here."""
    if isinstance(value, str):
        return clean_text(value, secret)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {scrub(str(k), secret): scrub(v, secret) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(item, secret) for item in value]
    return value


def scrub_text(value: Any, secret: str) -> str:
    """Any value as storable text for a text column: strings as they are, anything else as JSON, then scrubbed."""
    if value is None:
        return ""
    # ensure_ascii=False keeps a key with quotes or non-ASCII characters recognisable to the scrub below.
    if not isinstance(value, str):
        value = json.dumps(scrub(value, ""), default=str, sort_keys=True, ensure_ascii=False)
    return scrub(value, secret)
