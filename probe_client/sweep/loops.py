"""One sweep level on the event loop: its streams (closed loop) or its arrivals (open loop), sent, read and reduced
to samples (:func:`measure_part`). The connections are read and stamped by the transport's reading thread.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..http import ProbeHTTP
from ..secrets import redact
from ..speed import _is_control_exception, _Params
from ..transport import CONNECTION_SLOT
from ..workloads import new_nonce
from .requests import sample_from, send
from .stats import Sample
from .workload import RequestShape

logger = logging.getLogger(__name__)

# Well under any inter-token gap a sweep resolves (see _StartBudget): on a loaded two-core machine 1 and 2 ms
# kept every stamp of a 256-stream level exact and 5 ms did not; 2 ms started the level faster than 1 ms.
START_BUDGET_S = 0.002


@dataclass
class LevelPart:
    """What a level measured: its requests as samples, the server facts seen, how late open-loop requests left
    their schedule, and whether sending stopped early."""

    samples: list[Sample] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    schedule_lag_ms: list[float] = field(default_factory=list)
    truncated: bool = False
    interrupted: bool = False
    wall_s: float = 0.0


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


async def measure_part(
    http: ProbeHTTP,
    config,
    plan,
    workload,
    params: _Params,
    *,
    streams: int,
    position: int,
    prefix_seed: str,
    secrets: tuple[str, ...],
    deadline: float,
    should_stop: Callable[[], bool] | None,
    on_request_done: Callable[[], None] | None = None,
) -> LevelPart:
    """Send level ``plan.levels[position]`` and reduce what came back to samples. Closed loop: ``streams`` workers,
    each sending the level's next request as soon as its previous one ended. Open loop: the level's seeded Poisson
    arrivals, at most ``streams`` in flight. Parsing waits until every request of the level has ended."""
    level = plan.levels[position]
    shapes = workload.shapes(plan.requests_per_level, stream_seed=position)
    level_nonce = new_nonce()
    exchanges: dict[int, object] = {}
    outcome = LevelPart()

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
            on_request_done()

    def stop_now() -> bool:
        if should_stop is not None and should_stop():
            outcome.interrupted = True
            return True
        if time.perf_counter() >= deadline:
            outcome.truncated = True
            return True
        return False

    started = time.perf_counter()
    arrivals_ns: dict[int, int] = {}
    if plan.mode == "concurrency":
        indices = iter(range(len(shapes)))

        async def worker(slot: int) -> None:
            CONNECTION_SLOT.set(slot)
            while not stop_now():
                index = next(indices, None)
                if index is None:
                    return
                await one(index, shapes[index])

        await asyncio.gather(*(worker(slot) for slot in range(streams)))
    else:
        rng = random.Random(f"{plan.seed}:{position}:arrivals")
        # Last freed, first reused: a kept-alive connection serves the next arrival instead of a new handshake.
        free_slots: asyncio.LifoQueue[int] = asyncio.LifoQueue()
        for slot in reversed(range(streams)):
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
    outcome.wall_s = time.perf_counter() - started
    if outcome.interrupted:
        return outcome
    for index in sorted(exchanges):
        exchange = exchanges[index]
        if isinstance(exchange, Sample):
            outcome.samples.append(exchange)
            continue
        sample, seen = sample_from(
            exchange, index=index, shape=shapes[index], streaming=workload.streaming,
            read_timeout_s=config.read_timeout_s, secrets=secrets,
        )
        outcome.samples.append(sample)
        outcome.facts.update(seen)
        if sample.sent_ns is not None and index in arrivals_ns:
            outcome.schedule_lag_ms.append((sample.sent_ns - arrivals_ns[index]) / 1e6)
    return outcome
