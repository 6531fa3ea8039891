"""The sweep runner: one workload at increasing load, closed-loop concurrency levels or open-loop Poisson rates.

Public entry point (plain asyncio; no Django)::

    from probe_client import EndpointConfig
    from probe_client.sweep import SLO, PRESETS, SweepPlan, run_sweep

    plan = SweepPlan.concurrency_sweep(cap=16, requests_per_level=64, slo=SLO(ttft_ms=500, tpot_ms=50),
                                       hourly_price_usd=2.5)
    result = asyncio.run(run_sweep(config, plan=plan, workload=PRESETS["chat"]))
    result.to_dict()        # levels with TTFT/TPOT/ITL/E2E p50/p95/p99, tok/s, req/s, goodput, cost; the knee

- closed loop (``mode="concurrency"``): at level *c*, *c* workers each send their next request as soon as the
  previous one ends, until ``requests_per_level`` requests were sent.
- open loop (``mode="rate"``): at level *λ* requests/s, ``requests_per_level`` arrivals with exponential gaps
  (a Poisson process, seeded so a re-run sends the same schedule); a request never waits for another, up to
  ``max_in_flight`` open connections (a request that finds none free waits; that wait is its ``queue_ms``).
- ``on_request_done(level, done, total)`` is called in the event loop as each request of a level ends (a
  progress bar; it must return at once), ``on_level_done(level_result)`` after each level (the Celery task
  stores it), ``should_stop()``
  is polled between requests (interrupt: the level in progress is dropped, not stored), ``skip_levels`` are
  not run (resume after an interruption).
- limits: :class:`SweepLimits` bounds levels, total requests, concurrency, rate and duration; a plan beyond
  them is refused with :class:`SweepLimitError` naming the field. ``max_duration_s`` also stops a running sweep:
  no request is sent after it, the level in progress is marked ``truncated`` and the sweep ends.

Before the first level one request of the workload, counted in no level, settles which parameters the endpoint
accepts (the token limit's name, the usage chunk) and opens the first connection; ``SweepResult.settle`` says
what it did. A level is sent from the caller's event loop (``loops.py``) while one thread reads and stamps every
connection (``transport.py``, ``reading_thread``), so no read waits for the loop. Parsing waits until a level is
over; every read is kernel-stamped in any case, and a read that held two token events is flagged (``stats.py``,
merged reads).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import EndpointConfig
from ..http import ProbeHTTP
from ..speed import FATAL_ERRORS, _Params, gc_paused
from ..workloads import new_nonce
from .loops import LevelPart, measure_part
from .requests import sample_from, send
from .stats import SLO, Knee, LevelResult, Sample, find_knee, level_duration_s, summarise_level
from .workload import Workload

CLIENT_VERSION = "inference-atlas-sweep/1"
MODES = ("concurrency", "rate")


class SweepLimitError(ValueError):
    """A plan that exceeds a limit or is malformed; the message starts with the field's name."""


@dataclass(frozen=True)
class SweepLimits:
    """What one sweep may do at most, so that none runs for hours by mistake."""

    max_levels: int = 12
    max_requests: int = 4000
    max_concurrency: int = 512
    max_rate: float = 500.0
    max_duration_s: float = 3600.0
    max_output_tokens: int = 32768


DEFAULT_LIMITS = SweepLimits()


def doubling_levels(cap: int) -> tuple[int, ...]:
    """1, 2, 4, … up to ``cap``, with ``cap`` itself last when it is not a power of two."""
    if cap < 1:
        raise SweepLimitError(f"cap: must be at least 1, got {cap}")
    levels = []
    level = 1
    while level < cap:
        levels.append(level)
        level *= 2
    levels.append(cap)
    return tuple(levels)


