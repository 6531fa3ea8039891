"""The "Serving Benchmark Result" block that ``vllm bench serve`` (and vLLM's older ``benchmark_serving.py``) and
SGLang's ``bench_serving`` print at the end of a run, read into the lab's level shape exactly as printed.

Publications paste these blocks; reading them through this parser, instead of copying numbers by hand, keeps every
figure as the tool printed it. A block is::

    ============ Serving Benchmark Result ============
    Successful requests:                     1000
    Benchmark duration (s):                  67.40
    ...
    ---------------Time to First Token----------------
    Mean TTFT (ms):                          24830.45
    ...
    ==================================================

Text around the blocks (a shell prompt, log lines) is ignored, and each line may be indented as a page quotes it.
Inside a block every line must be one the tools print: a figure line before the first section, statistics
(``Mean``, ``Median``, ``P99``… of ``TTFT``, ``TPOT``, ``ITL``, ``E2E Latency``) under their own section. A block
that is cut short, reordered or holds anything else raises :class:`ConsoleBlockError` naming the line.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable


# Printed result blocks are recognised by a header within the first megabyte.
CONSOLE_SNIFF_BYTES = 1_000_000
HEADER = re.compile(r"^=+ Serving Benchmark Result =+$")
FOOTER = re.compile(r"^=+$")
SECTION = re.compile(r"^-{3,}\s*(?P<title>[^-].*?)\s*-{3,}$")
FIGURE = re.compile(r"^(?P<label>[A-Za-z][^:]*?):\s+(?P<value>\S.*?)$")
STATISTIC = re.compile(
    r"^(?P<stat>Mean|Median|Std|Min|Max|P\d+(?:\.\d+)?) (?P<metric>TTFT|TPOT|ITL|E2E Latency|E2EL) \(ms\)$"
)
SECTIONS = {
    "time to first token": "ttft",
    "time per output token (excl. 1st token)": "tpot",
    "inter-token latency": "itl",
    "end-to-end latency": "e2e",
}
METRICS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2E Latency": "e2e", "E2EL": "e2e"}
REQUIRED = ("successful requests", "benchmark duration (s)", "output token throughput (tok/s)")


class ConsoleBlockError(ValueError):
    """A block that cannot be read; the message starts with the line at fault."""


def _number(value: str) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0 and number != 0:
        raise ValueError(value)
    return abs(number)


def _count(value: str) -> int:
    number = _number(value)
    if number != int(number):
        raise ValueError(value)
    return int(number)


def _rate(value: str) -> float | None:
    return None if value == "inf" else _number(value)


def _concurrency(value: str) -> int | None:
    return None if value == "not set" else _count(value)


# What each figure line holds: (the key it is read into, how its value is read).
FIGURES: dict[str, tuple[str, Callable[[str], object]]] = {
    "backend": ("backend", str),
    "traffic request rate": ("traffic_rate", _rate),
    "max request concurrency": ("max_concurrency", _concurrency),
    "maximum request concurrency": ("max_concurrency", _concurrency),
    "successful requests": ("ok", _count),
    "failed requests": ("failed", _count),
    "benchmark duration (s)": ("duration_s", _number),
    "total input tokens": ("input_tokens", _count),
    "total input text tokens": ("input_text_tokens", _count),
    "total input vision tokens": ("input_vision_tokens", _count),
    "total generated tokens": ("output_tokens", _count),
    "total generated tokens (retokenized)": ("output_tokens_retokenized", _count),
    "request throughput (req/s)": ("request_rate", _number),
    "request goodput (req/s)": ("goodput_rps", _number),
    "input token throughput (tok/s)": ("input_tps", _number),
    "output token throughput (tok/s)": ("output_tps", _number),
    "peak output token throughput (tok/s)": ("peak_output_tps", _number),
    "peak concurrent requests": ("peak_concurrency", _number),
    "total token throughput (tok/s)": ("total_tps", _number),
    "total throughput (tok/s)": ("total_tps", _number),
    "concurrency": ("mean_concurrency", _number),
}


def _statistic_key(stat: str) -> str:
    return {"Mean": "mean", "Median": "p50", "Std": "std", "Min": "min", "Max": "max"}.get(stat, stat.lower())


def _read_block(lines: list[tuple[int, str]]) -> dict:
    """The figures of one block: `lines` are (line number, text) from the header to the footer, both excluded."""
    figures: dict = {"stats": {"ttft": {}, "tpot": {}, "itl": {}, "e2e": {}}}
    section = None
    for number, text in lines:
        where = f"line {number}"
        heading = SECTION.match(text)
        if heading:
            section = SECTIONS.get(heading.group("title").lower())
            if section is None:
                raise ConsoleBlockError(f"{where}: unknown section {heading.group('title')!r}")
            continue
        line = FIGURE.match(text)
        if line is None:
            raise ConsoleBlockError(f"{where}: not a line of the result block: {text[:80]!r}")
        label, value = line.group("label"), line.group("value")
        statistic = STATISTIC.match(label)
        if statistic:
            metric = METRICS[statistic.group("metric")]
            if section != metric:
                raise ConsoleBlockError(f"{where}: {label} is outside its own section (out of order?)")
            target, reader = figures["stats"][metric], _number
            key = _statistic_key(statistic.group("stat"))
        else:
            if label.lower() not in FIGURES:
                raise ConsoleBlockError(f"{where}: unknown line {label!r}")
            if section is not None:
                raise ConsoleBlockError(f"{where}: {label} comes after the latency sections (out of order?)")
            key, reader = FIGURES[label.lower()]
            target = figures
        if key in target:
            raise ConsoleBlockError(f"{where}: {label} is given twice")
        try:
            target[key] = reader(value)
        except ValueError:
            raise ConsoleBlockError(f"{where}: {label}: {value!r} is not a valid value") from None
    return figures


def read_blocks(lines: Iterable[str]) -> list[tuple[int, dict]]:
    """(line number of the header, figures) of every result block in the text's `lines` (read one at a time);
    figures are keyed as FIGURES names them, with "stats": {metric: {statistic: ms}}."""
    blocks = []
    current: list[tuple[int, str]] | None = None
    start = 0
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if HEADER.match(line):
            if current is not None:
                raise ConsoleBlockError(f"line {number}: a new block starts before the one of line {start} ends")
            current, start = [], number
        elif current is not None:
            if FOOTER.match(line):
                blocks.append((start, _read_block(current)))
                current = None
            elif line:
                current.append((number, line))
    if current is not None:
        last = current[-1][0] if current else start
        raise ConsoleBlockError(f"line {last}: the block of line {start} ends before its closing ===== line")
    if not blocks:
        raise ConsoleBlockError("line 1: no \"Serving Benchmark Result\" block")
    for start, figures in blocks:
        missing = [label for label in REQUIRED if FIGURES[label][0] not in figures]
        if missing:
            raise ConsoleBlockError(f"line {start}: the block has no {missing[0]!r} line")
    return blocks


def printed_by(figures: dict) -> str:
    """Which tool printed a block: SGLang's bench_serving names its backend and retokenizes; vLLM's do neither."""
    sglang = "backend" in figures or "output_tokens_retokenized" in figures
    return "sglang-bench-serving" if sglang else "vllm-bench-serve"


def looks_like_console(head: bytes) -> bool:
    """Whether a file whose first CONSOLE_SNIFF_BYTES are `head` holds printed result blocks."""
    return b"Serving Benchmark Result" in head[:CONSOLE_SNIFF_BYTES]
