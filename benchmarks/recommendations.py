"""Cost of the recommendation maths, in-process, against the real catalog and a catalog ten times larger.

No database: the catalog comes straight from fixtures/catalog/*.yaml (as the scoring tests read it),
so the numbers isolate scoring from query cost (the wizard page's queries are constant, see
tests/recommend/test_views.py). Everything is timed in one run, interleaved round by round:

* recommend() for a fixed, seeded set of random profiles, real catalog plus benchmark-only probe rows
  (6 speed summaries and 15 compat checks per provider; the fixtures carry no measurements);
* the same profiles against that catalog copied tenfold (tools, prices, summaries, compat rows);
* the fit calculator and the break-even arithmetic, for scale.

Results are printed and written to benchmarks/results/recommendations.md.

    .venv/bin/python benchmarks/recommendations.py [--profiles 200] [--rounds 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import platform
import random
import statistics
import sys
import time

from harness import BENCH_DIR, ROOT, machine

sys.path.insert(0, str(ROOT))

from scoring import profile as choices  # noqa: E402
from scoring.breakeven import GpuPrice, TokenPrice, Workload, gpu_costs, provider_costs  # noqa: E402
from scoring.fit import FitInput, calculate  # noqa: E402
from scoring.profile import Profile  # noqa: E402
from scoring.ranking import CatalogData, CompatInfo, SpeedInfo, recommend  # noqa: E402
from tests.scoring.conftest import catalog_from_fixtures  # noqa: E402

RESULTS = BENCH_DIR / "results" / "recommendations.md"


def random_profiles(count: int, seed: int = 7) -> list[Profile]:
    rng = random.Random(seed)
    pick = lambda options: rng.choice(choices.values_of(options))  # noqa: E731
    return [
        Profile(
            hardware=pick(choices.HARDWARE_CHOICES), fits_fast_memory=pick(choices.FITS_FAST_MEMORY_CHOICES),
            bottleneck=pick(choices.BOTTLENECK_CHOICES), context_tokens=rng.choice([2048, 8192, 65536, 262144]),
            concurrency=rng.choice([1, 4, 32, 256]), shared_prefixes=rng.random() < 0.3,
            architecture=pick(choices.ARCHITECTURE_CHOICES), deployment=pick(choices.DEPLOYMENT_CHOICES),
            quantization=pick(choices.QUANTIZATION_CHOICES), interconnect=pick(choices.INTERCONNECT_CHOICES),
            optimize_for=pick(choices.OPTIMIZE_FOR_CHOICES), hosted_ok=rng.random() < 0.6,
            needs=tuple(rng.sample(choices.values_of(choices.NEEDS_CHOICES), rng.randint(0, 3))),
        )
        for _ in range(count)
    ]


def with_probe_rows(catalog: CatalogData, providers: list[str]) -> tuple[list, list]:
    """Benchmark-only probe rows: three workloads x two concurrencies and every compat check per provider."""
    speeds, compat = [], []
    for index, provider in enumerate(providers):
        for workload in ("in-100", "in-1k", "in-10k"):
            for concurrency in (1, 10):
                speeds.append(SpeedInfo(provider, f"{provider}-t", "gpt-oss-120b", workload, concurrency, 24,
                                        300.0 + index, 250.0))
        for check in choices.values_of(choices.NEEDS_CHOICES):
            compat.append(CompatInfo(provider, f"{provider}-t", check, "supported" if index % 5 else "rejected"))
    return speeds, compat


def measured(catalog: CatalogData) -> CatalogData:
    providers = [slug for slug, tool in catalog.tools.items() if tool.kind == "provider"]
    speeds, compat = with_probe_rows(catalog, providers)
    return dataclasses.replace(catalog, speeds=tuple(speeds), compat=tuple(compat))


def grown(catalog: CatalogData, factor: int) -> CatalogData:
    """Every tool, price and probe row copied factor - 1 more times under new slugs."""
    tools, prices = dict(catalog.tools), list(catalog.prices)
    for copy in range(1, factor):
        for slug, tool in catalog.tools.items():
            tools[f"{slug}-{copy}"] = dataclasses.replace(tool, slug=f"{slug}-{copy}")
        prices += [dataclasses.replace(price, tool=f"{price.tool}-{copy}") for price in catalog.prices]
    providers = [slug for slug, tool in tools.items() if tool.kind == "provider"]
    speeds, compat = with_probe_rows(catalog, providers)
    return CatalogData(tools=tools, prices=tuple(prices), speeds=tuple(speeds), compat=tuple(compat))


def time_per_call(function, items) -> float:
    start = time.perf_counter()
    for item in items:
        function(item)
    return (time.perf_counter() - start) / len(items) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--profiles", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    real = measured(catalog_from_fixtures())
    big = grown(catalog_from_fixtures(), 10)
    profiles = random_profiles(args.profiles)
    fits = [FitInput(params_b=p, layers=32, kv_heads=8, head_dim=128, bits_per_weight=4.84, context_tokens=8192,
                     concurrency=4, memory_gib=80, bandwidth_gb_s=3350) for p in (7, 8, 13, 34, 70) * 40]
    workloads = [Workload(input_tokens_per_day=10**8 * k, output_tokens_per_day=2 * 10**7 * k) for k in range(1, 201)]
    token_prices = [TokenPrice("groq", "Groq", "gpt-oss-120b", 0.15, 0.6, "seed 002", None)]
    gpu_prices = [GpuPrice("together-ai", "Together AI", "H100", "On demand", 3.99, "seed 002", None)]

    def break_even(workload: Workload) -> None:
        gpu_costs(workload, gpu_prices, gpu_count=2, providers=provider_costs(workload, token_prices))

    cases = {
        f"recommend(), real catalog ({len(real.tools)} tools, {len(real.speeds)} summaries)": (
            lambda p: recommend(p, real), profiles),
        f"recommend(), catalog x10 ({len(big.tools)} tools, {len(big.speeds)} summaries)": (
            lambda p: recommend(p, big), profiles),
        "fit calculate()": (calculate, fits),
        "break-even (providers + GPUs)": (break_even, workloads),
    }
    timings: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (function, items) in random.sample(list(cases.items()), len(cases)):
            timings[name].append(time_per_call(function, items))

    medians = {name: statistics.median(values) for name, values in timings.items()}
    names = list(cases)
    ratio = medians[names[1]] / medians[names[0]]
    info = machine()
    lines = [
        "# Recommendation maths benchmark",
        "",
        f"- Date: {info['date']}",
        f"- Machine: `nproc` = {info['nproc']}, Python {info['python']}, {platform.machine()}",
        f"- Run: `.venv/bin/python benchmarks/recommendations.py --profiles {args.profiles} --rounds {args.rounds}`"
        " (cases interleaved in shuffled order each round; median of rounds)",
        "",
        "| Case | Median µs per call | Rounds (µs) |",
        "|---|---:|---|",
        *(f"| {name} | {medians[name]:.1f} | {', '.join(f'{v:.0f}' for v in timings[name])} |" for name in names),
        "",
        f"Ratio catalog x10 / real catalog: **{ratio:.2f}x** for ten times the tools, prices, summaries and "
        "compat rows.",
        "",
        "```",
        info["memory"],
        "```",
    ]
    report = "\n".join(lines) + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    print(report)


if __name__ == "__main__":
    main()
