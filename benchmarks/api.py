"""Latency and throughput of the REST API against a trivial DRF view, served by gunicorn, in one run.

Sets up a dedicated PostgreSQL database (``atlas_bench_api``, dropped and re-created), migrates it,
loads the real catalog (``manage.py load_catalog``), stores 100,000 probe runs (bulk_create) and a
set of measurement summaries, serves the project with gunicorn (2 sync workers, persistent DB
connections) on a free loopback port, then measures, the endpoints interleaved:

* latency: one request at a time, every endpoint once per round in a shuffled order;
* throughput: bursts of concurrent requests, endpoint after endpoint in shuffled rounds.

Endpoints: the tools list, a tool detail, the runs list first page, a runs page 99,000 rows deep
(keyset cursor), the summaries list, published benchmarks, recommendations, each as served and with the page
cache missed, and the trivial view (benchmarks/api_urls.py, not in the product). The synthetic runs and summaries exist only in the benchmark database.

With ``--scale 10`` the catalog is made ten times larger first (synthetic copies of every tool and its
rows, benchmark database only) and the results go to benchmarks/results/api-10x.md.

    .venv/bin/python benchmarks/api.py [--scale 1] [--runs 100000] [--requests 300] [--rounds 6] [--burst 48] [--out PATH]
"""
from __future__ import annotations

import argparse
import base64
import os
import random
import subprocess
import sys
from pathlib import Path
from urllib import parse

from harness import (
    BENCH_DIR,
    PYTHON,
    ROOT,
    Endpoint,
    bench_database_name,
    bench_environment,
    gunicorn,
    machine,
    manage,
    measure_latency,
    measure_throughput,
    recreate_database,
    scale_catalog,
    warm_up,
)

RESULTS = BENCH_DIR / "results" / "api.md"
# Each checkout benchmarks in a database of its own (see bench_database_name).
DB_NAME = bench_database_name("api")
TARGET_RATIO = 2.0
BATCH = 5000
JSON = {"Accept": "application/json"}
MISSED = "cache missed"


def environment(server_url: str, redis_url: str) -> dict[str, str]:
    env = bench_environment("api_settings", f"{server_url.rstrip('/')}/{DB_NAME}")
    env.update(
        REDIS_URL=redis_url,
        DJANGO_CACHE_PREFIX="atlas-bench-api",
        # The benchmark measures serving cost, not the rate limiter refusing it.
        API_THROTTLE_ANON="100000000/min",
        API_THROTTLE_USER="100000000/min",
        PAGE_THROTTLE="100000000/min",
    )
    return env


POPULATE = r"""
import datetime, random
import django
django.setup()
from django.db import connection
from django.utils import timezone
from probes.models import MeasurementSummary, ProbeRun, ProbeTarget

random.seed(7)
runs_wanted, batch = {runs}, {batch}
targets = list(ProbeTarget.objects.order_by("pk"))
statuses = ["succeeded"] * 8 + ["partial", "failed"]
made = 0
while made < runs_wanted:
    size = min(batch, runs_wanted - made)
    ProbeRun.objects.bulk_create([
        ProbeRun(
            target=targets[(made + i) % len(targets)],
            suite="speed" if (made + i) % 4 else "compat",
            workload=("in-100", "in-1k", "in-10k")[(made + i) % 3],
            concurrency=10 if (made + i) % 7 == 0 else 1,
            request_count=3,
            status=statuses[(made + i) % len(statuses)],
            summary={{"ttft_ms": {{"p50": round(random.uniform(80, 900), 1)}}, "requests": 3}},
        )
        for i in range(size)
    ], batch_size=size)
    made += size
with connection.cursor() as cursor:
    # auto_now_add stamped every row "now"; spread them one minute apart, oldest first, like real history.
    cursor.execute(
        "UPDATE probes_proberun SET queued_at = now() - ((SELECT max(id) FROM probes_proberun) - id) "
        "* interval '1 minute', finished_at = queued_at"
    )
now = timezone.now()
for target in targets:
    for workload in ("in-100", "in-1k", "in-10k"):
        for concurrency in (1, 10):
            MeasurementSummary.objects.update_or_create(
                target=target, workload=workload, concurrency=concurrency,
                defaults=dict(samples=300, samples_72h=36, success_rate=0.99, success_rate_72h=1.0,
                              metrics={{m: {{"p50": 1.0, "p95": 2.0, "p99": 3.0, "median_72h": 1.1}}
                                       for m in ("ttft_ms", "ttfat_ms", "e2e_ms", "output_speed_tps", "tpot_ms")}},
                              first_run_at=now - datetime.timedelta(days=30), last_run_at=now),
            )
with connection.cursor() as cursor:
    cursor.execute("ANALYZE")
    cursor.execute("SELECT min(id), count(*) FROM probes_proberun")
    print(*cursor.fetchone())
"""


