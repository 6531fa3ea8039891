"""Three single-stream suites that a throughput sweep cannot answer (seed 000's benchmarking rules):

- :func:`run_prefill_decode`: TTFT against input length, fitted by least squares (slope = ms per prompt token
  → prefill tokens/s = 1000 ÷ slope; intercept = the fixed cost of a request), and the decode rate from the
  per-token inter-token latency (1000 ÷ its median), reported separately.
- :func:`run_prefix_cache`: the same long shared prefix (with a unique tail) against unique prompts of equal
  length, sent one at a time and alternated; the TTFT ratio shared ÷ unique (below 1 when a prefix cache
  helps), and the hit rate of the shared-prefix requests (cached prompt tokens ÷ prompt tokens, vLLM's
  definition) where the server says it: ``usage.prompt_tokens_details.cached_tokens``, llama.cpp
  ``timings.cache_n``, or vLLM's ``vllm:prefix_cache_hits``/``queries`` counters read from ``/metrics`` just
  before and after each shared request. The first shared request fills the cache and is reported apart.
- :func:`run_structured_output`: the same prompts plain, with ``response_format: json_schema`` and with a tool;
  TTFT and output speed of each and their cost against plain, and how many answers validated (the JSON against
  the schema, the tool call's arguments against the tool's parameters).

All run one request at a time so that load does not blur the comparison; each result has ``to_dict``.
"""

from __future__ import annotations

import inspect
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field

import jsonschema

from ..config import EndpointConfig
from ..http import ProbeHTTP
from ..speed import FATAL_ERRORS, _Params, gc_paused
from ..workloads import new_nonce
from .requests import BOOK_SCHEMA, WEATHER_ARGUMENTS_SCHEMA, sample_from, send
from .server_facts import prefix_cache_counters
from .stats import LinearFit, Sample, level_figures, linear_fit
from .workload import RequestShape

MAX_SUITE_REQUESTS = 400


class SuiteError(ValueError):
    """Bad suite parameters; the message starts with the field's name."""


def _median(values) -> float | None:
    clean = [v for v in values if v is not None]
    return statistics.median(clean) if clean else None


def _error_counts(samples: list[Sample]) -> dict[str, int]:
    """How many of ``samples`` failed, by error class."""
    return dict(Counter(sample.error_class for sample in samples if not sample.ok))


def _check_count(name: str, value, low: int = 1, high: int = MAX_SUITE_REQUESTS) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SuiteError(f"{name}: must be a whole number from {low} to {high}, got {value!r}")


def _check_prefill_decode(*, input_lengths, requests_per_length, output_tokens) -> None:
    lengths = list(input_lengths) if isinstance(input_lengths, (list, tuple)) else []
    if not 2 <= len(lengths) <= 12 or len(set(lengths)) < 2:
        raise SuiteError("input_lengths: give 2 to 12 different input lengths")
    for position, length in enumerate(lengths):
        _check_count(f"input_lengths[{position}]", length, 48, 1_000_000)
    _check_count("requests_per_length", requests_per_length, 1, 50)
    _check_count("output_tokens", output_tokens, 2, 4096)


def _check_prefix_cache(*, prefix_tokens, suffix_tokens, requests, output_tokens) -> None:
    _check_count("prefix_tokens", prefix_tokens, 64, 1_000_000)
    _check_count("suffix_tokens", suffix_tokens, 40, 100_000)
    _check_count("requests", requests, 2, 100)
    _check_count("output_tokens", output_tokens, 1, 4096)


def _check_structured_output(*, requests, input_tokens, output_tokens, variants) -> None:
    _check_count("requests", requests, 1, 100)
    _check_count("input_tokens", input_tokens, 64, 100_000)
    _check_count("output_tokens", output_tokens, 16, 4096)
    if not isinstance(variants, (list, tuple)) or "plain" not in variants or not set(variants) <= set(VARIANTS):
        raise SuiteError(f"variants: a subset of {', '.join(VARIANTS)} that includes plain")


