"""How accurately does the lab's sweep measure? Each level's figures against the simulator's own record, with
GuideLLM and AIPerf measuring the same workload on the same simulator in the same run.

The simulator (tests/simulator, ``engine`` option) serves like a self-hosted engine whose latency rises with
load: ``slots`` streams at once (the others wait for a slot), each decode step slower by
``itl_ms_per_active`` per other active stream, prefill proportional to the prompt. For every request it records
with CLOCK_MONOTONIC (shared by all processes on Linux) when it had read the request and when it wrote the
first and last tokens. Two truths follow:

- the wire truth, for the lab's own requests (matched by response id): true TTFT = first token written −
  the moment the lab's client wrote the request (its own stamp on the same clock). This is the lab's real
  error, per request.
- the server's record, the same for all three tools (it needs nothing from them): TTFT = first token written −
  request read by the simulator; TPOT = (last token − first token) ÷ (tokens − 1); output tok/s = tokens
  written ÷ (last request finished − first request read); goodput = requests whose TTFT and TPOT meet the SLO
  ÷ that same duration. It leaves out the time the request waited to be read by the simulator, which every
  client rightly counts: the lab's requests show how long that was ("read lag").

Against the server's record each tool's error at a level = |its figure − the record's|, percentile against
percentile (GuideLLM and AIPerf report distributions, not per-request figures that could be matched). Output
tok/s errors are relative; the lab's goodput is shown beside the record's. Goodput only for the lab: the peers
were run without an SLO.

``--nice`` lowers the niceness of this process and so of the simulator and the peer tools it starts (all
alike): on a shared machine a client that is not scheduled for longer than one inter-token gap reads two
packets at once and stamps the earlier one late, whatever tool it is.

Usage: ``.venv/bin/python benchmarks/sweep_accuracy.py [--levels 1,2,...,200] [--no-peers]``
Installs GuideLLM and AIPerf into var/peer-tools/ on first use (benchmarks/peer_tools.py). Writes
benchmarks/results/sweep_accuracy.md (and prints it).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import peer_tools  # noqa: E402

from probe_client import EndpointConfig  # noqa: E402
from probe_client.sweep import SLO, LengthDistribution, SweepPlan, Workload, parse_result_file, run_sweep  # noqa: E402
from scoring.vocabulary import percentile  # noqa: E402
from tests.simulator import start_simulator  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "sweep_accuracy.md"
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 200)
INPUT_TOKENS = 256
OUTPUT_TOKENS = 16
ENGINE = {"slots": 128, "itl_ms_per_active": 0.25, "prefill_ms_per_token": 0.02}
SCHEDULE = {"ttft_ms": 15.0, "itl_ms": 30.0, "tokens": OUTPUT_TOKENS, "reasoning_tokens": 0, "precise": False}
OBJECTIVE = SLO(ttft_ms=60.0, tpot_ms=50.0, attainment=0.9)
TARGET_P99_MS = 1.0


def requests_for(level: int) -> int:
    return max(32, 2 * level)


def truth(records: list[dict]) -> dict:
    """The simulator's own figures for the requests of one level (see the module docstring)."""
    served = [r for r in records if r.get("response_id") and "first_token_ns" in r.get("timeline", {})]
    ttft, tpot, good, tokens = [], [], 0, 0
    for record in served:
        timeline = record["timeline"]
        first, last, count = timeline["first_token_ns"], timeline["last_token_ns"], timeline.get("token_chunks", 0)
        request_ttft = (first - record["recv_ns"]) / 1e6
        request_tpot = (last - first) / 1e6 / (count - 1) if count > 1 else 0.0
        ttft.append(request_ttft)
        tpot.append(request_tpot)
        tokens += count
        good += request_ttft <= OBJECTIVE.ttft_ms and request_tpot <= OBJECTIVE.tpot_ms
    start = min(r["recv_ns"] for r in served)
    end = max(r["timeline"].get("end_ns", r["timeline"]["last_token_ns"]) for r in served)
    duration = (end - start) / 1e9
    return {
        "requests": len(served),
        "ttft_p50": percentile(ttft, 50),
        "ttft_p99": percentile(ttft, 99),
        "tpot_p50": percentile(tpot, 50),
        "output_tps": tokens / duration,
        "goodput_rps": good / duration,
        "records": {r["response_id"]: r for r in served},
    }


