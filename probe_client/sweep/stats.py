"""Per-level figures of a sweep, goodput, the knee, cost, and the prefill/decode fit. Pure functions of samples.

Definitions (docs/benchmark-lab.md):

- TTFT, TPOT, E2E: per request, as the speed suite measures them (docs/probes-measurement.md); p50/p95/p99 over
  the level's successful requests. ITL: every gap between consecutive token-bearing chunks of every request,
  pooled (vLLM's convention), with ``itl_per_token`` dividing each gap by the tokens of the later chunk.
- merged reads: a request's TTFT is flagged when its first token event arrived in the same network read as the
  second, a gap when either of its ends did so with the next token event (``stream_analysis.merged_reads``):
  one kernel stamp covers both, so the flagged figure may be off by up to one gap. ``ttft_ms["merged_reads"]``
  counts the level's successful requests with a flagged TTFT, ``itl_ms["merged_reads"]`` its flagged gaps.
- level duration: from the first request written to the last token received, both stamps of the requests
  themselves (the write's and the kernel's receive stamp of the last token-bearing chunk, as TTFT uses), so the
  client's own start-up and tear-down around the level are not counted (:func:`level_duration_s`); output
  tok/s = output tokens of successful requests ÷ duration; total tok/s adds their input tokens; req/s =
  successful requests ÷ duration.
- goodput (DistServe's definition, as vLLM's ``--goodput``): requests that succeeded AND met every SLO, ÷
  duration; TPOT counts as met when a request produced one token. ``slo_attainment`` = that share of all sent.
- a level meets the SLO when its attainment is at least ``SLO.attainment``; the knee is the first level that
  does not, after at least one that does (``best`` is the last one that does).
- open loop: ``schedule_lag_ms`` is how late each request was written after its Poisson arrival time (p50/p95/
  p99): a lag that grows says the client, not the server, was the bottleneck.
- cost per 1M output tokens = hourly price ÷ 3600 ÷ output tok/s × 10⁶.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field

from scoring.vocabulary import LevelFigures, percentile, percentiles


def level_figures(values: list[float | None]) -> LevelFigures:
    clean = [v for v in values if v is not None]
    return LevelFigures(**percentiles(clean), mean=(sum(clean) / len(clean)) if clean else None)


@dataclass(frozen=True)
class SLO:
    """Operator service-level objectives. ``attainment``: share of requests that must meet both for a level
    to count as meeting the SLO (90% is the target DistServe evaluates against)."""

    ttft_ms: float
    tpot_ms: float
    attainment: float = 0.9

    def __post_init__(self) -> None:
        for name in ("ttft_ms", "tpot_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 3_600_000:
                raise ValueError(f"slo.{name}: must be a number of milliseconds above 0, got {value!r}")
        if isinstance(self.attainment, bool) or not isinstance(self.attainment, (int, float)):
            raise ValueError("slo.attainment: must be a number between 0 and 1")
        if not 0 < self.attainment <= 1:
            raise ValueError(f"slo.attainment: must be above 0 and at most 1, got {self.attainment}")

    @classmethod
    def from_dict(cls, data) -> SLO:
        if not isinstance(data, dict):
            raise ValueError("slo: must be an object with ttft_ms and tpot_ms")
        unknown = sorted(set(data) - {"ttft_ms", "tpot_ms", "attainment"})
        if unknown:
            raise ValueError(f"slo.{unknown[0]}: not an SLO field (ttft_ms, tpot_ms, attainment)")
        for name in ("ttft_ms", "tpot_ms"):
            if name not in data:
                raise ValueError(f"slo.{name}: required")
        return cls(ttft_ms=data["ttft_ms"], tpot_ms=data["tpot_ms"], attainment=data.get("attainment", 0.9))

    def to_dict(self) -> dict:
        return asdict(self)

    def met_by(self, sample: Sample) -> bool:
        if not sample.ok or sample.ttft_ms is None:
            return False
        tpot = sample.tpot_ms if sample.tpot_ms is not None else 0.0
        return sample.ttft_ms <= self.ttft_ms and tpot <= self.tpot_ms


@dataclass
class Sample:
    """One request of a level, reduced to what the figures need. Times in ms from the request's write."""

    index: int
    ok: bool
    input_tokens: int | None = None
    output_tokens: int | None = None
    prefix_tokens: int = 0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    output_speed_tps: float | None = None
    cached_tokens: int | None = None
    cached_tokens_source: str = ""
    output_tokens_source: str = ""
    error_class: str = ""
    error_message: str = ""
    request_id: str = ""
    sent_ns: int | None = field(default=None, repr=False)
    last_token_ns: int | None = field(default=None, repr=False)
    gaps_ms: list = field(default_factory=list, repr=False)
    ttft_merged: bool = False
    merged_gaps: list = field(default_factory=list, repr=False)
    tokens_per_chunk: list = field(default_factory=list, repr=False)
    content: str = field(default="", repr=False)
    tool_calls: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "ok": self.ok,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "prefix_tokens": self.prefix_tokens,
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "e2e_ms": self.e2e_ms,
            "cached_tokens": self.cached_tokens,
            "error_class": self.error_class,
        }

    def itl_per_token_ms(self) -> list[float]:
        """Each gap divided by the tokens of the chunk that ended it (SGLang's retokenized ITL)."""
        per_chunk = self.tokens_per_chunk[1:]
        return [gap / tokens for gap, tokens in zip(self.gaps_ms, per_chunk) if tokens]