class _Session:
    """One connection, negotiated parameters, and the samples taken, for a single-stream suite."""

    def __init__(self, config: EndpointConfig, http: ProbeHTTP) -> None:
        self.config = config
        self.http = http
        self.params = _Params()
        self.secrets = http.secrets()
        self.run_nonce = new_nonce()
        self.count = 0

    async def sample(
        self, shape: RequestShape, *, variant: str = "plain", prefix_seed: str | None = None, nonce: str | None = None
    ) -> Sample:
        self.count += 1
        exchange = await send(
            self.http,
            self.config,
            shape,
            nonce=nonce or f"{self.run_nonce}-{self.count}",
            prefix_seed=prefix_seed or self.run_nonce,
            params=self.params,
            variant=variant,
        )
        sample, _ = sample_from(
            exchange, index=self.count, shape=shape, streaming=True, read_timeout_s=self.config.read_timeout_s,
            secrets=self.secrets,
        )
        return sample


def _fatal(samples: list[Sample]) -> Sample | None:
    """The first sample, when every sample failed and its failure stops the suite."""
    if samples and not any(s.ok for s in samples) and samples[0].error_class in FATAL_ERRORS:
        return samples[0]
    return None


# --- prefill vs decode ----------------------------------------------------------------------------------


@dataclass
class PrefillDecodeResult:
    input_lengths: list[int]
    points: list[dict] = field(default_factory=list)  # per request: input_tokens, ttft_ms, cached_tokens
    fit: LinearFit | None = None
    prefill_tps: float | None = None
    request_overhead_ms: float | None = None
    decode_tps: float | None = None
    itl_per_token_ms: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    error_class: str = ""
    error_message: str = ""
    note: str = ""
    samples: list[Sample] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {
            "input_lengths": self.input_lengths,
            "points": self.points,
            "fit": self.fit.to_dict() if self.fit else None,
            "prefill_tps": self.prefill_tps,
            "request_overhead_ms": self.request_overhead_ms,
            "decode_tps": self.decode_tps,
            "itl_per_token_ms": self.itl_per_token_ms,
            "errors": self.errors,
            "error": {"class": self.error_class, "message": self.error_message} if self.error_class else None,
            "note": self.note,
        }


def prefill_decode_from(samples: list[Sample], input_lengths: list[int]) -> PrefillDecodeResult:
    """The fit and the decode rate from single-stream samples (pure; also used on imported data)."""
    result = PrefillDecodeResult(input_lengths=list(input_lengths), samples=list(samples))
    ok = [s for s in samples if s.ok and s.ttft_ms is not None]
    result.errors = _error_counts(samples)
    # Tokens the server served from a cache were not prefilled: they would flatten the slope.
    points = [((s.input_tokens or 0) - (s.cached_tokens or 0), s.ttft_ms) for s in ok]
    result.points = [
        {"input_tokens": s.input_tokens, "cached_tokens": s.cached_tokens, "ttft_ms": s.ttft_ms} for s in ok
    ]
    result.fit = linear_fit(points)
    if result.fit is not None and result.fit.slope > 0:
        result.prefill_tps = 1000.0 / result.fit.slope
        result.request_overhead_ms = result.fit.intercept
    elif result.fit is not None:
        result.note = "TTFT did not grow with the input length: prefill is too fast to resolve at these lengths"
    per_token = [value for s in ok for value in s.itl_per_token_ms()]
    result.itl_per_token_ms = level_figures(per_token)
    median_itl = result.itl_per_token_ms.get("p50")
    if median_itl:
        result.decode_tps = 1000.0 / median_itl
    return result


async def run_prefill_decode(
    config: EndpointConfig,
    *,
    input_lengths: list[int] | tuple[int, ...] = (128, 512, 1024, 2048),
    requests_per_length: int = 3,
    output_tokens: int = 64,
) -> PrefillDecodeResult:
    lengths = list(input_lengths)
    _check_prefill_decode(input_lengths=lengths, requests_per_length=requests_per_length, output_tokens=output_tokens)
    samples: list[Sample] = []
    with gc_paused():
        async with ProbeHTTP(config, max_connections=1) as http:
            session = _Session(config, http)
            await session.sample(RequestShape(lengths[0], output_tokens))  # settles parameters, warms up
            for _ in range(requests_per_length):
                for length in lengths:  # interleaved, so drift over time does not masquerade as a slope
                    samples.append(await session.sample(RequestShape(length, output_tokens)))
                fatal = _fatal(samples)
                if fatal:
                    return PrefillDecodeResult(lengths, error_class=fatal.error_class, error_message=fatal.error_message)
    return prefill_decode_from(samples, lengths)


# --- prefix cache -----------------------------------------------------------------------------------------