def measure_lab(sim, level: int) -> tuple[dict, dict]:
    config = EndpointConfig(base_url=sim.base_url, model="sim-model")
    plan = SweepPlan(mode="concurrency", levels=(level,), requests_per_level=requests_for(level), slo=OBJECTIVE,
                     max_duration_s=600.0)
    workload = Workload(name="accuracy", input=LengthDistribution.fixed(INPUT_TOKENS),
                        output=LengthDistribution.fixed(OUTPUT_TOKENS))
    sim.reset()
    result = asyncio.run(run_sweep(config, plan=plan, workload=workload))
    measured = result.levels[0]
    ids = {s.request_id for s in measured.samples if s.ok}
    true = truth([r for r in sim.chat_requests if r.get("response_id") in ids])
    wire, lag = [], []
    for sample in measured.samples:
        record = true["records"].get(sample.request_id)
        if record is None or sample.ttft_ms is None or sample.sent_ns is None:
            continue
        wire.append(abs(sample.ttft_ms - (record["timeline"]["first_token_ns"] - sample.sent_ns) / 1e6))
        lag.append((record["recv_ns"] - sample.sent_ns) / 1e6)
    return {
        "ttft_p50": measured.ttft_ms["p50"], "ttft_p99": measured.ttft_ms["p99"], "output_tps": measured.output_tps,
        "goodput_rps": measured.goodput_rps, "ok": measured.ok, "requests": measured.requests,
        "wire_p50": percentile(wire, 50), "wire_p99": percentile(wire, 99),
        "lag_p50": percentile(lag, 50), "lag_p99": percentile(lag, 99),
    }, true


def measure_peer(sim, tool: str, level: int, work: Path, tokenizer: Path) -> tuple[dict, dict]:
    sim.reset()
    common = {"root_url": sim.base_url.removesuffix("/v1"), "model": "sim-model", "tokenizer": tokenizer,
              "levels": [level], "requests": requests_for(level), "input_tokens": INPUT_TOKENS,
              "output_tokens": OUTPUT_TOKENS}
    if tool == "guidellm":
        path = peer_tools.run_guidellm(output=work / f"guidellm-{level}.json", **common)
    else:
        path = peer_tools.run_aiperf(artifacts=work / f"aiperf-{level}", **common)
    parsed = parse_result_file(path.read_bytes(), source_tool=tool).levels[0]
    true = truth(sim.chat_requests)
    return {
        "ttft_p50": parsed["ttft_ms"].get("p50"), "ttft_p99": parsed["ttft_ms"].get("p99"),
        "output_tps": parsed["output_tps"], "ok": parsed["ok"], "requests": parsed["requests"],
    }, true


def error_row(measured: dict, true: dict) -> dict:
    def relative(name: str) -> float | None:
        if measured.get(name) is None or not true[name]:
            return None
        return abs(measured[name] - true[name]) / true[name] * 100

    return {
        "ttft_p50": abs(measured["ttft_p50"] - true["ttft_p50"]),
        "ttft_p99": abs(measured["ttft_p99"] - true["ttft_p99"]),
        "output_tps_pct": relative("output_tps"),
        "ok": f"{measured['ok']}/{measured['requests']}",
        "served": true["requests"],
        "goodput": measured.get("goodput_rps"),
        "true_goodput": true["goodput_rps"],
        **{name: measured[name] for name in ("wire_p50", "wire_p99", "lag_p50", "lag_p99") if name in measured},
    }


