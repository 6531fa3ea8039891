"""Prompts of a known length, unique per request.

Each prompt starts with a random nonce, so no server can answer it from a prefix cache filled by an earlier
request, and continues with filler built from common short English words: each " word" is one token in the
cl100k/o200k (OpenAI, gpt-oss) and Llama tokenizers, so the body of ``n`` words is about ``n`` tokens. The chat
template and the instruction add a few tokens more; the server's ``usage.prompt_tokens`` is what gets stored.
"""

from __future__ import annotations

import random
import secrets

PROMPT_GENERATOR = "atlas-words-v1"

WORKLOADS: dict[str, int] = {"in-100": 100, "in-1k": 1000, "in-10k": 10000}

# Common words that are single tokens (with their leading space) in the usual BPE vocabularies.
_WORDS = (
    "the of and to in is was for that on with as by at from this be are or his an which had not but one "
    "were all they have her she there their been more when can who so some what time out up into about "
    "would only other two new first after them than these may then its over also any most such made many "
    "years used way both well state just while where work each because part much back people under long "
    "city world house water small place three great river light family music school book field early game "
    "line name land north south east west open night power story table sound door green black white road"
).split()

# The instruction is kept short and fixed so that its token count barely varies between tokenizers.
INSTRUCTION = (
    "The text above is random filler; ignore it. Now write a long, detailed story about a lighthouse keeper. "
    "Keep writing until you are stopped."
)
INSTRUCTION_TOKENS = 30


def new_nonce() -> str:
    return secrets.token_hex(8)


def filler_words(count: int, seed: str) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(_WORDS) for _ in range(max(0, count)))


def build_messages(input_tokens: int, nonce: str) -> list[dict]:
    """Chat messages of about ``input_tokens`` tokens; the same (tokens, nonce) always gives the same text."""
    if input_tokens < 1:
        raise ValueError("input_tokens: must be at least 1")
    header = f"Request {nonce}."
    body = filler_words(input_tokens - INSTRUCTION_TOKENS - 6, nonce)
    return [{"role": "user", "content": f"{header} {body}\n\n{INSTRUCTION}"}]


def workload_for(input_tokens: int) -> str:
    """The slug of a configured workload with this size, or a generic ``in-<n>`` slug."""
    for slug, tokens in WORKLOADS.items():
        if tokens == input_tokens:
            return slug
    return f"in-{input_tokens}"
