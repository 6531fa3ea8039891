"""A hung PostgreSQL and a hung Redis under concurrent clients: what each costs, on servers of this run's own.

    .venv/bin/python benchmarks/hung_services.py [--clients 20] [--seconds 20] [--out FILE]

Starts a throw-away PostgreSQL and Redis on loopback (bin/with_services.py's, nothing kept on disk), loads the
catalog and serves it with gunicorn as in production (config/gunicorn.py: 3 workers of 4 threads), the base
settings with DEBUG off. Then `clients` clients, on loopback only, request for `seconds` per phase, each request
on a new connection with a 30 s timeout: a static file, cached pages, a cached API read, and a page that needs the database (a unique query string misses
the page cache). The phases: normal; PostgreSQL hung (every process of the server stopped with SIGSTOP: the
kernel accepts connections that nothing answers); normal again; Redis hung (SIGSTOP). Writes a Markdown table
of answers, statuses and latencies per phase and kind of request.
"""
from __future__ import annotations

import argparse
import collections
import itertools
import os
import signal
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bin"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import with_services  # noqa: E402
from harness import ROOT, fetch, gunicorn, load_average, machine, manage, percentile  # noqa: E402

KINDS = {
    "static file": ["/static/css/site.css"],
    "cached page": ["/", "/tools/vllm/", "/engines/", "/providers/"],
    "cached API read": ["/api/v1/tools/", "/api/v1/tools/vllm/"],
    "page needing the database": ["/tools/vllm/?cold={n}"],
}
_COLD = itertools.count()


def _server_pids(port: int) -> list[int]:
    """The processes started with `port` on their command line (the postmaster, redis-server), and their
    children (PostgreSQL's backends and helpers)."""
    pids = set()
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        # redis-server shows itself as "redis-server 127.0.0.1:<port>", the postmaster keeps "-p <port>".
        if proc.name.isdigit() and str(port).encode() in command and (b"postgres" in command or b"redis" in command):
            pids.add(int(proc.name))
    children = set()
    for pid in pids:
        path = Path(f"/proc/{pid}/task/{pid}/children")
        if path.exists():
            children.update(int(child) for child in path.read_text().split())
    return sorted(pids | children)


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def run_phase(port: int, *, clients: int, seconds: float) -> dict[str, list[tuple[int, float]]]:
    """(status, ms) per kind of request; status 0 is a client-side error (timeout, reset)."""
    results: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    order = [(kind, path) for kind, paths in KINDS.items() for path in paths]

    def client(offset: int) -> None:
        for index in itertools.count(offset):
            if time.monotonic() >= deadline:
                return
            kind, path = order[index % len(order)]
            started = time.perf_counter()
            try:
                status, _, elapsed = fetch(port, path.format(n=next(_COLD)))
            except OSError:
                status, elapsed = 0, (time.perf_counter() - started) * 1000
            with lock:
                results[kind].append((status, elapsed))

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def table(phase: str, results: dict[str, list[tuple[int, float]]], seconds: float) -> list[str]:
    lines = []
    for kind in KINDS:
        rows = results.get(kind, [])
        times = [ms for _, ms in rows] or [0.0]
        statuses = ", ".join(f"{count} × {status or 'no answer'}"
                             for status, count in sorted(collections.Counter(s for s, _ in rows).items()))
        lines.append(f"| {phase} | {kind} | {len(rows)} | {len(rows) / seconds:.1f} | {statuses} | "
                     f"{percentile(times, 0.5):.0f} | {percentile(times, 0.95):.0f} | {max(times):.0f} |")
    total = sum(len(rows) for rows in results.values())
    lines.append(f"| {phase} | **all** | {total} | {total / seconds:.1f} | | | | |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "hung-services.md")
    args = parser.parse_args()

    with ExitStack() as stack:
        run_dir = Path(tempfile.mkdtemp(prefix="atlas-hung-"))
        os.chmod(run_dir, 0o755)
        database_url = with_services.start_postgres(stack, run_dir, "postgres://postgres@127.0.0.1:1/atlas_hung")
        redis_url = with_services.start_redis(stack, run_dir, "redis://127.0.0.1:1/0")
        env = {
            **os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base", "DATABASE_URL": database_url,
            "REDIS_URL": redis_url, "CELERY_BROKER_URL": redis_url, "DJANGO_DEBUG": "false",
            "API_THROTTLE_ANON": "1000000/min", "PAGE_THROTTLE": "1000000/min",
            "DJANGO_STATIC_ROOT": str(run_dir / "static"),
        }
        manage(env, "migrate", "--no-input")
        manage(env, "load_catalog")
        database_port = int(database_url.rsplit(":", 1)[1].split("/")[0])
        redis_port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
        timeout = env.get("DATABASE_CONNECT_TIMEOUT_SECONDS", "5")
        load_before = load_average()
        lines: list[str] = []
        with gunicorn(env, workers=3, ready_path="/", production=True) as port:
            for kind in ("cached page", "cached API read"):
                for path in KINDS[kind]:
                    fetch(port, path)
            phases = [("normal", None), ("PostgreSQL hung", database_port), ("normal again", None),
                      ("Redis hung", redis_port)]
            for phase, hung_port in phases:
                pids = _server_pids(hung_port) if hung_port else []
                _signal_all(pids, signal.SIGSTOP)
                try:
                    results = run_phase(port, clients=args.clients, seconds=args.seconds)
                finally:
                    _signal_all(pids, signal.SIGCONT)
                lines += table(phase, results, args.seconds)
                print("\n".join(lines[-len(KINDS) - 1:]), flush=True)
                time.sleep(6)  # past the breakers' few seconds: the next phase starts with every service answered

    info = machine()
    report = [
        "# A hung database or Redis under concurrent clients",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `benchmarks/hung_services.py` on "
        f"{info.get('cpu', 'this machine')}; load average before: {load_before}, after: {load_average()} "
        "(the machine is shared: compare phases of one run).",
        "",
        f"gunicorn, 3 workers of 4 threads (config/gunicorn.py); {args.clients} clients on loopback for "
        f"{args.seconds:g} s per phase, a new "
        f"connection per request, 30 s client timeout. PostgreSQL and Redis of this run's own, hung with SIGSTOP. "
        f"Connect timeout {timeout} s (`DATABASE_CONNECT_TIMEOUT_SECONDS`), Redis socket timeouts 0.5 s, breakers "
        "of 5 s (`core/breakers.py`).",
        "",
        "| phase | request | answers | per second | statuses | p50 ms | p95 ms | max ms |",
        "|---|---|---:|---:|---|---:|---:|---:|",
        *lines,
        "",
    ]
    args.out.write_text("\n".join(report))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