def machine() -> str:
    load = os.getloadavg()
    return (
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores, shared with other "
        f"work (load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})\n"
        f"- Python {platform.python_version()}; every tool and the simulator on this machine, over loopback TCP"
    )


def fmt(value, digits=2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def render(rows: list[dict], tools: list[str], versions: dict, notes: list[str], seconds: float, setting: str) -> str:
    lines = [
        "# Sweep accuracy: the lab's sweep, GuideLLM and AIPerf against the simulator's record",
        "",
        setting,
        f"- tools: Inference Atlas sweep client ({', '.join(f'{t} {versions[t]}' for t in tools if t != 'atlas')})"
        if len(tools) > 1 else "- tools: Inference Atlas sweep client only",
        f"- workload: {INPUT_TOKENS} input and {OUTPUT_TOKENS} output tokens per request, closed loop, "
        f"max(32, 2 × level) requests per level; simulator engine {ENGINE}, schedule "
        f"{ {k: v for k, v in SCHEDULE.items() if k != 'reasoning_tokens'} }",
        f"- SLO for goodput: TTFT ≤ {OBJECTIVE.ttft_ms:g} ms and TPOT ≤ {OBJECTIVE.tpot_ms:g} ms",
        f"- wall time of the whole run: {seconds:.0f} s; niceness of every process of the run: {os.nice(0)}",
        "",
        f"Target: the lab's TTFT p99 error ≤ {TARGET_P99_MS:g} ms at 200 streams and at least 10× smaller than "
        "either peer's.",
        "",
        "## The lab against the wire truth (per request)",
        "",
        "True TTFT = first token written by the simulator − request written by the lab's client (both "
        "CLOCK_MONOTONIC). Read lag = how long the simulator took to read a request after it was written (part "
        "of every client's TTFT, absent from the server's record below).",
        "",
        "| streams | requests ok | TTFT error p50 / p99 ms | simulator read lag p50 / p99 ms |",
        "|---:|---:|---:|---:|",
    ]
    for row in rows:
        ours = row["errors"]["atlas"]
        lines.append(f"| {row['level']} | {ours['ok']} | {fmt(ours['wire_p50'], 3)} / {fmt(ours['wire_p99'], 3)} | "
                     f"{fmt(ours['lag_p50'], 2)} / {fmt(ours['lag_p99'], 2)} |")
    lines += [
        "",
        "## Side by side against the server's record (the same yardstick for all three tools)",
        "",
        "Record TTFT = first token written − request read by the simulator. Errors are |tool − record|, "
        "percentile against percentile, in ms; output tok/s in % of the record; the lab's goodput beside the record's, in req/s.",
        "",
    ]
    header = "| streams | record TTFT p50 / p99 ms |"
    rule = "|---:|---:|"
    for tool in tools:
        header += f" {tool} TTFT err p50 / p99 ms | {tool} tok/s err % |"
        rule += "---:|---:|"
    header += " atlas goodput req/s (record) |"
    rule += "---:|"
    lines += [header, rule]
    for row in rows:
        line = f"| {row['level']} | {fmt(row['truth']['ttft_p50'], 1)} / {fmt(row['truth']['ttft_p99'], 1)} |"
        for tool in tools:
            error = row["errors"].get(tool)
            if error is None:
                line += " not run | — |"
                continue
            line += f" {fmt(error['ttft_p50'], 3)} / {fmt(error['ttft_p99'], 3)} | {fmt(error['output_tps_pct'])} |"
        ours = row["errors"]["atlas"]
        line += f" {fmt(ours['goodput'])} ({fmt(ours['true_goodput'])}) |"
        lines.append(line)
    top = max(rows, key=lambda row: row["level"]) if rows else None
    if top is not None:
        ours = top["errors"]["atlas"]
        verdict = [
            f"At {top['level']} streams the lab's TTFT p99 error is {ours['wire_p99']:.3f} ms against the wire truth "
            f"({'within' if ours['wire_p99'] <= TARGET_P99_MS else 'outside'} the {TARGET_P99_MS:g} ms target) and "
            f"{ours['ttft_p99']:.3f} ms against the server's record"
        ]
        for tool in tools[1:]:
            peer = top["errors"].get(tool)
            if peer:
                ratio = peer["ttft_p99"] / ours["ttft_p99"] if ours["ttft_p99"] else float("inf")
                verdict.append(f"{tool}'s is {peer['ttft_p99']:.3f} ms against the same record ({ratio:.1f}× the lab's)")
        lines += ["", "; ".join(verdict) + "."]
    tenfold = [
        str(row["level"]) for row in rows
        if len(row["errors"]) == len(tools) and all(
            row["errors"][tool]["ttft_p99"] >= 10 * row["errors"]["atlas"]["ttft_p99"] for tool in tools[1:]
        )
    ]
    within = [str(row["level"]) for row in rows if row["errors"]["atlas"]["wire_p99"] <= TARGET_P99_MS]
    lines += [
        "",
        f"- Levels where the lab's TTFT p99 error against the wire truth is within {TARGET_P99_MS:g} ms: "
        f"{', '.join(within) or 'none'}.",
    ]
    if len(tools) > 1:
        lines.append(
            "- Levels where the lab's TTFT p99 error against the server's record is at least 10× smaller than every "
            f"peer's: {', '.join(tenfold) or 'none'}."
        )
    lines += [
        "",
        "Reading the tables: a client stamps a token late when it is not scheduled for longer than one inter-token "
        "gap, whatever tool it is: the kernel then merges the two packets and reports the newer one's time "
        "(docs/benchmark-lab.md, benchmarks/results/probe_accuracy.md). The simulator is one Python process; when "
        "it is starved its read lag grows, and every client rightly counts that lag while the server's record "
        "leaves it out. Both effects grow with the number of streams and with the machine's load, stated above.",
    ]
    lines += ["", *notes] if notes else []
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default=",".join(str(level) for level in LEVELS))
    parser.add_argument("--no-peers", action="store_true", help="measure only the lab's sweep")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--nice", type=int, default=0, help="niceness change for every process of the run (root)")
    args = parser.parse_args()
    if args.nice:
        os.nice(args.nice)
    levels = [int(level) for level in args.levels.split(",")]
    tools = ["atlas"] + ([] if args.no_peers else ["guidellm", "aiperf"])
    notes: list[str] = []
    versions = {}
    for tool in tools[1:]:
        try:
            peer_tools.ensure_tool(tool)
            versions[tool] = peer_tools.tool_version(tool)
        except (subprocess.CalledProcessError, OSError) as error:
            notes.append(f"- {tool} could not be installed here ({error}); its columns are empty.")
            tools.remove(tool)
    setting = machine()
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as folder, start_simulator("openai", engine=ENGINE, schedule=SCHEDULE) as sim:
        work = Path(folder)
        tokenizer = peer_tools.write_word_tokenizer(work / "tokenizer") if len(tools) > 1 else None
        for level in levels:
            measured, true = measure_lab(sim, level)
            row = {"level": level, "truth": true, "errors": {"atlas": error_row(measured, true)}}
            for tool in tools[1:]:
                try:
                    peer, peer_truth = measure_peer(sim, tool, level, work, tokenizer)
                except subprocess.CalledProcessError as error:
                    notes.append(f"- {tool} failed at {level} streams: {(error.stderr or b'')[-300:]!r}")
                    continue
                row["errors"][tool] = error_row(peer, peer_truth)
            rows.append(row)
            print(f"level {level}: " + ", ".join(
                f"{tool} p99 err {error['ttft_p99']:.3f} ms" for tool, error in row["errors"].items()
            ), file=sys.stderr, flush=True)
    report = render(rows, tools, versions, notes, time.perf_counter() - started, setting)
    print(report)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(report)


if __name__ == "__main__":
    main()
