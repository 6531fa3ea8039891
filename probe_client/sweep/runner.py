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

Parsing waits until a level is over, so no stream is ever parsed while others are being timed; every read is
kernel-stamped (``transport.py``) in any case.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..config import EndpointConfig
from ..http import ProbeHTTP
from ..secrets import redact
from ..speed import FATAL_ERRORS, _is_control_exception, _Params, gc_paused
from ..transport import CONNECTION_SLOT
from ..workloads import new_nonce
from .requests import sample_from, send
from .stats import SLO, Knee, LevelResult, Sample, find_knee, level_duration_s, summarise_level
from .workload import RequestShape, Workload

logger = logging.getLogger(__name__)

CLIENT_VERSION = "inference-atlas-sweep/1"
MODES = ("concurrency", "rate")
# Well under any inter-token gap a sweep resolves (see _StartBudget): on a loaded two-core machine 1 and 2 ms
# kept every stamp of a 256-stream level exact and 5 ms did not; 2 ms started the level faster than 1 ms.
START_BUDGET_S = 0.002


class SweepLimitError(ValueError):
    """A plan that exceeds a limit or is malformed; the message starts with the field's name."""


@dataclass(frozen=True)
class SweepLimits:
    """What one sweep may do at most, so that none runs for hours by mistake."""

    max_levels: int = 12
    max_requests: int = 4000
    max_concurrency: int = 256
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
            "stopped_reason": self.stopped_reason,
            "error": {"class": self.error_class, "message": self.error_message} if self.error_class else None,
        }


class _Stop(Exception):
    """Internal: the sweep was interrupted or ran out of time."""


class _StartBudget:
    """Lets requests begin only while the event loop's current turn has spent less than ``budget_s`` on them.

    Begun all at once, the requests of a high level keep the loop busy building and writing them without
    polling a socket in between: at 128 streams on two cores that took longer than one inter-token gap, so the
    first two token packets of the streams answered earliest were both queued when read, the kernel had merged
    them, and its receive stamp was the second one's (TTFT one gap late, 40–80 ms, for up to a fifth of the
    level's first wave). Within the budget they begin at once; the rest wait for the next turn, after the loop
    has read its sockets. The first request of a turn always begins, so a slow turn never stops the level.
    """

    def __init__(self, budget_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._budget_s = budget_s
        self._turn_began: float | None = None
        self._waiting: list[asyncio.Future] = []

    async def turn(self) -> None:
        while True:
            now = self._loop.time()
            if self._turn_began is None:
                self._turn_began = now
                self._loop.call_soon(self._next_turn)
                return
            if now - self._turn_began < self._budget_s:
                return
            future = self._loop.create_future()
            self._waiting.append(future)
            await future

    def _next_turn(self) -> None:
        self._turn_began = None
        waiting, self._waiting = self._waiting, []
        for future in waiting:
            if not future.done():
                future.set_result(None)


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
        async with ProbeHTTP(config, max_connections=int(min(largest, plan.max_in_flight))) as http:
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
                try:
                    level_result, facts = await _run_level(
                        http, config, plan, workload, params, level=level, position=position,
                        prefix_seed=prefix_seed, secrets=secrets, deadline=deadline, should_stop=should_stop,
                        on_request_done=on_request_done,
                    )
                except _Stop:
                    result.stopped_reason = "interrupted"
                    break
                result.server_info.update(facts)
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


async def _run_level(
    http: ProbeHTTP,
    config: EndpointConfig,
    plan: SweepPlan,
    workload: Workload,
    params: _Params,
    *,
    level: float,
    position: int,
    prefix_seed: str,
    secrets: tuple[str, ...],
    deadline: float,
    should_stop: Callable[[], bool] | None,
    on_request_done: Callable[[float, int, int], None] | None = None,
) -> tuple[LevelResult, dict]:
    shapes = workload.shapes(plan.requests_per_level, stream_seed=position)
    level_nonce = new_nonce()
    exchanges: dict[int, object] = {}
    truncated = False
    interrupted = False

    starts = _StartBudget(START_BUDGET_S)

    async def one(index: int, shape: RequestShape) -> None:
        await starts.turn()
        try:
            exchanges[index] = await send(
                http, config, shape, nonce=f"{level_nonce}-{index}", prefix_seed=prefix_seed, params=params,
                streaming=workload.streaming,
            )
        except Exception as error:  # a bug in the client must not lose the level
            if _is_control_exception(error):
                raise
            message = redact(f"{type(error).__name__}: {error}", secrets)
            logger.error("sweep request %s failed in the client: %s", index, message)
            exchanges[index] = Sample(index=index, ok=False, error_class="client_error", error_message=message)
        if on_request_done is not None:
            on_request_done(level, len(exchanges), len(shapes))

    def stop_now() -> bool:
        nonlocal truncated, interrupted
        if should_stop is not None and should_stop():
            interrupted = True
            return True
        if time.perf_counter() >= deadline:
            truncated = True
            return True
        return False

    started = time.perf_counter()
    arrivals_ns: dict[int, int] = {}
    if plan.mode == "concurrency":
        next_index = 0

        async def worker(slot: int) -> None:
            nonlocal next_index
            CONNECTION_SLOT.set(slot)
            while next_index < len(shapes) and not stop_now():
                index = next_index
                next_index += 1
                await one(index, shapes[index])

        await asyncio.gather(*(worker(slot) for slot in range(int(level))))
    else:
        rng = random.Random(f"{plan.seed}:{position}:arrivals")
        # Last freed, first reused: a kept-alive connection serves the next arrival instead of a new handshake.
        free_slots: asyncio.LifoQueue[int] = asyncio.LifoQueue()
        for slot in reversed(range(plan.max_in_flight)):
            free_slots.put_nowait(slot)

        async def arrival(index: int) -> None:
            slot = await free_slots.get()
            CONNECTION_SLOT.set(slot)
            try:
                await one(index, shapes[index])
            finally:
                free_slots.put_nowait(slot)

        tasks = []
        due = started
        for index in range(len(shapes)):
            if stop_now():
                break
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            arrivals_ns[index] = int(due * 1e9)
            tasks.append(asyncio.create_task(arrival(index)))
            due += rng.expovariate(level)
        await asyncio.gather(*tasks)
    wall_s = time.perf_counter() - started
    if interrupted:
        raise _Stop()
    samples: list[Sample] = []
    facts: dict = {}
    for index in sorted(exchanges):
        outcome = exchanges[index]
        if isinstance(outcome, Sample):
            samples.append(outcome)
            continue
        sample, seen = sample_from(
            outcome, index=index, shape=shapes[index], streaming=workload.streaming,
            read_timeout_s=config.read_timeout_s, secrets=secrets,
        )
        samples.append(sample)
        facts.update(seen)
    level_value = int(level) if plan.mode == "concurrency" else float(level)
    # The wall clock around the level also counts task start-up and connection tear-down (up to 7% of a
    # 1.5 s level at 128 streams); it stands in only when no request received a token.
    duration = level_duration_s(samples)
    if duration is None:
        duration = wall_s
    lags = [
        (s.sent_ns - arrivals_ns[s.index]) / 1e6 for s in samples if s.sent_ns is not None and s.index in arrivals_ns
    ]
    return (
        summarise_level(
            mode=plan.mode, level=level_value, samples=samples, duration_s=duration, slo=plan.slo,
            hourly_price_usd=plan.hourly_price_usd, truncated=truncated, schedule_lag_ms=lags or None,
        ),
        facts,
    )
