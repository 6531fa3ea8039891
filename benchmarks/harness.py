"""What the benchmark scripts share: a throwaway database, a gunicorn server on a free port, HTTP timing
(latency one request at a time, throughput in concurrent bursts) and a description of the machine.

Plain Python: importing it does not set Django up, so a script can still choose its settings first.
"""
from __future__ import annotations

import contextlib
import datetime
import http.client
import itertools
import os
import platform
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "benchmarks"
PYTHON = sys.executable
GUNICORN = str(Path(sys.executable).parent / "gunicorn")
WARM_UP_REQUESTS = 20

_COLD = itertools.count()


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the sample at `fraction` of the way through the sorted values."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * (len(ordered) - 1))))
    return ordered[rank]


@dataclass
class Endpoint:
    name: str
    path: str
    # A unique extra query parameter on every request misses the page cache: the cost of rendering.
    uncached: bool = False
    latencies_ms: list[float] = field(default_factory=list)
    burst_requests: int = 0
    burst_seconds: float = 0.0
    queries: int | None = None
    body_bytes: int = 0

    def percentile(self, fraction: float) -> float:
        return percentile(self.latencies_ms, fraction)

    def next_path(self) -> str:
        if not self.uncached:
            return self.path
        return f"{self.path}{'&' if '?' in self.path else '?'}cold={next(_COLD)}"

    @property
    def requests_per_second(self) -> float:
        return self.burst_requests / self.burst_seconds if self.burst_seconds else 0.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _admin_connection(server_url: str):
    import psycopg

    return psycopg.connect(f"{server_url.rstrip('/')}/postgres", autocommit=True)


def bench_database_name(purpose: str) -> str:
    """The name of a benchmark's own database: BENCH_<PURPOSE>_DB if set, else derived from the PostgreSQL
    database that DATABASE_URL names ("atlas_dev" -> "atlas_dev_bench_pages"), so that checkouts which each
    use a database of their own also benchmark in one of their own; "atlas_bench_<purpose>" otherwise."""
    override = os.environ.get(f"BENCH_{purpose.upper()}_DB")
    if override:
        return override
    url = urllib.parse.urlsplit(os.environ.get("DATABASE_URL", ""))
    own = url.path.strip("/")
    if url.scheme.startswith("postgres") and own:
        return f"{own}_bench_{purpose}"
    return f"atlas_bench_{purpose}"


def recreate_database(server_url: str, name: str) -> None:
    with _admin_connection(server_url) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def drop_database(server_url: str, name: str) -> None:
    with _admin_connection(server_url) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(env: Mapping[str, str], *args: str) -> None:
    subprocess.run([PYTHON, str(ROOT / "manage.py"), *args], cwd=ROOT, env=dict(env), check=True,
                   stdout=subprocess.DEVNULL)


def fetch(port: int, path: str, headers: Mapping[str, str] | None = None) -> tuple[int, bytes, float]:
    """GET on a new connection: status, body and milliseconds from connecting to the last byte."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", path, headers=dict(headers or {}))
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    return response.status, body, (time.perf_counter() - started) * 1000


def wait_until_up(port: int, process: subprocess.Popen, path: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("gunicorn exited during start-up")
        try:
            if fetch(port, path)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer within {timeout_s:g} s")


@contextlib.contextmanager
def gunicorn(env: Mapping[str, str], *, workers: int = 2, ready_path: str = "/bench/trivial/",
             production: bool = False) -> Iterator[int]:
    """Serve the project with gunicorn on a free loopback port, sync workers unless `production` (then as
    config/gunicorn.py serves it); yields the port."""
    port = free_port()
    server = subprocess.Popen(
        [GUNICORN, "config.wsgi:application", *(["-c", "config/gunicorn.py"] if production else []),
         "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--log-level", "warning"],
        cwd=ROOT, env=dict(env),
    )
    try:
        wait_until_up(port, server, ready_path)
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def warm_up(port: int, endpoints: Sequence[Endpoint], headers: Mapping[str, str] | None = None) -> None:
    for endpoint in endpoints:
        for _ in range(WARM_UP_REQUESTS):
            status, body, _ = fetch(port, endpoint.path, headers)
            if status != 200:
                raise RuntimeError(f"{endpoint.path} answered {status} during warm-up: {body[:300]!r}")


def measure_latency(
    port: int, endpoints: Sequence[Endpoint], requests: int, rng: random.Random,
    headers: Mapping[str, str] | None = None,
) -> None:
    """One request at a time, every endpoint once per round, in a new shuffled order each round."""
    order = list(endpoints)
    for _ in range(requests):
        rng.shuffle(order)
        for endpoint in order:
            status, body, elapsed_ms = fetch(port, endpoint.next_path(), headers)
            if status != 200:
                raise RuntimeError(f"{endpoint.path} answered {status}: {body[:200]!r}")
            endpoint.body_bytes = len(body)
            endpoint.latencies_ms.append(elapsed_ms)


def measure_throughput(
    port: int, endpoints: Sequence[Endpoint], rounds: int, burst: int, concurrency: int, rng: random.Random,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Bursts of `burst` requests from `concurrency` clients, endpoint after endpoint in shuffled rounds."""
    if burst < concurrency:
        raise ValueError(f"a burst of {burst} requests cannot keep {concurrency} clients busy")
    order = list(endpoints)
    per_thread = burst // concurrency
    failures: list[str] = []

    def worker(endpoint: Endpoint) -> None:
        for _ in range(per_thread):
            status, _, _ = fetch(port, endpoint.next_path(), headers)
            if status != 200:
                failures.append(f"{endpoint.path}: {status}")

    for _ in range(rounds):
        rng.shuffle(order)
        for endpoint in order:
            threads = [threading.Thread(target=worker, args=(endpoint,)) for _ in range(concurrency)]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            endpoint.burst_seconds += time.perf_counter() - started
            endpoint.burst_requests += per_thread * concurrency
    if failures:
        raise RuntimeError(f"{len(failures)} failed requests, e.g. {failures[0]}")