@dataclass
class LevelResult:
    """The figures of one sweep level. ``level`` is a concurrency (closed loop) or requests/s (open loop)."""

    mode: str
    level: float
    requests: int
    ok: int
    duration_s: float
    ttft_ms: dict
    tpot_ms: dict
    itl_ms: dict
    e2e_ms: dict
    output_tps: float | None
    total_tps: float | None
    request_rate: float | None
    goodput_rps: float | None
    slo_attainment: float | None
    meets_slo: bool | None
    cost_per_1m_output_usd: float | None
    errors: dict
    output_tokens_source: str
    truncated: bool = False
    schedule_lag_ms: dict | None = None
    samples: list[Sample] = field(default_factory=list, repr=False)

    def to_dict(self, *, with_samples: bool = False) -> dict:
        document = {
            "mode": self.mode,
            "level": self.level,
            "requests": self.requests,
            "ok": self.ok,
            "errors": dict(self.errors),
            "duration_s": self.duration_s,
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "itl_ms": self.itl_ms,
            "e2e_ms": self.e2e_ms,
            "output_tps": self.output_tps,
            "total_tps": self.total_tps,
            "request_rate": self.request_rate,
            "goodput_rps": self.goodput_rps,
            "slo_attainment": self.slo_attainment,
            "meets_slo": self.meets_slo,
            "cost_per_1m_output_usd": self.cost_per_1m_output_usd,
            "output_tokens_source": self.output_tokens_source,
            "truncated": self.truncated,
            "schedule_lag_ms": self.schedule_lag_ms,
        }
        if with_samples:
            document["samples"] = [s.to_dict() for s in self.samples]
        return document


def cost_per_million(hourly_price_usd: float | None, output_tps: float | None) -> float | None:
    if hourly_price_usd is None or not output_tps:
        return None
    return hourly_price_usd / 3600.0 / output_tps * 1_000_000


def level_duration_s(samples: list[Sample]) -> float | None:
    """First request written to last token received (see the module docstring); None when no request of the
    level received a token."""
    sent = [s.sent_ns for s in samples if s.sent_ns is not None]
    ends = [s.last_token_ns for s in samples if s.last_token_ns is not None]
    if not sent or not ends:
        return None
    return (max(ends) - min(sent)) / 1e9