@dataclass
class PrefixCacheResult:
    prefix_tokens: int
    input_tokens: int
    requests: int
    shared_ttft_ms: dict = field(default_factory=dict)
    unique_ttft_ms: dict = field(default_factory=dict)
    first_shared_ttft_ms: float | None = None
    ttft_ratio: float | None = None
    hit_rate: float | None = None
    hit_rate_source: str = ""
    unique_hit_rate: float | None = None
    errors: dict = field(default_factory=dict)
    error_class: str = ""
    error_message: str = ""
    samples: list[Sample] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {
            "prefix_tokens": self.prefix_tokens,
            "input_tokens": self.input_tokens,
            "requests": self.requests,
            "shared_ttft_ms": self.shared_ttft_ms,
            "unique_ttft_ms": self.unique_ttft_ms,
            "first_shared_ttft_ms": self.first_shared_ttft_ms,
            "ttft_ratio": self.ttft_ratio,
            "hit_rate": self.hit_rate,
            "hit_rate_source": self.hit_rate_source,
            "unique_hit_rate": self.unique_hit_rate,
            "errors": self.errors,
            "error": {"class": self.error_class, "message": self.error_message} if self.error_class else None,
        }


def _hit_rate(samples: list[Sample]) -> float | None:
    """Cached prompt tokens ÷ prompt tokens (vLLM's token hit rate), over requests whose counts the server gave."""
    counted = [s for s in samples if s.ok and s.cached_tokens is not None and s.input_tokens]
    if not counted:
        return None
    return sum(s.cached_tokens for s in counted) / sum(s.input_tokens for s in counted)


async def run_prefix_cache(
    config: EndpointConfig,
    *,
    prefix_tokens: int = 1024,
    suffix_tokens: int = 64,
    requests: int = 6,
    output_tokens: int = 16,
) -> PrefixCacheResult:
    _check_prefix_cache(
        prefix_tokens=prefix_tokens, suffix_tokens=suffix_tokens, requests=requests, output_tokens=output_tokens
    )
    total = prefix_tokens + suffix_tokens
    result = PrefixCacheResult(prefix_tokens=prefix_tokens, input_tokens=total, requests=requests)
    shared: list[Sample] = []
    unique: list[Sample] = []
    with gc_paused():
        async with ProbeHTTP(config, max_connections=1) as http:
            session = _Session(config, http)
            counter_deltas: list[dict] = []
            prefix_seed = new_nonce()
            shared_shape = RequestShape(total, output_tokens, prefix_tokens=prefix_tokens)
            unique_shape = RequestShape(total, output_tokens)
            await session.sample(unique_shape)  # settles parameters on a prompt nothing else shares
            first = await session.sample(shared_shape, prefix_seed=prefix_seed)
            fatal = _fatal([first])
            if fatal:
                result.error_class, result.error_message = fatal.error_class, fatal.error_message
                return result
            result.first_shared_ttft_ms = first.ttft_ms
            for _ in range(requests):
                unique.append(await session.sample(unique_shape))
                before = await prefix_cache_counters(config)
                shared.append(await session.sample(shared_shape, prefix_seed=prefix_seed))
                after = await prefix_cache_counters(config)
                if before and after:
                    counter_deltas.append({key: after[key] - before[key] for key in ("queries", "hits")})
    result.samples = [first] + [sample for pair in zip(unique, shared) for sample in pair]
    result.errors = _error_counts(shared + unique)
    result.shared_ttft_ms = level_figures([s.ttft_ms for s in shared if s.ok])
    result.unique_ttft_ms = level_figures([s.ttft_ms for s in unique if s.ok])
    if result.shared_ttft_ms["p50"] and result.unique_ttft_ms["p50"]:
        result.ttft_ratio = result.shared_ttft_ms["p50"] / result.unique_ttft_ms["p50"]
    result.hit_rate = _hit_rate(shared)
    if result.hit_rate is not None:
        result.hit_rate_source = next(s.cached_tokens_source for s in shared if s.cached_tokens is not None)
        result.unique_hit_rate = _hit_rate(unique)
    elif counter_deltas:
        queries = sum(delta["queries"] for delta in counter_deltas)
        if queries > 0:
            result.hit_rate = sum(delta["hits"] for delta in counter_deltas) / queries
            result.hit_rate_source = "/metrics vllm:prefix_cache_hits ÷ queries"
    return result


# --- structured output ------------------------------------------------------------------------------------


VARIANTS = ("plain", "json_schema", "tools")