def _command_output(*command: str) -> str:
    try:
        # rstrip only: the first line of `free -h` is indented to align its columns.
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.rstrip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine() -> dict[str, str]:
    """Date, CPUs (`nproc`), CPU model, memory (`free -h`), Python, Django and PostgreSQL versions."""
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    import django

    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": _command_output("nproc"),
        "cpu": cpu,
        "memory": _command_output("free", "-h"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "django": django.get_version(),
        "postgres": _command_output("psql", "-h", "127.0.0.1", "-U", "postgres", "-tAc", "show server_version"),
    }


def load_average() -> str:
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.exists() else "unknown"


SCALE_CATALOG = r"""
import django
django.setup()
from django.db import models, transaction
from catalog.models import Tool

copies = {copies}
# Every catalog row that belongs to one tool (prices, hardware, formats, API surfaces, features,
# caveats, model offerings, reported figures); rows of the apps above the catalog are left out.
children = [
    relation for relation in Tool._meta.related_objects
    if relation.one_to_many and relation.related_model._meta.app_label == "catalog"
]


def copy_of(instance, number, **changes):
    clone = type(instance)()
    for field in instance._meta.concrete_fields:
        if not field.primary_key:
            setattr(clone, field.attname, getattr(instance, field.attname))
    for field in instance._meta.concrete_fields:
        # Natural keys stay unique: a copy's slug or key gets a suffix no fixture uses.
        if field.unique and not field.primary_key and isinstance(field, (models.CharField, models.SlugField)):
            setattr(clone, field.attname, f"{{getattr(instance, field.attname)}}-synthetic-{{number}}")
    for name, value in changes.items():
        setattr(clone, name, value)
    return clone


with transaction.atomic():
    originals = list(Tool.objects.prefetch_related("sources", *(r.get_accessor_name() for r in children)))
    for number in range(1, copies + 1):
        clones = Tool.objects.bulk_create(
            [copy_of(tool, number, name=f"{{tool.name}} (synthetic {{number}})", rank=None) for tool in originals]
        )
        for tool, clone in zip(originals, clones):
            clone.sources.add(*tool.sources.all())
            for relation in children:
                rows = getattr(tool, relation.get_accessor_name()).all()
                relation.related_model.objects.bulk_create(
                    [copy_of(row, number, **{{relation.field.attname: clone.pk}}) for row in rows]
                )
    print(Tool.objects.count())
"""


def scale_catalog(env: Mapping[str, str], factor: int) -> int:
    """Make the loaded catalog `factor` times larger with synthetic copies of every tool and its rows
    (named "… (synthetic N)"), in the benchmark's own database only; returns the number of tools."""
    output = subprocess.run(
        [PYTHON, "-c", SCALE_CATALOG.format(copies=factor - 1)], cwd=ROOT, env=dict(env), check=True,
        capture_output=True, text=True,
    ).stdout.split()
    return int(output[-1])


def bench_environment(settings_module: str, database_url: str) -> dict[str, str]:
    """The environment of a served benchmark: its own settings module and database, DEBUG off."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE=settings_module,
        PYTHONPATH=os.pathsep.join([str(BENCH_DIR), str(ROOT)]),
        DATABASE_URL=database_url,
        DJANGO_CONN_MAX_AGE="60",
        DJANGO_DEBUG="False",
        DJANGO_LOG_LEVEL="WARNING",
    )
    return env
