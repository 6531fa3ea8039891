"""Worker processes for closed-loop sweep levels above ``STREAMS_PER_PROCESS`` concurrent streams.

One event loop reads its streams one after another: at 200 streams and a 20 ms inter-token gap it has 10,000
reads a second to make, about a core's worth of Python, so its turns grow longer than a gap, two token packets of
a stream wait in the kernel together, and the kernel's receive stamp of the read is the second one's (the
earlier token stamped up to a gap late). Above the budget a level's streams are spread evenly over
``ceil(streams / STREAMS_PER_PROCESS)`` processes, each with its own loop, connections and interpreter lock, so
each reads a share it can keep up with; benchmarks/sweep_accuracy.py measured the choice (docs/benchmark-lab.md).

The processes are started when the first level needs them and live until the sweep ends. They are fresh
interpreters (running :func:`serve`, one socket pair each, pickled messages): nothing of the
caller's threads, connections or main module is inherited or re-run. Per level every process gets the plan, the
level, its share of the streams and of the requests (every ``count``-th request of the level's workload, so
each share has the same mix of shapes), and a common start time; it reports its finished requests as it goes and
its samples at the end. A stop request reaches every process at once and is seen before each request, as on the
caller's own loop. Only closed-loop levels are spread: an open loop's concurrency is whatever the server's
latency makes it, and its merged reads are flagged as any others. Stamps from every process share one clock
(``time.perf_counter``, CLOCK_MONOTONIC on Linux).
"""

from __future__ import annotations

import asyncio
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection

from ..config import EndpointConfig
from ..http import ProbeHTTP
from ..speed import _Params, gc_paused
from .loops import LevelPart, measure_part

STREAMS_PER_PROCESS = 64
# Time for every process to receive its share before the level begins, so that all begin together.
START_DELAY_S = 0.05
# How often a worker reports its finished requests (for a progress bar).
PROGRESS_EVERY_S = 0.1


def processes_for(streams: int) -> int:
    """How many event loops a level of ``streams`` concurrent streams is spread over (1: the caller's own)."""
    return max(1, math.ceil(streams / STREAMS_PER_PROCESS))


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` whole numbers that differ by at most one."""
    return [total // parts + (1 if part < total % parts else 0) for part in range(parts)]


class ProcessSpread:
    """Runs levels over worker processes; ``async with ProcessSpread(config, workload, prefix_seed) as spread``."""

    def __init__(self, config: EndpointConfig, workload, prefix_seed: str) -> None:
        self._setup = (config, workload, prefix_seed)
        self._workers: list[tuple[subprocess.Popen, Connection]] = []

    async def __aenter__(self) -> ProcessSpread:
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def _start(self, count: int) -> None:
        path = os.pathsep.join(entry for entry in sys.path if entry)
        while len(self._workers) < count:
            ours, theirs = socket.socketpair()
            process = subprocess.Popen(
                [sys.executable, "-c", f"from probe_client.sweep.spread import serve; serve({theirs.fileno()})"],
                pass_fds=(theirs.fileno(),), env={**os.environ, "PYTHONPATH": path}, stdin=subprocess.DEVNULL,
            )
            theirs.close()
            connection = Connection(ours.detach())
            connection.send(self._setup)
            self._workers.append((process, connection))

    async def run_level(
        self,
        plan,
        *,
        position: int,
        params: _Params,
        deadline: float,
        should_stop: Callable[[], bool] | None,
        on_request_done: Callable[[float, int, int], None] | None,
    ) -> list[LevelPart]:
        level = int(plan.levels[position])
        count = processes_for(level)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._start, count)
        workers = self._workers[:count]
        start_at = time.perf_counter() + START_DELAY_S
        for number, ((_, connection), streams) in enumerate(zip(workers, shares(level, count))):
            connection.send({
                "plan": plan, "position": position, "streams": streams, "params": params.snapshot(),
                "deadline": deadline, "start_at": start_at, "part": (number, count),
            })
        parts: dict[int, LevelPart] = {}
        done = [0] * count
        stopped = False
        while len(parts) < count:
            await asyncio.sleep(PROGRESS_EVERY_S / 2)
            if not stopped and should_stop is not None and should_stop():
                stopped = True
                for _, connection in workers:
                    connection.send("stop")
            for number, (process, connection) in enumerate(workers):
                while number not in parts and connection.poll():
                    message = connection.recv()
                    if isinstance(message, LevelPart):
                        parts[number] = message
                    else:
                        done[number] = message
                if number not in parts and process.poll() is not None:
                    raise RuntimeError(f"sweep worker process {number} ended with exit code {process.returncode}")
            if on_request_done is not None:
                on_request_done(plan.levels[position], sum(done), plan.requests_per_level)
        for part in parts.values():
            if part.params is not None:
                params.include_usage, params.token_param = part.params
        return [parts[number] for number in range(count)]

    def close(self) -> None:
        for _, connection in self._workers:
            try:
                connection.send(None)
            except OSError:
                pass
        for process, connection in self._workers:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            connection.close()
        self._workers.clear()


def serve(fd: int) -> None:
    """A worker process's main: measure each level share sent over the socket ``fd``, until it is sent None."""
    asyncio.run(_serve(Connection(fd)))


async def _serve(connection: Connection) -> None:
    loop = asyncio.get_running_loop()
    config, workload, prefix_seed = connection.recv()
    messages: asyncio.Queue = asyncio.Queue()
    stop = False

    def receive() -> None:
        nonlocal stop
        while connection.poll():
            message = connection.recv()
            # A stop sent after a level's job is that level's, even when the job has not begun yet.
            stop = message == "stop" or (stop and message is None)
            if message != "stop":
                messages.put_nowait(message)

    loop.add_reader(connection.fileno(), receive)
    async with ProbeHTTP(config, max_connections=STREAMS_PER_PROCESS) as http:
        secrets = http.secrets()
        while (job := await messages.get()) is not None:
            plan = job["plan"]
            mine, count = job["part"]
            indices = iter(range(mine, plan.requests_per_level, count))
            params = _Params()
            params.include_usage, params.token_param = job["params"]
            finished = 0
            reported_at = 0.0

            def request_done() -> None:
                nonlocal finished, reported_at
                finished += 1
                now = time.perf_counter()
                if now - reported_at >= PROGRESS_EVERY_S:
                    reported_at = now
                    connection.send(finished)

            with gc_paused():
                part = await measure_part(
                    http, config, plan, workload, params, streams=job["streams"], position=job["position"],
                    prefix_seed=prefix_seed, secrets=secrets, deadline=job["deadline"], should_stop=lambda: stop,
                    take_index=lambda: next(indices, None), on_request_done=request_done, start_at=job["start_at"],
                )
            connection.send(finished)
            connection.send(part)

