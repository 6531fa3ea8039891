"""How accurately does the probe client measure? Errors against a simulator with a known timeline.

The simulator (tests/simulator) runs in its own process and records, with CLOCK_MONOTONIC (the clock behind
``time.perf_counter_ns`` on Linux, shared by all processes), when it really wrote each event. The client's
own stamps use the same clock, so for every request:

    true TTFT  = server wrote the first token  − client wrote the request
    TTFT error = measured TTFT − true TTFT       (= how late the client noticed the first token)

and likewise for E2E (last token) and output speed ((N − 1) / (last − first token written)).

Variants, side by side in one run on the same simulator:
- ``atlas``: ``run_speed_suite`` as shipped (kernel receive timestamps on every read, clock from
  the request write, parsing after the streams finish);
- ``atlas, clock from coroutine start``: the same requests, TTFT counted from when the request coroutine
  started, which adds client queueing and connection set-up (what a naive harness reports);
- ``naive httpx``: httpx's default transport, one ``perf_counter_ns`` per chunk in the ``aiter_raw`` loop,
  clock from coroutine start, SSE parsed as it arrives.

Usage: ``.venv/bin/python benchmarks/probe_accuracy.py [--levels 1,10,100,200] [--tokens 50]``
Writes benchmarks/results/probe_accuracy.md (and prints it).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from probe_client import EndpointConfig, run_speed_suite  # noqa: E402
from probe_client.stream_analysis import analyze_events  # noqa: E402
from probe_client.sse import SSEDecoder  # noqa: E402
from probe_client.workloads import build_messages  # noqa: E402
from tests.simulator import start_simulator  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "probe_accuracy.md"


def quantiles(values: list[float]) -> tuple[float, float]:
    data = sorted(values)
    if not data:
        return float("nan"), float("nan")
    p99 = data[min(len(data) - 1, int(round(0.99 * (len(data) - 1))))]
    return statistics.median(data), p99


def truth_by_id(sim) -> dict:
    return {r["response_id"]: r["timeline"] for r in sim.chat_requests if "response_id" in r}


async def run_atlas(config: EndpointConfig, *, requests: int, concurrency: int, max_tokens: int):
    cpu = time.process_time()
    wall = time.perf_counter()
    result = await run_speed_suite(
        config, input_tokens=100, max_tokens=max_tokens, requests=requests, concurrency=concurrency
    )
    return result, (time.process_time() - cpu), time.perf_counter() - wall


async def run_naive(config: EndpointConfig, *, requests: int, concurrency: int, max_tokens: int):
    """A straightforward httpx harness: default transport, stamp per chunk in the loop, parse as it goes."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    rows = []
    cpu = time.process_time()
    verify = ssl.create_default_context(cafile=config.ca_bundle) if config.ca_bundle else True
    async with httpx.AsyncClient(limits=limits, timeout=60.0, trust_env=False, verify=verify) as client:
        queue = list(range(requests))

        async def worker():
            while queue:
                index = queue.pop(0)
                start = time.perf_counter_ns()
                body = {
                    "model": config.model,
                    "messages": build_messages(100, f"naive-{index}-{start}"),
                    "stream": True,
                    "max_completion_tokens": max_tokens,
                    "stream_options": {"include_usage": True},
                }
                decoder = SSEDecoder()
                events = []
                async with client.stream("POST", config.chat_url, json=body) as response:
                    request_id = response.headers.get("x-request-id", "")
                    async for chunk in response.aiter_raw():
                        events.extend(decoder.feed(chunk, time.perf_counter_ns()))
                analysis = analyze_events(events)
                tokens = analysis.token_events
                rows.append(
                    {
                        "request_id": request_id,
                        "start_ns": start,
                        "first_ns": tokens[0].received_ns,
                        "last_ns": tokens[-1].received_ns,
                    }
                )

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return rows, time.process_time() - cpu


def errors_for(result, truth: dict, tokens: int) -> dict:
    ttft, ttft_start, e2e, speed = [], [], [], []
    for r in result.requests:
        if not r.ok or r.request_id not in truth:
            continue
        timeline = truth[r.request_id]
        stamps = r.raw_stamps
        written = stamps["written_ns"]
        true_ttft = (timeline["first_token_ns"] - written) / 1e6
        true_e2e = (timeline["last_token_ns"] - written) / 1e6
        true_speed = (tokens - 1) / ((timeline["last_token_ns"] - timeline["first_token_ns"]) / 1e9)
        ttft.append(abs(r.ttft_ms - true_ttft))
        e2e.append(abs(r.e2e_ms - true_e2e))
        speed.append(abs(r.output_speed_tps - true_speed) / true_speed * 100)
        measured_from_start = (stamps["first_token_ns"] - stamps["start_ns"]) / 1e6
        ttft_start.append(abs(measured_from_start - true_ttft))
    return {
        "ttft": ttft,
        "ttft_from_start": ttft_start,
        "e2e": e2e,
        "speed_pct": speed,
        "ok": len(ttft),
        "total": len(result.requests),
    }


