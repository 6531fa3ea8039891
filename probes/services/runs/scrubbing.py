"""What may be stored of a provider's words: no API key (nor an echoed part of one), no NUL byte, no unencodable
character, no NaN, and no text longer than the column. Plain Python with no ORM, so it can be tested alone."""
from __future__ import annotations

import json
import math
import os
from typing import Any

from probe_client.errors import MIN_SECRET_CHARS, remove_secrets

REDACTED = "[redacted]"
MAX_TEXT = 4000


def secret_value(api_key_env: str | None) -> str:
    """The key a run must keep out of storage: the value of the target's variable, when long enough to be one."""
    value = os.environ.get(api_key_env, "") if api_key_env else ""
    return value if len(value) >= MIN_SECRET_CHARS else ""


def clean_text(text: str, secret: str) -> str:
    """A string without the key, NUL bytes or unencodable characters, cut to MAX_TEXT."""
    text = remove_secrets(text, (secret,), marker=REDACTED) if secret else text
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
    text = (
        value
        if isinstance(value, str)
        else json.dumps(scrub(value, ""), default=str, sort_keys=True, ensure_ascii=False)
    )
    return scrub(text, secret)
