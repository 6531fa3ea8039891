"""Search that understands the field: words, not substrings ("Mac" never matches "machine"), the field's synonyms
("json schema" finds structured output, "Mac" finds Apple silicon), and a rank by where the words are found (a
tool's name before its features, its features before its prose). Every match says where it was found.

A vendor's word (AMD, ROCm, Apple, Intel, NVIDIA) asks which accelerators a tool runs on, so it is looked for in
names and in the accelerators a document lists, never in CPU architectures ("x86: Intel, AMD") or prose.

Plain Python over plain documents, so it answers alike on PostgreSQL and SQLite; catalog.selectors builds the
documents from the catalog once per data generation.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# A vendor's words: each group means running on that vendor's accelerators.
VENDOR_GROUPS: tuple[frozenset[str], ...] = tuple(frozenset(group) for group in (
    {"mac", "macos", "apple", "apple silicon", "metal", "mlx"},
    {"amd", "rocm", "hip", "instinct"},
    {"nvidia", "cuda"},
    {"intel", "xpu", "sycl", "gaudi", "openvino"},
))
# Phrases that mean the same thing to someone choosing an engine; each group is searched as one concept.
SYNONYMS: tuple[frozenset[str], ...] = tuple(frozenset(group) for group in (
    {"json schema", "structured output", "structured outputs", "response format", "guided decoding",
     "constrained decoding", "grammar"},
    {"json", "json mode", "json object", "structured output", "json schema"},
    *VENDOR_GROUPS,
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
# Where a word is found, and how much that says about the document.
WEIGHTS = {"name": 8, "accelerators": 3, "listed": 3, "prose": 1}
# Where a vendor's word counts (see the module's docstring).
VENDOR_FIELDS = ("name", "accelerators")
# What a match found in a field without a label of its own is called.
DEFAULT_LABELS = {"name": "name", "prose": "description"}
# A query that is a document's whole name puts that document first.
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
class Entry:
    """One text of a document: its words, and what a match in it is called ("serves gpt-oss-120b")."""

    label: str
    words: tuple[str, ...]


@dataclass(frozen=True)
class Concept:
    """One thing asked: alternative phrases (a synonym group), and whether it is a vendor's word."""

    alternatives: tuple[tuple[str, ...], ...]
    vendor: bool = False


@dataclass(frozen=True)
class Match:
    score: int
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    """One tool, model or device as search sees it: `fields` maps a weight name of WEIGHTS to its entries."""

    key: int
    fields: Mapping[str, tuple[Entry, ...]]

    @classmethod
    def build(cls, key: int, **texts: Iterable[str | tuple[str, str]]) -> Document:
        """Each text is a string, or (label, text) where a match should be called something else than the text
        itself (a name or prose is called "name" or "description")."""
        fields = {}
        for weight, values in texts.items():
            entries = []
            for value in values:
                label, text = value if isinstance(value, tuple) else (DEFAULT_LABELS.get(weight, value), value)
                if text:
                    entries.append(Entry(label, tokens(text)))
            fields[weight] = tuple(entries)
        return cls(key, fields)

    def best_place(self, concept: Concept) -> tuple[int, str]:
        """The highest weight of an entry holding one of the concept's phrases, and that entry's label ((0, "")
        when none does)."""
        best, label = 0, ""
        for weight_name, entries in self.fields.items():
            if concept.vendor and weight_name not in VENDOR_FIELDS or WEIGHTS[weight_name] <= best:
                continue
            for entry in entries:
                if any(_contains(entry.words, phrase) for phrase in concept.alternatives):
                    best, label = WEIGHTS[weight_name], entry.label
                    break
        return best, label


def concepts(query: str) -> list[Concept]:
    """The query as concepts, each a set of alternative phrases: the longest synonym phrase found at each place
    stands for its whole group; any other word stands for itself."""
    words = tokens(query)
    groups = [(tuple(tokens(phrase)), group) for group in SYNONYMS for phrase in group]
    found: list[Concept] = []
    position = 0
    while position < len(words):
        matches = [(phrase, group) for phrase, group in groups
                   if len(phrase) > 0 and tuple(words[position:position + len(phrase)]) == phrase]
        if matches:
            size = max(len(phrase) for phrase, _ in matches)
            longest = [group for phrase, group in matches if len(phrase) == size]
            alternatives = {tokens(other) for group in longest for other in group}
            found.append(Concept(tuple(sorted(alternatives)), vendor=any(group in VENDOR_GROUPS for group in longest)))
            position += size
        else:
            found.append(Concept(((words[position],),)))
            position += 1
    return found


def rank(documents: Iterable[Document], query: str) -> dict[int, Match]:
    """{document key: Match} of the documents where every concept of `query` is found, the best first; the score
    sums, per concept, the weight of the best place it is found, plus a bonus for a whole name; the reasons name
    those places, each once, in the order asked."""
    wanted = concepts(query)
    if not wanted:
        return {}
    asked = tokens(query)
    found = {}
    for document in documents:
        places = [document.best_place(concept) for concept in wanted]
        if all(weight for weight, _ in places):
            exact = any(entry.words == asked for entry in document.fields.get("name", ()))
            score = sum(weight for weight, _ in places) + (EXACT_NAME_BONUS if exact else 0)
            found[document.key] = Match(score, tuple(dict.fromkeys(label for _, label in places)))
    return dict(sorted(found.items(), key=lambda item: -item[1].score))
