"""Server-side cost of the probe pages as the number of targets grows: render time, queries and bytes.

Creates a dedicated PostgreSQL database (``atlas_bench_probe_pages``, dropped and re-created), migrates it and
loads the real catalog. Then, for each size, it adds N provider and N engine targets, each with three workload
summaries, 7 days of run history (8 runs a day) and a full compat row. It renders /providers/, /engines/ and
/methodology/ in-process through the whole middleware stack (Django's test client), interleaving the pages in
shuffled rounds. Figures are synthetic benchmark data in a throwaway database; nothing reaches the site.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/probe_pages.py [--rounds 30]

Results are printed and written to benchmarks/results/probe-pages.md.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time

from harness import BENCH_DIR, ROOT, bench_database_name, machine, percentile, recreate_database

RESULTS = BENCH_DIR / "results" / "probe-pages.md"
DB_NAME = bench_database_name("probe_pages")
SIZES = (4, 20, 100)
PAGES = ("/providers/", "/engines/", "/methodology/")
WORKLOADS = ("in-100", "in-1k", "in-10k")


SERVER_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres").rsplit("/", 1)[0]


def _setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{SERVER_URL}/{DB_NAME}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    call_command("load_catalog", verbosity=0)


def _add_targets(start: int, stop: int) -> None:
    from django.utils import timezone

    from catalog.models import Tool
    from probes.models import CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget
    from scoring.vocabulary import COMPAT_CHECKS, run_summary_keys

    now = timezone.now()
    tools = {kind: Tool.objects.filter(kind=kind).order_by("slug").first() for kind in ("provider", "engine")}
    targets = ProbeTarget.objects.bulk_create(
        ProbeTarget(
            slug=f"bench-{kind}-{index}", name=f"Bench {kind} {index}", tool=tool, base_url="http://127.0.0.1:9/v1",
            model_id="gpt-oss-120b", enabled=True, hardware=f"GPU {index % 4}",
        )
        for index in range(start, stop)
        for kind, tool in tools.items()
    )
    rng = random.Random(start)
    runs, summaries, statuses = [], [], []
    for target in targets:
        for hours_ago in range(0, 7 * 24, 3):
            started = now - dt.timedelta(hours=hours_ago)
            runs.append(ProbeRun(
                target=target, suite="speed", workload="in-1k", status="succeeded", started_at=started,
                summary={
                    "ttft_ms": {"p50": rng.uniform(80, 400), "p95": 500.0, "p99": 600.0},
                    "output_speed_tps": {"p50": rng.uniform(50, 3000), "p95": 40.0, "p99": 30.0},
                    "success_rate": 1.0, "requests": 3,
                },
            ))
        for workload in WORKLOADS:
            metrics = {
                key: {"p50": rng.uniform(1, 999), "p95": 1000.0, "p99": 1100.0, "median_72h": rng.uniform(1, 999)}
                for key in run_summary_keys()
            }
            summaries.append(MeasurementSummary(
                target=target, workload=workload, samples=72, samples_72h=24, success_rate=1.0,
                success_rate_72h=1.0, metrics=metrics, last_run_at=now - dt.timedelta(hours=1),
            ))
        statuses.extend(
            CompatStatus(target=target, check_name=name, outcome=rng.choice(["supported", "rejected", "ignored"]),
                         http_status=400, message="the provider's message", checked_at=now)
            for name in COMPAT_CHECKS
        )
    ProbeRun.objects.bulk_create(runs)
    ProbeRun.objects.filter(target__in=targets).update(queued_at=now)
    MeasurementSummary.objects.bulk_create(summaries)
    CompatStatus.objects.bulk_create(statuses)


def _measure(rounds: int) -> dict[str, dict[str, float]]:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    timings: dict[str, list[float]] = {page: [] for page in PAGES}
    queries: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for page in PAGES:  # warm-up: template loading and connection set-up are not part of the figures
        assert client.get(page).status_code == 200
    for _ in range(rounds):
        order = list(PAGES)
        random.shuffle(order)
        for page in order:
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(page)
                timings[page].append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
            queries[page] = len(captured.captured_queries)
            sizes[page] = len(response.content)
    return {
        page: {
            "median_ms": statistics.median(values),
            "p95_ms": percentile(values, 0.95),
            "queries": queries[page],
            "kib": sizes[page] / 1024,
        }
        for page, values in timings.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    recreate_database(SERVER_URL, DB_NAME)
    _setup_django()
    from django.test.utils import setup_test_environment

    setup_test_environment()
    results = {}
    built = 0
    for size in SIZES:
        _add_targets(built, size)
        built = size
        results[size] = _measure(args.rounds)
        medians = {page: round(values["median_ms"], 1) for page, values in results[size].items()}
        print(f"{size} targets per page:", medians)

    info = machine()
    lines = [
        "# Probe pages: server-side cost against the number of targets",
        "",
        f"- Date: {info['date']}; machine: {info['nproc']} cores (`nproc`), "
        f"Python {info['python']}, PostgreSQL on loopback.",
        f"- Command: `.venv/bin/python benchmarks/probe_pages.py --rounds {args.rounds}`",
        "- In-process render through the full middleware stack (Django test client), pages interleaved in shuffled "
        "rounds, after one warm-up request each. N provider and N engine targets, each with 3 workload summaries, "
        "56 runs of 7-day history and 15 compat cells. The machine is shared with other jobs, so compare ratios "
        "measured in this one run rather than absolute times.",
        "",
        "```",
        info["memory"],
        "```",
        "",
        "| Page | Targets | Median (ms) | p95 (ms) | Queries | HTML (KiB) | Median vs 4 targets |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for page in PAGES:
        base = results[SIZES[0]][page]["median_ms"]
        for size in SIZES:
            row = results[size][page]
            lines.append(
                f"| `{page}` | {size} | {row['median_ms']:.1f} | {row['p95_ms']:.1f} | {row['queries']} | "
                f"{row['kib']:.0f} | {row['median_ms'] / base:.2f}× |"
            )
    lines += [
        "",
        "Query counts stay constant as targets grow (the pages read summaries, never raw measurements). Render time "
        "and HTML size grow linearly with what the page has to show: per target a table row, 20 percentile cells, "
        "56 history points and 15 compat cells with their expandable details. At the fixture scale (four hosted "
        "presets and a few engines) the 4-target rows apply.",
        "",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines))
    print(f"Written to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