def naive_errors(rows: list[dict], truth: dict, written_hint: dict) -> list[float]:
    """TTFT error of the naive harness: its TTFT (from coroutine start) against the wire truth."""
    errors = []
    for row in rows:
        timeline = truth.get(row["request_id"])
        if timeline is None:
            continue
        # The naive harness has no write stamp; its TTFT runs from coroutine start, compared with the same
        # wire truth (server first token − moment the server finished reading the request).
        true_ttft = (timeline["first_token_ns"] - written_hint[row["request_id"]]) / 1e6
        errors.append(abs((row["first_ns"] - row["start_ns"]) / 1e6 - true_ttft))
    return errors


def machine() -> str:
    free = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.rstrip()
    load = os.getloadavg()
    return (
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC\n- nproc: {os.cpu_count()}\n"
        f"- load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (the machine is shared)\n"
        f"- Python {platform.python_version()}, httpx {httpx.__version__}\n- free -h:\n\n```\n{free}\n```"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,10,100,200")
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--ttft-ms", type=float, default=200.0)
    parser.add_argument("--itl-ms", type=float, default=20.0)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--tls", action="store_true", help="also measure over HTTPS (needs the openssl command)")
    parser.add_argument(
        "--nice", type=int, default=0, help="change the priority of the client and simulator (e.g. -10; needs root)"
    )
    args = parser.parse_args()
    if args.nice:
        os.nice(args.nice)
    levels = [int(x) for x in args.levels.split(",")]
    schedule = {
        "ttft_ms": args.ttft_ms,
        "itl_ms": args.itl_ms,
        "tokens": args.tokens,
        "reasoning_tokens": 0,
        "precise": False,
    }
    header = machine() + f"\n- process priority: nice {os.nice(0)} (client and simulator)"
    sections = [("Plain TCP (http://: self-hosted engines)", measure_levels(levels, schedule, args.tokens, tls=None))]
    if args.tls:
        with tempfile.TemporaryDirectory() as folder:
            tls = make_certificate(Path(folder))
            sections.append(
                ("TLS (https://: hosted providers)", measure_levels(levels, schedule, args.tokens, tls=tls))
            )
    report = render(sections, header, schedule)
    print(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report)


def make_certificate(folder: Path) -> dict:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return {"cert": str(cert), "key": str(key)}


def measure_levels(levels: list[int], schedule: dict, tokens: int, *, tls: dict | None) -> list[dict]:
    rows = []
    options = {"schedule": schedule, **({"tls": tls} if tls else {})}
    with start_simulator("openai", **options) as sim:
        config = EndpointConfig(
            base_url=sim.base_url,
            model=sim.model,
            read_timeout_s=60,
            request_deadline_s=120,
            ca_bundle=tls["cert"] if tls else None,
        )
        # Warm-up (imports, first connection), not measured.
        asyncio.run(run_atlas(config, requests=2, concurrency=2, max_tokens=tokens))
        for level in levels:
            requests = max(20, 2 * level)
            sim.reset()
            result, cpu_s, wall_s = asyncio.run(
                run_atlas(config, requests=requests, concurrency=level, max_tokens=tokens)
            )
            errors = errors_for(result, truth_by_id(sim), tokens)
            sim.reset()
            naive_rows, naive_cpu = asyncio.run(
                run_naive(config, requests=requests, concurrency=level, max_tokens=tokens)
            )
            naive_truth = truth_by_id(sim)
            recv = {r["response_id"]: r["recv_ns"] for r in sim.chat_requests if "response_id" in r}
            naive = naive_errors(naive_rows, naive_truth, recv)
            lateness = [
                (r["timeline"]["first_token_ns"] - r["recv_ns"]) / 1e6 - schedule["ttft_ms"]
                for r in sim.chat_requests
                if "response_id" in r
            ]
            row = {
                "level": level,
                "requests": requests,
                "ok": errors["ok"],
                "ttft": quantiles(errors["ttft"]),
                "ttft_start": quantiles(errors["ttft_from_start"]),
                "naive": quantiles(naive),
                "e2e": quantiles(errors["e2e"]),
                "speed": quantiles(errors["speed_pct"]),
                "cpu_ms": cpu_s / requests * 1000,
                "naive_cpu_ms": naive_cpu / requests * 1000,
                "server_late": quantiles(lateness),
                "wall_s": wall_s,
            }
            rows.append(row)
            print(json.dumps({"tls": bool(tls), **row}, default=str), flush=True)
    return rows


def fmt(pair) -> str:
    return f"{pair[0]:.2f} / {pair[1]:.2f}"


def render(sections: list[tuple[str, list[dict]]], header: str, schedule: dict) -> str:
    lines = [
        "# Probe accuracy (benchmarks/probe_accuracy.py)",
        "",
        "## Machine",
        header,
        "",
        "## Set-up",
        f"Simulator (separate process, loopback): first token {schedule['ttft_ms']:.0f} ms after the request, "
        f"then {schedule['tokens']} one-token chunks every {schedule['itl_ms']:.0f} ms, role-only first chunk, "
        "usage chunk. Requests per level: max(20, 2 × concurrency), closed loop. Errors are absolute, against the "
        "wire truth (server write time of each event − client write time of the request, both CLOCK_MONOTONIC). "
        "Cells are **median / p99**. Every column of a row was measured in the same run, one after the other.",
    ]
    for title, rows in sections:
        lines += [
            "",
            f"## {title}",
            "",
            "| concurrent streams | requests ok | TTFT error ms (atlas) | TTFT error ms (atlas, clock from "
            "coroutine start) | TTFT error ms (naive httpx) | E2E error ms | output speed error % | client CPU "
            "ms/request (atlas / naive) | server lateness vs schedule ms |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(
                f"| {r['level']} | {r['ok']}/{r['requests']} | {fmt(r['ttft'])} | {fmt(r['ttft_start'])} | "
                f"{fmt(r['naive'])} | {fmt(r['e2e'])} | {fmt(r['speed'])} | {r['cpu_ms']:.2f} / "
                f"{r['naive_cpu_ms']:.2f} | {fmt(r['server_late'])} |"
            )
        lines += ["", "Targets (issue #3):", ""]
        at100 = next((r for r in rows if r["level"] == 100), None)
        if at100:
            median, p99 = at100["ttft"]
            lines.append(
                f"- median |TTFT error| ≤ 2 ms at 100 streams: **{median:.2f} ms** — "
                + ("met" if median <= 2 else f"missed by {median - 2:.2f} ms")
            )
            lines.append(
                f"- p99 |TTFT error| ≤ 10 ms at 100 streams: **{p99:.2f} ms** — "
                + ("met" if p99 <= 10 else f"missed by {p99 - 10:.2f} ms")
            )
        within = [str(r["level"]) for r in rows if r["speed"][1] <= 2]
        beyond = [
            f"{r['level']} (median {r['speed'][0]:.2f} %, p99 {r['speed'][1]:.2f} %)" for r in rows if r["speed"][1] > 2
        ]
        verdict = f"met (median and p99) at {', '.join(within) or 'no level'} streams"
        if beyond:
            verdict += f"; missed at {', '.join(beyond)}"
        lines.append(f"- output speed within 2%: {verdict}")
    lines += ["", NOTES]
    return "\n".join(lines) + "\n"


NOTES = """## Reading the table

- **TTFT error (atlas)**: the shipped client. On plain TCP every read carries the kernel's receive time
  (`SO_TIMESTAMPNS`), so neither the event loop nor parsing can delay a stamp. Parsing runs after the streams
  end, and cyclic GC is paused during a run. Error remains when the client stalls for longer than one
  inter-token gap. Two packets of a stream are then read together, the kernel reports the newer packet's
  time, and the earlier event is stamped late by up to one gap (20 ms here). On this shared 2-core machine
  that happens at 200 streams when other jobs load it: an earlier run today at a load average of ~3–5 gave
  18.6 / 95.7 ms TTFT error and 1.9 / 10.6 % speed error at 200 streams; at 100 streams it stayed at
  0.01 / 0.02 ms.
- **TLS**: decrypted in memory (`ssl.MemoryBIO`) on the same kernel-stamped socket. Decrypted bytes carry the
  stamp of the raw read that completed their TLS record. The cost is some CPU per read for decryption in
  Python's `ssl` module.
- **clock from coroutine start**: the same requests, with TTFT counted from when the request coroutine started.
  This adds the client's own queueing (pool, event loop, building the request) and connection set-up. It is
  the error a harness makes when it starts the clock before the request is written.
- **naive httpx**: a plain httpx client, built as follows:
  - httpx's default transport and one shared connection pool;
  - a `perf_counter_ns()` per chunk in the `aiter_raw` loop;
  - the SSE parsed as it arrives;
  - the clock started with the coroutine.

  Its error grows with concurrency for two reasons. Every stamp waits for the event loop to resume that
  coroutine. And httpcore's shared pool rescans all connections on every request, which is quadratic in the
  pool size. Its p99 also includes connection set-up and pool waits, since its clock starts with the
  coroutine.
- **client CPU ms/request**: `time.process_time()` of the client process for the whole run, divided by the
  number of requests. The simulator runs in another process. At concurrency 1 the figure is dominated by
  per-request fixed costs, spread over few event-loop iterations.
- **E2E** ends at the last token-bearing event. The last token and the finish chunk leave the server together,
  so E2E rarely suffers from merged reads.
- Results depend on the load that other jobs put on the shared machine. The load average at the start of the
  run is printed above.

Development notes: these come from earlier versions of the client, on the same machine and day, and this
script cannot reproduce them. Each stage was measured at 100 streams:

| stage | median / p99 TTFT error |
|---|---|
| httpx's default anyio backend, per-chunk stamps in the read loop | 11 / 120 ms |
| plus stamping in `data_received`, per-worker connection pools, `sniffio` installed, parsing deferred | 2.4 / 35 ms |
| plus kernel receive timestamps | the figures above |

httpcore retried a failing `import sniffio` on every lock, which cost about 1 ms of CPU each time.
An intermediate HTTPS version used the second stage (stamps in `data_received`). It measured 0.20 / 1.73 ms at
100 streams and 0.62 / 22.8 ms at 200 streams, at a load average of about 1.
"""


if __name__ == "__main__":
    main()
