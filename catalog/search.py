"""Search that understands the field: words, not substrings ("Mac" never matches "machine"), the field's synonyms
("json schema" finds structured output, "Mac" finds Apple silicon), and a rank by where the words are found (a
tool's name before its features, its features before its prose).

Plain Python over plain documents, so it answers alike on PostgreSQL and SQLite; catalog.selectors builds the
documents from the catalog once per data generation.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# Phrases that mean the same thing to someone choosing an engine; each group is searched as one concept.
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(group) for group in (
    {"json schema", "structured output", "structured outputs", "response format", "guided decoding",
     "constrained decoding", "grammar"},
    {"json", "json mode", "json object", "structured output", "json schema"},
    {"mac", "macos", "apple", "apple silicon", "metal", "mlx"},
    {"amd", "rocm", "hip", "instinct"},
    {"nvidia", "cuda"},
    {"intel", "xpu", "sycl", "gaudi", "openvino"},
    {"tool calling", "tools", "function calling", "functions"},
    {"lora", "multi lora", "adapters"},
    {"quantization", "quantized", "quant"},
    {"speculative decoding", "draft model", "eagle", "medusa"},
    {"prefix caching", "prompt caching", "radixattention", "kv cache reuse"},
    {"cpu", "x86", "arm", "offload"},
    {"phone", "mobile", "ios", "android"},
    {"browser", "webgpu"},
    {"logprobs", "log probabilities", "top logprobs"},
))

TOKEN = re.compile(r"[a-z0-9]+")
# Where a word is found, and how much that says about the tool.
WEIGHTS = {"name": 8, "listed": 3, "prose": 1}
# A query that is a tool's whole name puts that tool first.
EXACT_NAME_BONUS = 8


def tokens(text: str) -> tuple[str, ...]:
    """Lower-case words: "llama.cpp" is ("llama", "cpp"), "json_schema" is ("json", "schema")."""
    return tuple(TOKEN.findall(text.lower().replace("_", " ")))


def _same_word(query: str, word: str) -> bool:
    """Equal, or equal but for a plural s (logprob / logprobs); no other prefix matching."""
    if query == word:
        return True
    longer, shorter = (query, word) if len(query) > len(word) else (word, query)
    return len(shorter) >= 3 and longer == shorter + "s"


def _contains(words: Sequence[str], phrase: Sequence[str]) -> bool:
    size = len(phrase)
    return any(all(_same_word(part, words[start + offset]) for offset, part in enumerate(phrase))
               for start in range(len(words) - size + 1))


@dataclass(frozen=True)
class Document:
    """One tool as search sees it: `fields` maps a weight name of WEIGHTS to the texts with that weight."""

    key: int
    fields: Mapping[str, tuple[tuple[str, ...], ...]]

    @classmethod
    def build(cls, key: int, **texts: Iterable[str]) -> Document:
        return cls(key, {weight: tuple(tokens(text) for text in values if text) for weight, values in texts.items()})

    def weight_of(self, alternatives: Iterable[tuple[str, ...]]) -> int:
        """The highest weight of a field holding one of the alternative phrases (0 when none does)."""
        best = 0
        for weight_name, texts in self.fields.items():
            if WEIGHTS[weight_name] > best and any(_contains(words, phrase) for words in texts
                                                   for phrase in alternatives):
                best = WEIGHTS[weight_name]
        return best


def concepts(query: str) -> list[tuple[tuple[str, ...], ...]]:
    """The query as concepts, each a set of alternative phrases: the longest synonym phrase found at each place
    stands for its whole group; any other word stands for itself (and its group, when it is one)."""
    words = tokens(query)
    groups = [(tuple(tokens(phrase)), group) for group in SYNONYMS for phrase in group]
    found: list[tuple[tuple[str, ...], ...]] = []
    position = 0
    while position < len(words):
        matches = [(phrase, group) for phrase, group in groups
                   if len(phrase) > 0 and tuple(words[position:position + len(phrase)]) == phrase]
        if matches:
            size = max(len(phrase) for phrase, _ in matches)
            alternatives = {tokens(other) for phrase, group in matches if len(phrase) == size for other in group}
            found.append(tuple(sorted(alternatives)))
            position += size
        else:
            found.append(((words[position],),))
            position += 1
    return found


def rank(documents: Iterable[Document], query: str) -> dict[int, int]:
    """{document key: score} of the documents where every concept of `query` is found, the best first; the
    score sums, per concept, the weight of the best place it is found, plus a bonus for a tool's whole name."""
    wanted = concepts(query)
    if not wanted:
        return {}
    asked = tokens(query)
    scores = {}
    for document in documents:
        weights = [document.weight_of(alternatives) for alternatives in wanted]
        if all(weights):
            exact = any(words == asked for words in document.fields.get("name", ()))
            scores[document.key] = sum(weights) + (EXACT_NAME_BONUS if exact else 0)
    return dict(sorted(scores.items(), key=lambda item: -item[1]))