def populate(env: dict[str, str], runs: int) -> tuple[int, int]:
    output = subprocess.run(
        [PYTHON, "-c", POPULATE.format(runs=runs, batch=BATCH)], cwd=ROOT, env=env, check=True,
        capture_output=True, text=True,
    ).stdout.split()
    return int(output[-2]), int(output[-1])


def machine_markdown() -> str:
    info = machine()
    return (
        f"- Date: {info['date']}\n"
        f"- CPUs (`nproc`): {info['nproc']} (shared with other work running at the same time)\n"
        f"- Python {info['python']}, {info['platform']}\n"
        f"- Memory (`free -h`):\n\n```\n{info['memory']}\n```\n"
    )


def report(endpoints: list[Endpoint], args: argparse.Namespace, runs: int, tools: int) -> str:
    trivial = endpoints[0]
    base = trivial.percentile(0.5)
    lines = [
        "# REST API benchmark" + ("" if args.scale == 1 else f", catalog {args.scale}x larger"),
        "",
        "Produced by `benchmarks/api.py`. Every figure below comes from one run, the endpoints interleaved.",
        "",
        machine_markdown(),
        "## Setup",
        "",
        f"- PostgreSQL database `{DB_NAME}` with the real catalog (`load_catalog`)"
        + (f", made {args.scale}x larger with synthetic copies of every tool and its rows ({tools} tools; created "
           "for this benchmark only)," if args.scale > 1 else "")
        + f" and {runs:,} stored probe runs "
        "(synthetic, bulk-created for this benchmark only) spread over the probe targets, one minute apart; "
        "6 measurement summaries per target.",
        "- gunicorn, 2 sync workers, persistent DB connections (`DJANGO_CONN_MAX_AGE=60`), Redis cache for "
        "throttles and ETag dates; DEBUG off. Throttle rates raised so nothing is refused.",
        "- Client on the same machine: `http.client`, a new connection per request (gunicorn sync workers do "
        "not keep connections alive).",
        f"- Latency: {args.requests} rounds, one request at a time, every endpoint once per round in a shuffled "
        f"order. Throughput: {args.rounds} shuffled rounds of {args.burst}-request bursts from "
        f"{args.concurrency} concurrent clients per endpoint.",
        "- The trivial view is a DRF `APIView` returning `{\"ok\": true}` through the same authentication, "
        "throttling and rendering, with no database and no ETag work.",
        "",
        "## Results",
        "",
        "| Endpoint | Path | Body bytes | p50 ms | p99 ms | req/s | p50 / trivial p50 |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for endpoint in endpoints:
        ratio = endpoint.percentile(0.5) / base
        throughput = f"{endpoint.requests_per_second:.0f}"
        cold = ("&" if "?" in endpoint.path else "?") + "cold=N" if endpoint.uncached else ""
        lines.append(
            f"| {endpoint.name} | `{endpoint.path[:60]}{cold}` "
            f"| {endpoint.body_bytes:,} | {endpoint.percentile(0.5):.2f} "
            f"| {endpoint.percentile(0.99):.2f} | {throughput} | {ratio:.2f}x |"
        )
    first = next(e for e in endpoints if e.name == f"runs, first page, {MISSED}")
    deep = next(e for e in endpoints if e.name.startswith("runs, deep page") and e.uncached)
    measured = [e for e in endpoints if e is not trivial and not e.uncached]
    missed = [e for e in endpoints if e.uncached]
    worst = max(measured, key=lambda e: e.percentile(0.5))
    within = all(e.percentile(0.5) <= TARGET_RATIO * base for e in measured)
    deep_ratio = deep.percentile(0.5) / first.percentile(0.5)
    lines += [
        "",
        "## Against the targets",
        "",
        f"- Each endpoint within {TARGET_RATIO:.0f}x of the trivial view's p50: "
        f"**{'met' if within else 'NOT met'}** (slowest: {worst.name}, "
        f"{worst.percentile(0.5) / base:.2f}x).",
        f"- A deep page of runs computed as fast as the first (cache missed): deep p50 / first p50 = "
        f"**{deep_ratio:.2f}** "
        f"({'met' if deep_ratio <= 1.15 else 'NOT met'}; keyset pagination seeks by primary key, no OFFSET, "
        "no COUNT).",
        "",
        "## What the cache hides",
        "",
        "The catalog reads, tool details, runs pages, summaries and published benchmarks are served from the "
        "page cache "
        "shared with the pages (core/cache.py): entries keyed by URL and the generation, one number in the "
        "cache moved by every write to what the site shows, so a hit asks the cache only and "
        "any committed write shows on the next request; the rows without \"cache missed\" measure that "
        "served path, as a client sees it between writes. The \"cache missed\" rows add a unique query "
        "parameter to every request, so each one computes its answer: what the first read costs after a "
        "data change: "
        + "; ".join(f"{e.name} {e.percentile(0.5) / base:.2f}x the trivial p50" for e in missed)
        + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/6"))
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--burst", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--scale", type=int, default=1,
        help="make the catalog this many times larger with synthetic copies of every tool (benchmark database only)",
    )
    parser.add_argument("--out", type=Path, default=None,
                        help="where to write the results (Markdown; default results/api.md, or api-Nx.md when scaled)")
    args = parser.parse_args()

    rng = random.Random(11)
    env = environment(args.postgres, args.redis)
    print(f"Creating {DB_NAME} and loading the catalog ...", flush=True)
    recreate_database(args.postgres, DB_NAME)
    manage(env, "migrate", "--noinput")
    manage(env, "load_catalog")
    tools = scale_catalog(env, args.scale) if args.scale > 1 else 0
    print(f"Storing {args.runs:,} runs ...", flush=True)
    min_id, count = populate(env, args.runs)

    # The token KeysetPagination (DRF's CursorPagination) writes for "rows with a smaller id than this".
    deep_cursor = parse.quote(base64.b64encode(f"p={min_id + 1000}".encode()).decode())
    reads = [
        ("tools list", "/api/v1/tools/"),
        ("tool detail", "/api/v1/tools/vllm/"),
        ("runs, first page", "/api/v1/probes/runs/"),
        (f"runs, deep page (~{count - 1000:,} rows in)", f"/api/v1/probes/runs/?cursor={deep_cursor}"),
        ("summaries", "/api/v1/probes/summaries/"),
        ("published benchmarks, one model", "/api/v1/published-benchmarks/?model=gpt-oss-120b"),
        ("recommendations", "/api/v1/recommendations/?hardware=nvidia_hopper_node&deployment=production"),
    ]
    with gunicorn(env, workers=args.workers) as port:
        endpoints = [
            Endpoint("trivial DRF view", "/bench/trivial/"),
            *(Endpoint(name, path) for name, path in reads),
            *(Endpoint(f"{name}, {MISSED}", path, uncached=True) for name, path in reads),
        ]
        warm_up(port, endpoints, JSON)
        print("Measuring latency ...", flush=True)
        measure_latency(port, endpoints, args.requests, rng, JSON)
        print("Measuring throughput ...", flush=True)
        measure_throughput(port, endpoints, args.rounds, args.burst, args.concurrency, rng, JSON)
    text = report(endpoints, args, count, tools)
    args.out = args.out or (RESULTS if args.scale == 1 else RESULTS.with_name(f"api-{args.scale}x.md"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
