"""Result types of the two suites. Field names of ``RequestResult`` match ``probes.models.RequestMeasurement``."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields

from scoring.vocabulary import CLIENT_SUMMARY_METRICS, ITL, MEASURED_OUTCOMES, PERCENTILES, percentiles


@dataclass
class RequestResult:
    """One streamed request. Times are milliseconds measured from the moment the request was written to the
    connection (``t0``), except ``queue_ms`` and ``connect_ms`` which happen before it. None = not measurable."""

    index: int
    started_at: dt.datetime
    ok: bool = False
    http_status: int | None = None
    queue_ms: float | None = None
    connect_ms: float | None = None
    headers_ms: float | None = None
    ttft_ms: float | None = None
    ttfat_ms: float | None = None
    e2e_ms: float | None = None
    tpot_ms: float | None = None
    output_speed_tps: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_source: str = ""
    chunks: int | None = None
    itl_p50_ms: float | None = None
    itl_p95_ms: float | None = None
    itl_p99_ms: float | None = None
    gaps_ms: list = field(default_factory=list)
    tokens_per_chunk: list = field(default_factory=list)
    buffered: bool = False
    server_timings: dict = field(default_factory=dict)
    request_id: str = ""
    error_class: str = ""
    error_message: str = ""
    # Not stored and not in the CLI's JSON: the raw perf_counter_ns stamps behind the figures, for accuracy
    # benchmarks. Keys: start_ns, written_ns, headers_ns, first_token_ns, first_answer_ns, last_token_ns.
    raw_stamps: dict = field(default_factory=dict, repr=False, compare=False, metadata={"stored": False})

    @classmethod
    def stored_field_names(cls) -> tuple[str, ...]:
        """The fields a ``RequestMeasurement`` row has, in declaration order."""
        return tuple(f.name for f in fields(cls) if f.metadata.get("stored", True))

    def as_fields(self) -> dict:
        """Every stored field by name, ready for ``RequestMeasurement(**result.as_fields())``."""
        return {name: getattr(self, name) for name in self.stored_field_names()}

    def to_json(self) -> dict:
        """The CLI's per-request shape."""
        return {
            "ttft_ms": self.ttft_ms,
            "ttfat_ms": self.ttfat_ms,
            "headers_ms": self.headers_ms,
            "e2e_ms": self.e2e_ms,
            "output_tokens": self.output_tokens,
            "output_tokens_source": self.output_tokens_source or None,
            "output_speed_tps": self.output_speed_tps,
            "tpot_ms": self.tpot_ms,
            "itl_ms": {name: getattr(self, ITL.percentile_field(name)) for name in PERCENTILES},
            "chunks": self.chunks,
            "buffered": self.buffered,
            "error": (
                {"class": self.error_class, "message": self.error_message, "status": self.http_status}
                if self.error_class
                else None
            ),
        }


@dataclass
class SpeedResult:
    """A speed run: every request, what was sent (no secret), and what the server told about itself."""

    requests: list[RequestResult] = field(default_factory=list)
    request_params: dict = field(default_factory=dict)
    server_info: dict = field(default_factory=dict)
    include_usage_supported: bool | None = None
    token_param: str | None = None
    error_class: str = ""
    error_message: str = ""
    rate_limit_retries: int = 0

    def summary(self) -> dict:
        """p50/p95/p99 of each metric of the client's summary over the successful requests, plus counts and the
        success rate."""
        ok = [r for r in self.requests if r.ok]
        summary: dict = {
            metric.key: percentiles([getattr(r, metric.key) for r in ok]) for metric in CLIENT_SUMMARY_METRICS
        }
        summary["requests"] = len(self.requests)
        summary["ok"] = len(ok)
        summary["success_rate"] = (len(ok) / len(self.requests)) if self.requests else None
        return summary

    def to_json(self) -> dict:
        document = {"requests": [r.to_json() for r in self.requests], "summary": self.summary()}
        if self.error_class:
            document["error"] = {"class": self.error_class, "message": self.error_message}
        return document


@dataclass
class CompatCheckResult:
    name: str
    outcome: str
    http_status: int | None = None
    message: str = ""
    detail: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in {outcome.value for outcome in MEASURED_OUTCOMES}:
            raise ValueError(f"unknown compat outcome {self.outcome!r}")

    def to_json(self) -> dict:
        return {"outcome": self.outcome, "status": self.http_status, "detail": self.detail, "message": self.message}


@dataclass
class CompatResult:
    checks: list[CompatCheckResult] = field(default_factory=list)
    token_param: str | None = None
    server_info: dict = field(default_factory=dict)
    error_class: str = ""
    error_message: str = ""

    def by_name(self) -> dict[str, CompatCheckResult]:
        return {check.name: check for check in self.checks}

    def to_json(self) -> dict:
        return {check.name: check.to_json() for check in self.checks}