@dataclass
class StructuredOutputResult:
    requests: int
    variants: dict = field(default_factory=dict)  # per variant: ttft, speed, ok, valid, errors
    ttft_cost: dict = field(default_factory=dict)  # variant → median TTFT ÷ plain median TTFT
    speed_cost: dict = field(default_factory=dict)  # variant → median speed ÷ plain median speed
    error_class: str = ""
    error_message: str = ""
    samples: dict = field(default_factory=dict, repr=False)  # variant → its samples

    def to_dict(self) -> dict:
        return {
            "requests": self.requests,
            "variants": self.variants,
            "ttft_cost": self.ttft_cost,
            "speed_cost": self.speed_cost,
            "error": {"class": self.error_class, "message": self.error_message} if self.error_class else None,
        }


def validates(sample: Sample, variant: str) -> bool:
    """The answer parses and matches what was asked: the schema, or the tool's parameters."""
    if not sample.ok:
        return False
    try:
        if variant == "json_schema":
            jsonschema.validate(json.loads(sample.content), BOOK_SCHEMA)
        elif variant == "tools":
            calls = [c for c in sample.tool_calls if c.get("name") == "get_weather"]
            if not calls:
                return False
            for call in calls:
                jsonschema.validate(json.loads(call.get("arguments") or ""), WEATHER_ARGUMENTS_SCHEMA)
        else:
            return bool(sample.content)
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


async def run_structured_output(
    config: EndpointConfig,
    *,
    requests: int = 5,
    input_tokens: int = 256,
    output_tokens: int = 128,
    variants: tuple[str, ...] = VARIANTS,
) -> StructuredOutputResult:
    _check_structured_output(
        requests=requests, input_tokens=input_tokens, output_tokens=output_tokens, variants=variants
    )
    result = StructuredOutputResult(requests=requests)
    collected: dict[str, list[Sample]] = {variant: [] for variant in variants}
    with gc_paused():
        async with ProbeHTTP(config, max_connections=1) as http:
            session = _Session(config, http)
            shape = RequestShape(input_tokens, output_tokens)
            await session.sample(shape)
            for _ in range(requests):
                for variant in variants:  # interleaved, so drift affects every variant alike
                    collected[variant].append(await session.sample(shape, variant=variant))
                fatal = _fatal(collected["plain"])
                if fatal:
                    result.error_class, result.error_message = fatal.error_class, fatal.error_message
                    return result
    result.samples = collected
    for variant, samples in collected.items():
        ok = [s for s in samples if s.ok]
        result.variants[variant] = {
            "requests": len(samples),
            "ok": len(ok),
            "valid": sum(1 for s in samples if validates(s, variant)),
            "ttft_ms": level_figures([s.ttft_ms for s in ok]),
            "output_speed_tps": level_figures([s.output_speed_tps for s in ok]),
            "output_tokens": _median(s.output_tokens for s in ok),
            "errors": _error_counts(samples),
            "rejected_message": next((s.error_message for s in samples if s.error_class.startswith("http_4")), ""),
        }
    plain = result.variants["plain"]
    for variant in variants:
        if variant == "plain":
            continue
        row = result.variants[variant]
        if plain["ttft_ms"]["p50"] and row["ttft_ms"]["p50"]:
            result.ttft_cost[variant] = row["ttft_ms"]["p50"] / plain["ttft_ms"]["p50"]
        if plain["output_speed_tps"]["p50"] and row["output_speed_tps"]["p50"]:
            result.speed_cost[variant] = row["output_speed_tps"]["p50"] / plain["output_speed_tps"]["p50"]
    return result


SUITES = {
    "prefill_decode": (run_prefill_decode, _check_prefill_decode),
    "prefix_cache": (run_prefix_cache, _check_prefix_cache),
    "structured_output": (run_structured_output, _check_structured_output),
}


def suite_defaults(suite: str) -> dict:
    """The parameters a suite runs with when a plan leaves them out."""
    return {
        name: parameter.default for name, parameter in inspect.signature(SUITES[suite][0]).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def check_suite_parameters(suite: str, parameters: dict) -> None:
    """Raise :class:`SuiteError` (naming the parameter) unless ``parameters``, with the suite's defaults for the
    rest, are what the suite would accept: a plan is refused before anything is sent or stored."""
    check = SUITES[suite][1]
    defaults = suite_defaults(suite)
    unknown = sorted(set(parameters) - set(defaults))
    if unknown:
        raise SuiteError(f"{unknown[0]}: not a parameter of this suite (known: {', '.join(defaults)})")
    check(**{**defaults, **parameters})
