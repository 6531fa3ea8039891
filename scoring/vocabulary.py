"""Terms that the scoring, the catalog and the probe pages must read the same way, each defined once.

Plain Python (no Django): model names as the catalog, price lists and provider model ids spell them,
the blended price, and the input size that a workload name states.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import TypeVar

# Blended price as secondary sources describe Artificial Analysis' convention: three parts input to one
# part output.
BLEND_INPUT_WEIGHT = 3
BLEND_OUTPUT_WEIGHT = 1

Price = TypeVar("Price", float, Decimal)


def blended_price(input_usd: Price, output_usd: Price) -> Price:
    """The blended price per 1M tokens of an input and an output price."""
    return (BLEND_INPUT_WEIGHT * input_usd + BLEND_OUTPUT_WEIGHT * output_usd) / (
        BLEND_INPUT_WEIGHT + BLEND_OUTPUT_WEIGHT
    )


def normalize_model(name: str) -> str:
    """The model a name, price item or provider model id names, as shown: 'GPT OSS 120B', 'gpt-oss-120B' and
    'openai/gpt-oss-120b' all give 'gpt-oss-120b' (provider prefixes are path segments)."""
    tail = name.strip().rstrip("/").lower().rsplit("/", 1)[-1]
    return re.sub(r"[\s_]+", "-", tail)


def model_key(name: str) -> str:
    """normalize_model without punctuation, for matching names that spell the same model apart
    ('gpt-oss-120b' and 'gpt_oss.120b')."""
    return re.sub(r"[^a-z0-9]", "", normalize_model(name))


_WORKLOAD_TOKENS = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)", re.IGNORECASE)


def workload_input_tokens(workload: str) -> int | None:
    """The approximate input size a workload name states ('in-1k' -> 1000), or None when it states none."""
    match = _WORKLOAD_TOKENS.search(workload)
    if not match:
        return None
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
    return int(float(match.group(1)) * scale)
