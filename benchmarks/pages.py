"""Latency and throughput of the site's pages against a trivial Django view, served by gunicorn.

Sets up a dedicated PostgreSQL database (``atlas_bench_pages``, dropped and re-created), migrates it,
loads the real catalog with ``manage.py load_catalog``, serves the site with gunicorn (2 sync
workers, persistent DB connections) on a free loopback port, then measures in one run:

* latency: one request at a time, the endpoints interleaved in a shuffled order each round;
* throughput: bursts of concurrent requests, endpoint after endpoint in shuffled rounds.

The trivial view lives in benchmarks/pages_urls.py (not in the product) and goes through the same
middleware stack. Results are printed and written to benchmarks/results/pages.md.

With ``--scale 10`` the catalog is made ten times larger before measuring (synthetic copies of every
tool and its rows, created in the benchmark database only) and the results go to
benchmarks/results/pages-10x.md; with ``--sqlite`` or ``--redis-url`` the name says so (pages-sqlite.md,
pages-redis.md).

    .venv/bin/python benchmarks/pages.py [--scale 1] [--requests 300] [--rounds 6] [--burst 48] [--concurrency 4]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from harness import (
    BENCH_DIR,
    PYTHON,
    ROOT,
    Endpoint,
    bench_database_name,
    bench_environment,
    drop_database,
    gunicorn,
    load_average,
    machine,
    manage,
    measure_latency,
    measure_throughput,
    recreate_database,
    scale_catalog,
    warm_up,
)

RESULTS = BENCH_DIR / "results" / "pages.md"
# Each checkout benchmarks in a database of its own (see bench_database_name).
DB_NAME = bench_database_name("pages")
# Issue targets: every page as served within 2x of the trivial view's p50; the answers (wizard, fit, break-even,
# cost, the recommendations API) within 3x.
TARGET_RATIO = 2.0
ANSWER_TARGET_RATIO = 3.0
ANSWERS = ("wizard answer", "fit answer", "break-even answer", "cost answer", "recommendations API")
SQLITE_PATH = Path("/tmp") / f"{DB_NAME}.sqlite3"
HOST = {"Host": "127.0.0.1"}
FIRST_RENDER = "first render (page cache missed)"


def environment(server_url: str, redis_url: str, sqlite: bool) -> dict[str, str]:
    database_url = f"sqlite:///{SQLITE_PATH}" if sqlite else f"{server_url.rstrip('/')}/{DB_NAME}"
    env = bench_environment("pages_settings", database_url)
    env.update(API_THROTTLE_ANON="100000000/min", PAGE_THROTTLE="100000000/min")  # nothing may be refused
    if redis_url:
        env.update(REDIS_URL=redis_url, DJANGO_CACHE_PREFIX="bench-pages")
    else:
        env.pop("REDIS_URL", None)  # the gunicorn workers then share the file cache under var/cache/
    return env


def count_queries(env: dict[str, str], endpoints: list[Endpoint]) -> None:
    """Queries per request, from an in-process Django test client against the same database: the request
    counted comes right after a first one."""
    script = (
        "import django, sys\n"
        "django.setup()\n"
        "from django.db import connection\n"
        "from django.test import Client\n"
        "from django.test.utils import CaptureQueriesContext\n"
        "client = Client(HTTP_HOST='127.0.0.1')\n"
        "paths = sys.argv[1:]\n"
        "for warm, counted in zip(paths[::2], paths[1::2]):\n"
        "    client.get(warm)\n"
        "    with CaptureQueriesContext(connection) as captured:\n"
        "        client.get(counted)\n"
        "    print(len(captured.captured_queries))\n"
    )
    paths = [
        path
        for endpoint in endpoints
        for path in (endpoint.next_path(), endpoint.next_path())
    ]
    output = subprocess.run(
        [PYTHON, "-c", script, *paths],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout.split()
    for endpoint, queries in zip(endpoints, output, strict=True):
        endpoint.queries = int(queries)


def results_path(scale: int, sqlite: bool, redis: bool) -> Path:
    name = "pages" + ("" if scale == 1 else f"-{scale}x") + ("-sqlite" if sqlite else "") + ("-redis" if redis else "")
    return RESULTS.with_name(f"{name}.md")


def _shown_path(endpoint: Endpoint) -> str:
    return f"{endpoint.path}{' + cold=N' if endpoint.uncached else ''}"


def report(endpoints: list[Endpoint], args: argparse.Namespace, info: dict[str, str]) -> str:
    baseline = endpoints[0].percentile(0.5)
    lines = [
        "| Endpoint | Path | p50 ms | p99 ms | mean ms | req/s | p50 vs trivial | queries | bytes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for endpoint in endpoints:
        ratio = endpoint.percentile(0.5) / baseline
        throughput = f"{endpoint.requests_per_second:.0f}"
        lines.append(
            f"| {endpoint.name} | `{_shown_path(endpoint)}` | {endpoint.percentile(0.5):.2f} | "
            f"{endpoint.percentile(0.99):.2f} | {statistics.fmean(endpoint.latencies_ms):.2f} | {throughput} | "
            f"{ratio:.2f}x | {endpoint.queries} | {endpoint.body_bytes:,} |"
        )
    served = [e for e in endpoints[1:] if not e.uncached]
    misses = [e.name for e in served if e.percentile(0.5) > baseline * (
        ANSWER_TARGET_RATIO if e.name in ANSWERS else TARGET_RATIO)]
    verdict = (
        f"Every page as served is within {TARGET_RATIO:g}x of the trivial view's p50, and every answer "
        f"({', '.join(ANSWERS)}) within {ANSWER_TARGET_RATIO:g}x."
        if not misses
        else f"Outside its target ({TARGET_RATIO:g}x for pages, {ANSWER_TARGET_RATIO:g}x for answers): "
        f"{', '.join(misses)}."
    )
    memory = "\n".join(f"    {line}" for line in info["memory"].splitlines())
    return "\n".join(
        [
            "# Pages benchmark" + ("" if args.scale == 1 else f", catalog {args.scale}x larger")
            + (", SQLite" if args.sqlite else ", PostgreSQL") + (" with Redis" if args.redis_url else ""),
            "",
            f"Run: {info['date']} by `benchmarks/pages.py --scale {args.scale}{' --sqlite' if args.sqlite else ''}"
            f"{' --redis-url ' + args.redis_url if args.redis_url else ''} "
            f"--requests {args.requests} --rounds {args.rounds} --burst {args.burst} --concurrency {args.concurrency}`.",
            "",
            f"Machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, Django {info['django']}, "
            f"PostgreSQL {info['postgres']}. Memory (`free -h`):",
            "",
            memory,
            "",
            f"Set-up: database {info['database']}, re-created and filled by `manage.py "
            f"load_catalog`{info['scaled']}; gunicorn, 2 sync workers, on a free loopback port; `DEBUG=False`; "
            "`CONN_MAX_AGE=60`; a new TCP connection per request (gunicorn's sync workers do not keep alive). "
            "The load generator runs on the same machine and shares its CPUs. "
            f"Page cache: {'Redis (' + args.redis_url + ')' if args.redis_url else 'files under var/cache/, shared by the workers (the make run default)'}. "
            f"Load average (1/5/15 min) before: {info['load_before']}, after: {info['load_after']} — the machine "
            "is shared, so compare the ratios measured in this run rather than absolute times across runs.",
            "",
            "Pages are served from the project's page cache (core/cache.py, shared with the API), keyed by the "
            "URL and the generation (one number in the cache, moved by every write to what the site shows; a "
            "cache hit asks the cache only, never the database; see docs/site.md). The "
            f"*{FIRST_RENDER}* rows add a unique `cold=N` parameter to every request, so each one misses the "
            "page cache and renders the page: what the first reader pays after a data change. "
            "The per-generation snapshots the wizard, fit "
            "and break-even read stay warm in each process, as they do between two data changes. "
            f"The {TARGET_RATIO:g}x target applies to the pages as served, {ANSWER_TARGET_RATIO:g}x to the answers. "
            "The `/providers/` entry also varies "
            "with the names of the key variables set in the serving process.",
            "",
            f"Latency: {args.requests} requests per endpoint, one at a time, the endpoints shuffled in every round. "
            f"Throughput: {args.rounds} rounds of a {args.burst}-request burst per endpoint with "
            f"{args.concurrency} concurrent clients, endpoints shuffled each round. Queries: one request "
            "counted in-process with Django's test client, "
            "right after a first request: a cached page then needs none.",
            "",
            *lines,
            "",
            f"**{verdict}**",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="latency samples per endpoint")
    parser.add_argument("--rounds", type=int, default=6, help="throughput rounds")
    parser.add_argument("--burst", type=int, default=48, help="requests per endpoint per throughput round")
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent clients in a burst")
    parser.add_argument("--tool", default="together-ai", help="slug of the tool page to measure")
    parser.add_argument("--compare", default="groq,cerebras,together-ai,fireworks-ai", help="four slugs to compare")
    parser.add_argument("--model", default="gpt-oss-120b", help="slug of the model page to measure")
    parser.add_argument("--evidence", default="gpt-oss-120b/nvidia-h100-sxm",
                        help="model/hardware of the published-benchmark comparison page to measure")
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432"),
        help="PostgreSQL server URL (without a database name)",
    )
    parser.add_argument(
        "--redis-url", default="",
        help="cache the pages in this Redis database (as in production); default: each worker's memory",
    )
    parser.add_argument(
        "--scale", type=int, default=1,
        help="make the catalog this many times larger with synthetic copies of every tool (benchmark database only)",
    )
    parser.add_argument("--sqlite", action="store_true",
                        help=f"serve from a SQLite file ({SQLITE_PATH}), the make run default, instead of PostgreSQL")
    parser.add_argument("--keep-db", action="store_true", help=f"leave {DB_NAME} in place afterwards")
    parser.add_argument("--no-write", action="store_true", help="print only; do not write the results file")
    args = parser.parse_args()

    env = environment(args.postgres, args.redis_url, args.sqlite)

    pages = [
        ("catalog", "/"),
        ("tool page", f"/tools/{args.tool}/"),
        ("compare (4 tools)", f"/compare/?tools={args.compare}"),
        ("providers", "/providers/"),
        ("models", "/models/"),
        ("model page", f"/models/{args.model}/"),
        ("engines", "/engines/"),
        ("evidence matrix", "/engines/evidence/"),
        ("evidence: one model × hardware", f"/engines/evidence/{args.evidence}/"),
        ("wizard answer", "/recommend/?hardware=nvidia_hopper_node&deployment=production&concurrency=64"),
        ("fit answer", f"/fit/?model={args.model}&hardware=nvidia-h100-sxm"),
        ("break-even answer", f"/break-even/?model={args.model}"),
        ("cost answer", f"/cost/?model={args.model}&hardware=nvidia-h100-sxm&gpu_count=1&gpu_hour_usd=2.50"
                        "&max_ttft_ms=1000"),
        ("recommendations API", "/api/v1/recommendations/?hardware=nvidia_hopper_node&deployment=production"),
    ]
    endpoints = [
        Endpoint("trivial view", "/bench/trivial/"),
        *(Endpoint(name, path) for name, path in pages),
        *(Endpoint(f"{name}, {FIRST_RENDER}", path, uncached=True) for name, path in pages),
    ]
    rng = random.Random(20261019)
    load_before = load_average()
    print(f"Creating {DB_NAME} and loading the catalog…", flush=True)
    if args.sqlite:
        SQLITE_PATH.unlink(missing_ok=True)
    else:
        recreate_database(args.postgres, DB_NAME)
    try:
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "load_catalog")
        scaled = ""
        if args.scale > 1:
            tools = scale_catalog(env, args.scale)
            scaled = (f", then made {args.scale}x larger with synthetic copies of every tool and its rows "
                      f"({tools} tools; created for this benchmark only)")
        count_queries(env, endpoints)
        with gunicorn(env) as port:
            warm_up(port, endpoints, HOST)
            print(f"Measuring latency ({args.requests} × {len(endpoints)} requests)…", flush=True)
            measure_latency(port, endpoints, args.requests, rng, HOST)
            print(f"Measuring throughput ({args.rounds} rounds × {args.burst} × {len(endpoints)})…", flush=True)
            measure_throughput(port, endpoints, args.rounds, args.burst, args.concurrency, rng, HOST)
    finally:
        if args.sqlite and not args.keep_db:
            SQLITE_PATH.unlink(missing_ok=True)
        elif not args.keep_db:
            drop_database(args.postgres, DB_NAME)

    info = machine()
    info.update(load_before=load_before, load_after=load_average(), scaled=scaled,
                database=f"`{SQLITE_PATH}` (SQLite)" if args.sqlite else f"`{DB_NAME}` on the local PostgreSQL")
    text = report(endpoints, args, info)
    print(text)
    if not args.no_write:
        path = results_path(args.scale, args.sqlite, bool(args.redis_url))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"Wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