@dataclass(frozen=True)
class SweepPlan:
    mode: str
    levels: tuple[float, ...]
    requests_per_level: int
    slo: SLO | None = None
    hourly_price_usd: float | None = None
    max_duration_s: float = 900.0
    max_in_flight: int = 256
    seed: int = 0

    @classmethod
    def concurrency_sweep(cls, *, cap: int, requests_per_level: int, **options) -> SweepPlan:
        return cls(mode="concurrency", levels=doubling_levels(cap), requests_per_level=requests_per_level, **options)

    @classmethod
    def from_dict(cls, data, *, limits: SweepLimits = DEFAULT_LIMITS) -> SweepPlan:
        """Build from a JSON object (the API's form): ``mode``, ``levels`` or ``cap``, ``requests_per_level``,
        ``slo``, ``hourly_price_usd``, ``max_duration_s``, ``max_in_flight``, ``seed``."""
        if not isinstance(data, dict):
            raise SweepLimitError("plan: must be an object")
        known = {"mode", "levels", "cap", "requests_per_level", "slo", "hourly_price_usd", "max_duration_s",
                 "max_in_flight", "seed"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SweepLimitError(f"{unknown[0]}: not a sweep field (known: {', '.join(sorted(known))})")
        mode = data.get("mode", "concurrency")
        if "levels" in data and "cap" in data:
            raise SweepLimitError("levels: give either levels or cap, not both")
        if "levels" in data:
            levels = data["levels"]
            if not isinstance(levels, list) or not levels:
                raise SweepLimitError("levels: must be a non-empty list of numbers")
        elif "cap" in data and mode == "concurrency":
            cap = data["cap"]
            if isinstance(cap, bool) or not isinstance(cap, int):
                raise SweepLimitError("cap: must be a whole number of concurrent requests")
            if cap > limits.max_concurrency:
                raise SweepLimitError(f"cap: at most {limits.max_concurrency} concurrent requests, got {cap}")
            levels = list(doubling_levels(cap))
        else:
            raise SweepLimitError("levels: required (or cap, for a concurrency sweep)")
        slo = None
        if data.get("slo") is not None:
            try:
                slo = SLO.from_dict(data["slo"])
            except ValueError as error:
                raise SweepLimitError(str(error)) from None
        plan = cls(
            mode=mode,
            levels=tuple(levels),
            requests_per_level=data.get("requests_per_level", 32),
            slo=slo,
            hourly_price_usd=data.get("hourly_price_usd"),
            max_duration_s=data.get("max_duration_s", 900.0),
            max_in_flight=data.get("max_in_flight", 256),
            seed=data.get("seed", 0),
        )
        plan.check(limits)
        return plan

    def check(self, limits: SweepLimits = DEFAULT_LIMITS) -> None:
        """Raise :class:`SweepLimitError` (naming the field) unless the plan is well formed and within limits."""
        if self.mode not in MODES:
            raise SweepLimitError(f"mode: must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not self.levels:
            raise SweepLimitError("levels: at least one level")
        if len(self.levels) > limits.max_levels:
            raise SweepLimitError(f"levels: at most {limits.max_levels} levels, got {len(self.levels)}")
        for position, level in enumerate(self.levels):
            where = f"levels[{position}]"
            if isinstance(level, bool) or not isinstance(level, (int, float)) or not level > 0:
                raise SweepLimitError(f"{where}: must be a number above 0, got {level!r}")
            if self.mode == "concurrency":
                if int(level) != level:
                    raise SweepLimitError(f"{where}: a concurrency must be a whole number, got {level}")
                if level > limits.max_concurrency:
                    raise SweepLimitError(f"{where}: at most {limits.max_concurrency} concurrent requests, got {level}")
            elif level > limits.max_rate:
                raise SweepLimitError(f"{where}: at most {limits.max_rate:g} requests/s, got {level}")
        if len(set(self.levels)) != len(self.levels):
            raise SweepLimitError("levels: each level may appear once")
        per_level = self.requests_per_level
        if isinstance(per_level, bool) or not isinstance(per_level, int) or per_level < 1:
            raise SweepLimitError(f"requests_per_level: must be a whole number of at least 1, got {per_level!r}")
        total = per_level * len(self.levels)
        if total > limits.max_requests:
            raise SweepLimitError(
                f"requests_per_level: {per_level} × {len(self.levels)} levels = {total} requests, "
                f"more than the limit of {limits.max_requests}"
            )
        duration = self.max_duration_s
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not duration > 0:
            raise SweepLimitError(f"max_duration_s: must be a number of seconds above 0, got {duration!r}")
        if duration > limits.max_duration_s:
            raise SweepLimitError(f"max_duration_s: at most {limits.max_duration_s:g} s, got {duration:g}")
        price = self.hourly_price_usd
        if price is not None and (isinstance(price, bool) or not isinstance(price, (int, float)) or not price >= 0):
            raise SweepLimitError(f"hourly_price_usd: must be a number of dollars per hour, got {price!r}")
        in_flight = self.max_in_flight
        if isinstance(in_flight, bool) or not isinstance(in_flight, int) or not 1 <= in_flight <= limits.max_concurrency:
            raise SweepLimitError(f"max_in_flight: must be a whole number from 1 to {limits.max_concurrency}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise SweepLimitError("seed: must be an integer")

    def check_workload(self, workload: Workload, limits: SweepLimits = DEFAULT_LIMITS) -> None:
        if workload.output.largest > limits.max_output_tokens:
            raise SweepLimitError(
                f"output: at most {limits.max_output_tokens} output tokens per request, got up to {workload.output.largest}"
            )

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "levels": list(self.levels),
            "requests_per_level": self.requests_per_level,
            "slo": self.slo.to_dict() if self.slo else None,
            "hourly_price_usd": self.hourly_price_usd,
            "max_duration_s": self.max_duration_s,
            "max_in_flight": self.max_in_flight,
            "seed": self.seed,
        }


@dataclass
class SweepResult:
    plan: SweepPlan
    workload: Workload
    levels: list[LevelResult] = field(default_factory=list)
    server_info: dict = field(default_factory=dict)
    stopped_reason: str = ""
    error_class: str = ""
    error_message: str = ""
    settle: dict | None = None
    client_version: str = CLIENT_VERSION

    @property
    def knee(self) -> Knee:
        return find_knee(self.levels)

    def to_dict(self, *, with_samples: bool = False) -> dict:
        return {
            "client_version": self.client_version,
            "plan": self.plan.to_dict(),
            "workload": self.workload.to_dict(),
            "levels": [level.to_dict(with_samples=with_samples) for level in self.levels],
            "knee": self.knee.to_dict(),
            "server_info": dict(self.server_info),
            "settle": self.settle,
            "stopped_reason": self.stopped_reason or None,
            "error": {"class": self.error_class, "message": self.error_message} if self.error_class else None,
        }


class _Stop(Exception):
    """Internal: the sweep was interrupted or ran out of time."""


async def run_sweep(
    config: EndpointConfig,
    *,
    plan: SweepPlan,
    workload: Workload,
    limits: SweepLimits = DEFAULT_LIMITS,
    on_level_done: Callable[[LevelResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    skip_levels: frozenset | set = frozenset(),
    on_request_done: Callable[[float, int, int], None] | None = None,
) -> SweepResult:
    """Run the sweep (see the module docstring). Never raises for anything the server does: failures are
    per-request ``error_class`` counts, or ``SweepResult.error_class`` when nothing could be sent."""
    plan.check(limits)
    plan.check_workload(workload, limits)
    result = SweepResult(plan=plan, workload=workload)
    if config.key_missing():
        result.error_class = "auth_missing"
        result.error_message = f"environment variable {config.api_key_env} is not set; nothing was sent"
        return result
    deadline = time.perf_counter() + plan.max_duration_s
    params = _Params()
    prefix_seed = f"{new_nonce()}"
    largest = max(plan.levels) if plan.mode == "concurrency" else plan.max_in_flight
    with gc_paused():
        async with ProbeHTTP(config, max_connections=int(largest), reading_thread=True) as http:
            secrets = http.secrets()
            settle = workload.shapes(1, stream_seed=-1)[0]
            settle_exchange = await send(
                http, config, settle, nonce=f"{prefix_seed}-settle", prefix_seed=prefix_seed, params=params,
                streaming=workload.streaming,
            )
            settle_sample, facts = sample_from(
                settle_exchange, index=-1, shape=settle, streaming=workload.streaming,
                read_timeout_s=config.read_timeout_s, secrets=secrets,
            )
            result.settle = settle_record(settle_sample)
            result.server_info.update(facts)
            if not settle_sample.ok and settle_sample.error_class in FATAL_ERRORS:
                result.error_class = settle_sample.error_class
                result.error_message = settle_sample.error_message
                return result
            for position, level in enumerate(plan.levels):
                if level in skip_levels:
                    continue
                if should_stop is not None and should_stop():
                    result.stopped_reason = "interrupted"
                    break
                if time.perf_counter() >= deadline:
                    result.stopped_reason = "max_duration"
                    break
                part = await _run_part(
                    http, config, plan, workload, position=position, params=params, prefix_seed=prefix_seed,
                    secrets=secrets, deadline=deadline, should_stop=should_stop, on_request_done=on_request_done,
                )
                if part.interrupted:
                    result.stopped_reason = "interrupted"
                    break
                level_result = _level_result(plan, level, part)
                result.server_info.update(part.facts)
                result.levels.append(level_result)
                if on_level_done is not None:
                    on_level_done(level_result)
                if level_result.truncated:
                    result.stopped_reason = "max_duration"
                    break
                if level_result.ok == 0 and set(level_result.errors) <= FATAL_ERRORS:
                    result.stopped_reason = "fatal"
                    result.error_class = next(iter(level_result.errors), "")
                    result.error_message = next((s.error_message for s in level_result.samples if s.error_message), "")
                    break
    result.server_info["token_param"] = params.token_param
    result.server_info["include_usage"] = params.include_usage
    return result


def settle_record(sample: Sample) -> dict:
    """What the settle request did: it is sent before the first level, counted in none, and settles which
    parameters the endpoint accepts (the token limit's name, the usage chunk) and opens the first connection."""
    return {
        "ok": sample.ok,
        "ttft_ms": sample.ttft_ms,
        "e2e_ms": sample.e2e_ms,
        "output_tokens": sample.output_tokens,
        "error_class": sample.error_class or None,
    }


async def _run_part(
    http: ProbeHTTP, config: EndpointConfig, plan: SweepPlan, workload: Workload, *, position: int,
    params: _Params, prefix_seed: str, secrets: tuple[str, ...], deadline: float,
    should_stop: Callable[[], bool] | None, on_request_done: Callable[[float, int, int], None] | None,
) -> LevelPart:
    level = plan.levels[position]
    done = 0

    def request_done() -> None:
        nonlocal done
        done += 1
        if on_request_done is not None:
            on_request_done(level, done, plan.requests_per_level)

    return await measure_part(
        http, config, plan, workload, params,
        streams=int(level) if plan.mode == "concurrency" else plan.max_in_flight, position=position,
        prefix_seed=prefix_seed, secrets=secrets, deadline=deadline, should_stop=should_stop,
        on_request_done=request_done,
    )


def _level_result(plan: SweepPlan, level: float, part: LevelPart) -> LevelResult:
    # The wall clock around the level also counts task start-up and connection tear-down (up to 7% of a
    # 1.5 s level at 128 streams); it stands in only when no request received a token.
    duration = level_duration_s(part.samples)
    if duration is None:
        duration = part.wall_s
    return summarise_level(
        mode=plan.mode, level=int(level) if plan.mode == "concurrency" else float(level), samples=part.samples,
        duration_s=duration, slo=plan.slo, hourly_price_usd=plan.hourly_price_usd, truncated=part.truncated,
        schedule_lag_ms=part.schedule_lag_ms or None,
    )
