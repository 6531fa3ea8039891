"""A self-hosted engine's load behaviour, for sweep tests: the ``engine`` option of the simulator.

It reproduces what the engines document, with the constants chosen by the test:

- ``slots``: how many streams are served at once; further requests wait for a free slot before their prefill
  starts (llama.cpp ``llama-server --parallel N`` slots; vLLM ``--max-num-seqs``). None = unlimited.
- ``prefill_ms_per_token``: the first token comes ``ttft_ms + prefill_ms_per_token × uncached prompt tokens``
  after the slot is taken (prefill is proportional to the tokens it computes).
- ``itl_ms_per_active``: each decode step takes ``itl_ms + itl_ms_per_active × (streams decoding − 1)``: with
  continuous batching, one step serves every active stream and grows with the batch.
- ``prefix_cache``: automatic prefix caching as vLLM documents it: prompts are hashed in blocks of
  ``cache_block_tokens`` (vLLM's default block size is 16) chained from the start, a new prompt reuses the
  longest run of leading blocks already seen, and at least one prompt token is always computed. The count is
  reported as ``usage.prompt_tokens_details.cached_tokens`` (OpenAI's field, which vLLM fills), and
  ``GET /metrics`` exposes ``vllm:prefix_cache_queries_total`` / ``vllm:prefix_cache_hits_total`` in tokens.
  ``report_cached_tokens: false`` leaves the usage field out (vLLM fills it only with
  ``--enable-prompt-tokens-details``), so only ``/metrics`` tells.
- ``grammar_ms`` / ``grammar_itl_ms``: constrained decoding (a ``json_schema`` response format or tools) adds
  a grammar compilation delay before the first token and a token-mask cost to every step, as the structured-
  output backends (XGrammar, Outlines) describe their overhead.

A token is a whitespace-separated word of the last user message (the simulator's ``usage.prompt_tokens``).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field


@dataclass
class EngineModel:
    slots: int | None = None
    prefill_ms_per_token: float = 0.0
    itl_ms_per_active: float = 0.0
    prefix_cache: bool = False
    cache_block_tokens: int = 16
    report_cached_tokens: bool = True
    grammar_ms: float = 0.0
    grammar_itl_ms: float = 0.0
    active: int = 0
    cached_blocks: set = field(default_factory=set)
    cache_queries: int = 0
    cache_hits: int = 0
    _slots: asyncio.Semaphore | None = None

    @classmethod
    def from_options(cls, options: dict | None) -> EngineModel | None:
        if not options:
            return None
        names = (
            "slots",
            "prefill_ms_per_token",
            "itl_ms_per_active",
            "prefix_cache",
            "cache_block_tokens",
            "report_cached_tokens",
            "grammar_ms",
            "grammar_itl_ms",
        )
        return cls(**{name: options[name] for name in names if name in options})

    def reset(self) -> None:
        self.cached_blocks.clear()
        self.cache_queries = 0
        self.cache_hits = 0

    async def acquire(self) -> None:
        if self.slots is not None:
            if self._slots is None:
                self._slots = asyncio.Semaphore(self.slots)
            await self._slots.acquire()
        self.active += 1

    def release(self) -> None:
        self.active -= 1
        if self._slots is not None:
            self._slots.release()

    def lookup(self, tokens: list[str]) -> int:
        """Cached leading tokens of this prompt (then remember all of its full blocks)."""
        if not self.prefix_cache:
            return 0
        block = self.cache_block_tokens
        digest = b""
        matched = 0
        still_matching = True
        for end in range(block, len(tokens) + 1, block):
            digest = hashlib.sha256(digest + " ".join(tokens[end - block : end]).encode()).digest()
            if still_matching and digest in self.cached_blocks:
                matched = end
            else:
                still_matching = False
            self.cached_blocks.add(digest)
        cached = min(matched, max(0, len(tokens) - 1) // block * block)
        self.cache_queries += len(tokens)
        self.cache_hits += cached
        return cached

    def prefill_ms(self, prompt_tokens: int, cached: int) -> float:
        return self.prefill_ms_per_token * (prompt_tokens - cached)

    def step_ms(self, itl_ms: float, *, constrained: bool = False) -> float:
        extra = self.grammar_itl_ms if constrained else 0.0
        return itl_ms + extra + self.itl_ms_per_active * max(0, self.active - 1)

    @staticmethod
    def constrained(body: dict) -> bool:
        return bool(body.get("tools")) or (body.get("response_format") or {}).get("type") == "json_schema"

    def metrics_text(self) -> str:
        return (
            "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.\n"
            "# TYPE vllm:prefix_cache_queries_total counter\n"
            f'vllm:prefix_cache_queries_total{{model_name="sim-model"}} {float(self.cache_queries)}\n'
            "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.\n"
            "# TYPE vllm:prefix_cache_hits_total counter\n"
            f'vllm:prefix_cache_hits_total{{model_name="sim-model"}} {float(self.cache_hits)}\n'
            f'vllm:num_requests_running{{model_name="sim-model"}} {float(self.active)}\n'
        )
