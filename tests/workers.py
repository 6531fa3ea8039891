"""Real processes for the tests that need them, always stopped at the end: Celery workers (against the test database
and this run's Redis database, their output captured to a file), a throw-away redis-server, gunicorn serving the
site, and a loopback proxy that can hang like a stopped server."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
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


def serve_site(log_lines: list[str], *, redis_url: str, workers: int, database_url: str | None = None,
               **env_overrides: str) -> tuple[subprocess.Popen, str]:
    """gunicorn as served in earnest (config/gunicorn.py) on the test database (or `database_url`) and `redis_url`, no
    rate limits, its output collected in
    `log_lines`; (process, base URL). The caller terminates it."""
    port = free_port()
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": database_url or (
            f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"),
        "REDIS_URL": redis_url,
        "API_THROTTLE_ANON": "1000000/min",
        "PAGE_THROTTLE": "1000000/min",
        **env_overrides,
    }
    web = subprocess.Popen([str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application",
                            "-c", "config/gunicorn.py", "--bind", f"127.0.0.1:{port}", "--workers", str(workers)],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: log_lines.extend(web.stdout), daemon=True).start()
    base = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            httpx.get(f"{base}/static/css/site.css", timeout=5)
        except httpx.TransportError:
            return False
        return True

    try:
        wait_for(answers, timeout=60, what="gunicorn to answer", logs=lambda: "".join(log_lines))
    except AssertionError:
        web.kill()
        raise
    return web, base


class HangingProxy:
    """A TCP proxy on loopback in front of `upstream` that can hang as a stopped server does (SIGSTOP): while hung,
    the kernel still accepts connections, and nothing is read from or sent to either side; resumed, what was held
    goes on. Lets a test hang the database of one server without stopping the test's own database."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._running = threading.Event()
        self._running.set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def hang(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def close(self) -> None:
        self._closed = True
        self._running.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._running.wait()
        try:
            server = socket.create_connection(self.upstream, timeout=10)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        for source, target in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        with source, target:
            while True:
                self._running.wait()
                try:
                    data = source.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                self._running.wait()
                try:
                    target.sendall(data)
                except OSError:
                    return
