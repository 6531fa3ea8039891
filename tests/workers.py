"""Real Celery worker processes for the probes and lab tests: started against the test database and this run's Redis
database, their output captured to a file, and always killed (with their pool children) at the end."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
CELERY = ROOT / ".venv" / "bin" / "celery"


def wait_for(predicate: Callable[[], object], *, timeout: float, what: str, interval: float = 0.2,
             logs: Callable[[], str] | None = None) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    tail = logs()[-4000:] if logs else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{tail}")


class Worker:
    def __init__(self, name: str, log_path: Path, env: dict[str, str], *, concurrency: int = 1,
                 beat_schedule: Path | None = None) -> None:
        """``beat_schedule``: also run beat inside this worker (``-B``), keeping its schedule in that file."""
        self.name = name
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        beat = ["-B", "-s", str(beat_schedule)] if beat_schedule else []
        self.process = subprocess.Popen(
            [str(CELERY), "-A", "config", "worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=prefork",
             f"--hostname={name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", *beat],
            cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
        )

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.logs()[-4000:]}")
            return " ready." in self.logs()

        wait_for(ready, timeout=timeout, what=f"worker {self.name} to be ready", logs=self.logs)

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process and its pool children die at once."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def stop(self) -> None:
        self.kill()
        self._log.close()


def worker_env(**overrides: str) -> dict[str, str]:
    """Environment for a worker that shares the test database (committed rows only) and the test broker."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        REDIS_URL=settings.CELERY_BROKER_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        PYTHONUNBUFFERED="1",
        PROBE_SCHEDULED_WORKLOADS="in-100",
        PROBE_SPEED_REQUESTS="3",
        PROBE_MAX_OUTPUT_TOKENS="12",
        RUN_LEASE_SECONDS="3",
        RUN_BUSY_RETRY_SECONDS="1",
        CELERY_VISIBILITY_TIMEOUT="6",
    )
    env.update(overrides)
    return env


def pool_children(worker: Worker) -> list[int]:
    path = Path(f"/proc/{worker.process.pid}/task/{worker.process.pid}/children")
    try:
        return [int(pid) for pid in path.read_text().split()]
    except FileNotFoundError:
        return []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class ThrowawayRedis:
    """A redis-server of this test alone, on a loopback port, that keeps nothing on disk: killed and started
    again, it has forgotten every key and every queued message (as bin/with_services.py starts its own)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> ThrowawayRedis:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )

        def answers() -> bool:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_for(answers, timeout=10, what="redis-server to start")
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def pause(self) -> None:
        """SIGSTOP: connections are accepted by the kernel and never answered, as by a hung server."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)