def summarise_level(
    *,
    mode: str,
    level: float,
    samples: list[Sample],
    duration_s: float,
    slo: SLO | None,
    hourly_price_usd: float | None,
    truncated: bool = False,
    schedule_lag_ms: list[float] | None = None,
) -> LevelResult:
    ok = [s for s in samples if s.ok]
    errors = dict(Counter(sample.error_class or "unknown" for sample in samples if not sample.ok))
    gaps = [gap for s in ok for gap in s.gaps_ms]
    per_token = [value for s in ok for value in s.itl_per_token_ms()]
    itl = level_figures(gaps)
    itl["per_token_p50"] = percentile(per_token, 50)
    itl["merged_reads"] = sum(len(s.merged_gaps) for s in ok)
    ttft = level_figures([s.ttft_ms for s in ok])
    ttft["merged_reads"] = sum(1 for s in ok if s.ttft_merged)
    output_tokens = sum(s.output_tokens or 0 for s in ok)
    input_tokens = sum(s.input_tokens or 0 for s in ok)
    rate = lambda count: (count / duration_s) if duration_s > 0 else None  # noqa: E731
    output_tps = rate(output_tokens) if ok else None
    good = sum(1 for s in samples if slo is not None and slo.met_by(s))
    attainment = (good / len(samples)) if slo is not None and samples else None
    sources = {s.output_tokens_source for s in ok if s.output_tokens_source}
    return LevelResult(
        mode=mode,
        level=level,
        requests=len(samples),
        ok=len(ok),
        duration_s=duration_s,
        ttft_ms=ttft,
        tpot_ms=level_figures([s.tpot_ms for s in ok]),
        itl_ms=itl,
        e2e_ms=level_figures([s.e2e_ms for s in ok]),
        output_tps=output_tps,
        total_tps=rate(output_tokens + input_tokens) if ok else None,
        request_rate=rate(len(ok)),
        goodput_rps=rate(good) if slo is not None else None,
        slo_attainment=attainment,
        meets_slo=(attainment >= slo.attainment) if attainment is not None else None,
        cost_per_1m_output_usd=cost_per_million(hourly_price_usd, output_tps),
        errors=errors,
        output_tokens_source=(sources.pop() if len(sources) == 1 else ("mixed" if sources else "")),
        truncated=truncated,
        schedule_lag_ms=level_figures(schedule_lag_ms) if schedule_lag_ms else None,
        samples=samples,
    )


@dataclass(frozen=True)
class Knee:
    """Where latency breaks the SLO: ``best`` is the highest level before it that met the SLO."""

    level: float | None
    best: float | None
    reason: str

    def to_dict(self) -> dict:
        return {"level": self.level, "best": self.best, "reason": self.reason}


def find_knee(levels: list[dict | LevelResult]) -> Knee:
    """The first level (in increasing load) that misses the SLO after one that met it. Levels may be results or
    their ``to_dict()`` (the stored form), so stored and fresh sweeps use the same rule."""
    rows = sorted((_as_dict(level) for level in levels), key=lambda row: row["level"])
    judged = [row for row in rows if row.get("meets_slo") is not None]
    if not judged:
        return Knee(None, None, "no SLO was set")
    best = None
    for row in judged:
        if row["meets_slo"]:
            best = row["level"]
            continue
        if best is None:
            return Knee(row["level"], None, "the lowest level already misses the SLO")
        return Knee(row["level"], best, "first level whose SLO attainment fell below the target")
    return Knee(None, best, "every level met the SLO: the knee lies beyond the highest level tried")


def _as_dict(level) -> dict:
    return level if isinstance(level, dict) else level.to_dict()


@dataclass(frozen=True)
class LinearFit:
    """y = intercept + slope · x by least squares, with r² and the number of points."""

    slope: float
    intercept: float
    r_squared: float | None
    points: int

    def to_dict(self) -> dict:
        return asdict(self)


def linear_fit(points: list[tuple[float, float]]) -> LinearFit | None:
    """Least squares; None with fewer than two distinct x values."""
    clean = [(x, y) for x, y in points if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    if len({x for x, _ in clean}) < 2:
        return None
    n = len(clean)
    mean_x = sum(x for x, _ in clean) / n
    mean_y = sum(y for _, y in clean) / n
    sxx = sum((x - mean_x) ** 2 for x, _ in clean)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in clean)
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for _, y in clean)
    residual = sum((y - (intercept + slope * x)) ** 2 for x, y in clean)
    return LinearFit(slope=slope, intercept=intercept, r_squared=(1 - residual / total) if total > 0 else None, points=n)
