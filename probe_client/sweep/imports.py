"""Result files of peer benchmark tools, read into the lab's own shapes so they can be stored and shown as runs.

Three formats are read, each as its tool writes it (the tool is named by the operator or recognised from the
file's keys):

- ``vllm-bench-serve``: ``vllm bench serve --save-result`` writes one JSON object per run (``--append-result``
  adds one object per line, so a concurrency sweep is a JSONL file): ``max_concurrency``, ``request_rate``,
  ``duration``, ``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``request_goodput``, ``output_throughput``, ``total_token_throughput``, and for TTFT,
  TPOT, ITL and E2EL ``mean_*_ms``, ``median_*_ms`` and ``p<N>_*_ms`` for each ``--metric-percentiles``.
- ``guidellm``: ``guidellm benchmark --output-path benchmarks.json``: ``{"benchmarks": [...]}``, one benchmark
  per strategy (synchronous, concurrent@N, constant/poisson@rate, throughput), each with ``metrics`` holding
  distribution summaries (``successful.median``, ``.mean``, ``.percentiles.p95``…) of
  ``time_to_first_token_ms``, ``time_per_output_token_ms``, ``inter_token_latency_ms``, ``request_latency``
  (seconds), ``requests_per_second`` and ``output_tokens_per_second``.
- ``aiperf``: ``aiperf profile`` writes ``profile_export_aiperf.json`` for one load level: metric records such
  as ``time_to_first_token``, ``inter_token_latency``, ``request_latency`` (ms, with ``avg``, ``p50``, ``p95``,
  ``p99``), ``request_throughput`` and ``output_token_throughput``, and ``input_config.phases`` holding the
  load (``concurrency`` or ``request_rate``). With a list of levels (``--concurrency 1,2,4``) it also writes
  ``sweep_aggregate/profile_export_aiperf_sweep.json``: ``per_combination_metrics``, one entry per level.

A file whose levels mix closed-loop concurrencies and open-loop rates keeps the mode most of its levels use
(a GuideLLM ``sweep`` profile starts with one synchronous benchmark); the card lists what was left out, and
GuideLLM's ``throughput`` benchmark (no load level) likewise.

What a file does not state stays None; nothing is derived that the tool did not measure, except the level
duration and request counts that follow from figures it gave. A figure the file gives that is not a number
(``"fast"``, ``NaN``, a negative count) is refused: left out, and listed in the card's ``refused_figures`` with
where it is in the file, its value and why; a file left with no figure at all raises. Every problem raises
:class:`ResultFileError`, whose message starts with where in the file it is (``benchmarks[2].metrics``).
"""

from __future__ import annotations

import io
import json
import math
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import BinaryIO

from scoring.vocabulary import LEVEL_METRICS

from ..jsonlimits import MAX_JSON_VALUES, JSONLimitError, TooManyValues, loads_counted
from .console import CONSOLE_SNIFF_BYTES, ConsoleBlockError, looks_like_console, printed_by, read_blocks

MAX_RESULT_BYTES = 64 * 1024 * 1024
# The JSON a file may hold in all, one document or JSONL lines; a larger file is read a line at a time.
MAX_JSON_DOCUMENT_BYTES = 16 * 1024 * 1024
# ``--append-result`` writes one line per run, and a sweep keeps at most 64 levels.
MAX_RESULT_ROWS = 1_000
# Pasted output of a sweep is a few hundred lines, progress bars included.
MAX_RESULT_LINES = 100_000
MAX_CONSOLE_LINE_BYTES = 1024 * 1024
# The peer tools whose result files are read, by the name a run records, with the name people know them by.
IMPORT_FORMATS = {"vllm-bench-serve": "vLLM bench serve", "sglang-bench-serving": "SGLang bench_serving",
                  "guidellm": "GuideLLM", "aiperf": "NVIDIA AIPerf"}


class ResultFileError(ValueError):
    """A result file that cannot be imported; the message names the place in the file."""


@dataclass
class ParsedResults:
    """One imported sweep: ``levels`` shaped like ``LevelResult.to_dict()``, the file's ``card`` facts, the
    workload the file describes (a ``Workload.to_dict()``), and the plan as the tool ran it (its levels in the
    file's order, set by :func:`parse_result_file`)."""

    source_tool: str
    levels: list[dict]
    card: dict
    workload: dict
    plan: dict = field(default_factory=dict)
    started_at: float | None = None  # epoch seconds
    finished_at: float | None = None


# The values of the file being read that a parser refused, by identity (each parsed JSON value is its own object):
# where they sit in the file is found afterwards, so that the parsers need not carry their paths.
_refusals: ContextVar[dict[int, tuple[object, str]] | None] = ContextVar("refusals", default=None)


def _refuse(value, reason: str) -> None:
    refusals = _refusals.get()
    if refusals is not None and value is not None:
        refusals.setdefault(id(value), (value, reason))


def _finite(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _refuse(value, "not a finite number")
        return None
    return float(value)


def _count(value) -> int | None:
    number = _finite(value)
    if number is not None and (number < 0 or number != int(number)):
        _refuse(value, "not a whole number of at least 0")
        return None
    return int(number) if number is not None else None


def _refused_in(documents: list, refusals: dict[int, tuple[object, str]]) -> list[dict]:
    """Where in the file each refused value sits, its value as written, and why."""
    found: list[dict] = []

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")
        elif id(node) in refusals and refusals[id(node)][0] is node:
            value = node if isinstance(node, (str, bool)) or node is None else repr(node)
            found.append({"field": path, "value": value, "reason": refusals[id(node)][1]})

    for index, document in enumerate(documents):
        walk(document, f"[{index}]" if len(documents) > 1 else "")
    return found


def _text(raw: bytes, offset: int = 0) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ResultFileError(f"file: not UTF-8 text (byte {offset + error.start})") from None


def _documents(source: BinaryIO, size: int) -> list:
    """The file's JSON values: one document, or one per line (JSONL, as ``--append-result`` writes). Memory stays
    bounded whatever the file holds: at most MAX_JSON_DOCUMENT_BYTES of JSON and MAX_JSON_VALUES values in all,
    and a larger file is read a line at a time (at most MAX_RESULT_ROWS of them), so it is refused early."""
    if size <= MAX_JSON_DOCUMENT_BYTES:
        text = _text(source.read())
        if not text.strip():
            raise ResultFileError("file: empty")
        try:
            return [loads_counted(text)[0]]
        except JSONLimitError as error:
            raise ResultFileError(f"file: {error}") from None
        except json.JSONDecodeError:
            pass
        del text
        source.seek(0)
    documents: list = []
    offset = 0
    values_left = MAX_JSON_VALUES
    json_bytes = 0
    for number, raw in enumerate(iter(lambda: source.readline(MAX_JSON_DOCUMENT_BYTES + 1), b""), start=1):
        if len(raw) > MAX_JSON_DOCUMENT_BYTES:
            raise ResultFileError(
                f"file line {number}: a JSON document larger than {MAX_JSON_DOCUMENT_BYTES // (1024 * 1024)} MiB "
                "is refused"
            )
        line = _text(raw, offset)
        offset += len(raw)
        if not line.strip():
            continue
        json_bytes += len(raw)
        if json_bytes > MAX_JSON_DOCUMENT_BYTES:
            mib = MAX_JSON_DOCUMENT_BYTES // (1024 * 1024)
            raise ResultFileError(f"file line {number}: more than {mib} MiB of JSON in all is refused")
        if len(documents) == MAX_RESULT_ROWS:
            raise ResultFileError(f"file: more than {MAX_RESULT_ROWS:,} JSON lines; import at most {MAX_RESULT_ROWS:,} "
                                  "runs at a time")
        try:
            document, values = loads_counted(line, max_values=values_left)
        except TooManyValues:
            message = f"file line {number}: the file holds more than {MAX_JSON_VALUES:,} JSON values"
            raise ResultFileError(message) from None
        except JSONLimitError as error:
            raise ResultFileError(f"file line {number}: {error}") from None
        except json.JSONDecodeError as error:
            raise ResultFileError(f"file line {number}: not valid JSON ({error.msg} at column {error.colno})") from None
        documents.append(document)
        values_left -= values
    if not documents:
        raise ResultFileError("file: empty")
    return documents


def _console_lines(source: BinaryIO):
    """The printed text a line at a time, at most MAX_RESULT_LINES lines of at most MAX_CONSOLE_LINE_BYTES."""
    offset = 0
    for number, raw in enumerate(iter(lambda: source.readline(MAX_CONSOLE_LINE_BYTES + 1), b""), start=1):
        if number > MAX_RESULT_LINES:
            raise ResultFileError(f"file: more than {MAX_RESULT_LINES:,} lines")
        if len(raw) > MAX_CONSOLE_LINE_BYTES:
            raise ResultFileError(f"file line {number}: longer than {MAX_CONSOLE_LINE_BYTES // (1024 * 1024)} MiB")
        yield _text(raw, offset)
        offset += len(raw)


def detect_format(documents: list) -> str | None:
    first = documents[0] if documents else None
    if not isinstance(first, dict):
        return None
    if isinstance(first.get("benchmarks"), list):
        return "guidellm"
    if first.get("aggregation_type") == "sweep" and isinstance(first.get("per_combination_metrics"), list):
        return "aiperf"
    if "input_config" in first and any(isinstance(first.get(name), dict) for name in ("time_to_first_token", "request_latency")):
        return "aiperf"
    if "completed" in first and any(key.endswith("_ttft_ms") for key in first):
        return "vllm-bench-serve"
    return None


def parse_result_file(data: bytes | BinaryIO, *, source_tool: str | None = None) -> ParsedResults:
    """Read one peer tool's result file, or the result blocks a run printed (``source_tool`` None: recognised
    from the file's keys or the block's lines). ``data``: the file's bytes, or the file itself (binary, seekable),
    which is then read a line at a time where the format allows."""
    if source_tool is not None and source_tool not in IMPORT_FORMATS:
        raise ResultFileError(f"source_tool: one of {', '.join(IMPORT_FORMATS)}, got {source_tool!r}")
    source = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    size = source.seek(0, io.SEEK_END)
    if size > MAX_RESULT_BYTES:
        raise ResultFileError(f"file: larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB")
    source.seek(0)
    console = looks_like_console(source.read(CONSOLE_SNIFF_BYTES))
    source.seek(0)
    if console:
        return _parse_console(source, source_tool)
    if source_tool == "sglang-bench-serving":
        raise ResultFileError("file: no \"Serving Benchmark Result\" block of SGLang's bench_serving")
    documents = _documents(source, size)
    detected = detect_format(documents)
    if source_tool is None:
        if detected is None:
            raise ResultFileError(
                "file: not a result file of vLLM bench serve (--save-result JSON), GuideLLM (benchmarks.json) "
                "or AIPerf (profile_export_aiperf.json)"
            )
        source_tool = detected
    elif detected != source_tool:
        found = f"it looks like a {detected} file" if detected else "its keys match none of the known tools"
        raise ResultFileError(f"file: not a {source_tool} result file ({found})")
    parser = {"vllm-bench-serve": _parse_vllm, "guidellm": _parse_guidellm, "aiperf": _parse_aiperf}[source_tool]
    refusals: dict[int, tuple[object, str]] = {}
    token = _refusals.set(refusals)
    try:
        parsed = parser(documents)
    finally:
        _refusals.reset(token)
    refused = _refused_in(documents, refusals)
    if not any(_has_figures(level) for level in parsed.levels):
        listed = "; ".join(f"{item['field']} = {item['value']!r} ({item['reason']})" for item in refused)
        raise ResultFileError(f"file: no usable figure{': refused ' + listed if listed else ''}")
    if refused:
        parsed.card["refused_figures"] = refused
    modes = [level["mode"] for level in parsed.levels]
    if len(set(modes)) > 1:
        # A GuideLLM "sweep" starts with a synchronous benchmark before its request rates: one chart, one mode.
        kept = max(set(modes), key=modes.count)
        left = [level for level in parsed.levels if level["mode"] != kept]
        parsed.card.setdefault("skipped_benchmarks", []).extend(f"{level['mode']} {level['level']:g}" for level in left)
        parsed.levels = [level for level in parsed.levels if level["mode"] == kept]
    levels = [level["level"] for level in parsed.levels]
    if len(set(levels)) != len(levels):
        raise ResultFileError("file: the same load level appears twice; import one run per level")
    parsed.plan = {"levels": levels}
    parsed.levels.sort(key=lambda level: level["level"])
    return parsed


def _has_figures(level: dict) -> bool:
    """Whether a level holds any measured figure: a latency percentile or a rate."""
    return any(level.get(metric.key) for metric in LEVEL_METRICS) or any(
        level.get(name) is not None for name in ("output_tps", "total_tps", "request_rate", "goodput_rps"))


def _require(levels: list[dict]) -> None:
    if not levels:
        raise ResultFileError("file: no benchmark with a completed request")


def _workload(name: str, inputs: list[int], outputs: list[int], basis: str, *, streaming: bool = True) -> dict:
    def distribution(values: list[int], which: str) -> dict:
        values = [v for v in values if v and v > 0]
        if not values:
            raise ResultFileError(f"file: gives no {which} token counts")
        if len(set(values)) == 1:
            return {"kind": "fixed", "value": values[0]}
        return {"kind": "sample", "values": values[:100_000]}

    return {
        "name": name[:80] or "imported",
        "input": distribution(inputs, "input"),
        "output": distribution(outputs, "output"),
        "shared_prefix_ratio": 0.0,
        "structured_output": False,
        "streaming": streaming,
        "seed": 0,
        "basis": basis[:300],
    }


def _level(mode: str, level: float, **figures) -> dict:
    document = {
        "mode": mode,
        "level": level,
        "requests": 0,
        "ok": 0,
        "errors": {},
        "duration_s": None,
        "ttft_ms": {},
        "tpot_ms": {},
        "itl_ms": {},
        "e2e_ms": {},
        "output_tps": None,
        "total_tps": None,
        "request_rate": None,
        "goodput_rps": None,
        "slo_attainment": None,
        "meets_slo": None,
        "cost_per_1m_output_usd": None,
        "output_tokens_source": "",
        "truncated": False,
        "schedule_lag_ms": None,
    }
    document.update(figures)
    return document


def _clean_percentiles(figures: dict) -> dict:
    return {key: value for key, value in figures.items() if value is not None}


# --- vLLM bench serve ---------------------------------------------------------------------------------------


def _vllm_percentiles(document: dict, metric: str) -> dict:
    figures = {"p50": _finite(document.get(f"median_{metric}_ms")), "mean": _finite(document.get(f"mean_{metric}_ms"))}
    for key, value in document.items():
        prefix, _, rest = key.partition("_")
        if prefix.startswith("p") and rest == f"{metric}_ms" and prefix[1:].replace(".", "", 1).isdigit():
            figures[prefix] = _finite(value)
    return _clean_percentiles(figures)


def _parse_vllm(documents: list) -> ParsedResults:
    levels: list[dict] = []
    inputs: list[int] = []
    outputs: list[int] = []
    card: dict = {}
    for position, document in enumerate(documents):
        where = f"run {position + 1}" if len(documents) > 1 else "file"
        if not isinstance(document, dict):
            raise ResultFileError(f"{where}: must be a JSON object")
        completed, failed = _count(document.get("completed")), _count(document.get("failed")) or 0
        if completed is None:
            raise ResultFileError(f"{where}.completed: missing or not a count of requests")
        if not completed:
            continue
        concurrency, rate = document.get("max_concurrency"), document.get("request_rate")
        if concurrency is not None and _count(concurrency):
            mode, level = "concurrency", float(concurrency)
        elif rate not in ("inf", None) and _finite(rate) and rate > 0:
            mode, level = "rate", float(rate)
        elif rate in ("inf", None) and concurrency is None:
            # Every prompt sent at once, unbounded: the level is the number of requests in flight.
            mode, level = "concurrency", float(completed + failed)
        else:
            raise ResultFileError(f"{where}.max_concurrency: neither a concurrency nor a request rate is stated")
        duration = _finite(document.get("duration"))
        if duration is None or duration <= 0:
            raise ResultFileError(f"{where}.duration: missing or not a positive number of seconds")
        levels.append(
            _level(
                mode, level,
                requests=completed + failed,
                ok=completed,
                errors={"failed": failed} if failed else {},
                duration_s=duration,
                ttft_ms=_vllm_percentiles(document, "ttft"),
                tpot_ms=_vllm_percentiles(document, "tpot"),
                itl_ms=_vllm_percentiles(document, "itl"),
                e2e_ms=_vllm_percentiles(document, "e2el"),
                output_tps=_finite(document.get("output_throughput")),
                total_tps=_finite(document.get("total_token_throughput")),
                request_rate=_finite(document.get("request_throughput")),
                goodput_rps=_finite(document.get("request_goodput")),
            )
        )
        if isinstance(document.get("input_lens"), list):
            inputs.extend(v for v in map(_count, document["input_lens"]) if v)
            outputs.extend(v for v in map(_count, document.get("output_lens") or []) if v)
        else:
            inputs.append(round((_count(document.get("total_input_tokens")) or 0) / completed))
            outputs.append(round((_count(document.get("total_output_tokens")) or 0) / completed))
        for key in ("model_id", "tokenizer_id", "backend", "label", "date"):
            if isinstance(document.get(key), str) and key not in card:
                card[key] = document[key][:300]
    _require(levels)
    basis = "Lengths as the vLLM bench serve file states them (per request with --save-detailed, else the mean)."
    return ParsedResults(
        source_tool="vllm-bench-serve",
        levels=levels,
        card=card,
        workload=_workload(
            f"vLLM bench serve {card.get('label') or card.get('backend') or ''}".strip(), inputs, outputs, basis
        ),
    )


# --- GuideLLM -----------------------------------------------------------------------------------------------


def _summary(metrics: dict, name: str, *, scale: float = 1.0) -> dict:
    """A GuideLLM distribution summary of successful requests → our percentile dict (``scale`` to ms)."""
    figures = ((metrics.get(name) or {}).get("successful")) or {}
    if not isinstance(figures, dict):
        return {}
    percentiles = figures.get("percentiles") if isinstance(figures.get("percentiles"), dict) else {}
    values = {"p50": percentiles.get("p50", figures.get("median")), "p95": percentiles.get("p95"),
              "p99": percentiles.get("p99"), "mean": figures.get("mean")}
    return _clean_percentiles({key: (_finite(v) * scale if _finite(v) is not None else None) for key, v in values.items()})


def _rate(metrics: dict, name: str) -> float | None:
    figures = ((metrics.get(name) or {}).get("successful")) or {}
    return _finite(figures.get("mean")) if isinstance(figures, dict) else None


def _guidellm_level(strategy: dict, where: str) -> tuple[str, float] | None:
    kind = strategy.get("type_")
    if kind == "synchronous":
        return "concurrency", 1.0
    if kind == "concurrent":
        streams = _count(strategy.get("streams"))
        if not streams:
            raise ResultFileError(f"{where}.config.strategy.streams: missing for a concurrent benchmark")
        return "concurrency", float(streams)
    if kind in ("constant", "poisson", "async"):
        rate = _finite(strategy.get("rate"))
        if rate is None or rate <= 0:
            raise ResultFileError(f"{where}.config.strategy.rate: missing for a {kind} benchmark")
        return "rate", rate
    return None  # throughput: as many requests at once as the tool could send, no load level to plot


def _parse_guidellm(documents: list) -> ParsedResults:
    if len(documents) != 1:
        raise ResultFileError("file: a GuideLLM report is one JSON document")
    report = documents[0]
    card: dict = {}
    version = (report.get("metadata") or {}).get("guidellm_version")
    if isinstance(version, str):
        card["tool_version"] = version[:40]
    spec_backend = ((report.get("config") or {}).get("spec") or {}).get("backend") or {}
    if isinstance(spec_backend.get("model"), str):
        card["model_id"] = spec_backend["model"][:300]
    levels: list[dict] = []
    skipped: list[str] = []
    inputs: list[int] = []
    outputs: list[int] = []
    starts, ends = [], []
    for position, benchmark in enumerate(report["benchmarks"]):
        where = f"benchmarks[{position}]"
        if not isinstance(benchmark, dict) or not isinstance(benchmark.get("metrics"), dict):
            raise ResultFileError(f"{where}.metrics: missing")
        strategy = (benchmark.get("config") or {}).get("strategy") or {}
        if not isinstance(strategy, dict):
            raise ResultFileError(f"{where}.config.strategy: missing")
        placed = _guidellm_level(strategy, where)
        if placed is None:
            skipped.append(str(strategy.get("type_") or "unknown strategy"))
            continue
        metrics = benchmark["metrics"]
        totals = metrics.get("request_totals") or {}
        ok, total = _count(totals.get("successful")), _count(totals.get("total"))
        if ok is None or total is None or ok > total:
            raise ResultFileError(f"{where}.metrics.request_totals: successful and total request counts missing")
        if not ok:
            skipped.append(f"{strategy.get('type_')} (no successful request)")
            continue
        errors = {name: _count(totals.get(name)) for name in ("errored", "incomplete") if _count(totals.get(name))}
        duration = _finite(benchmark.get("duration"))
        levels.append(
            _level(
                *placed,
                requests=total, ok=ok, errors=errors, duration_s=duration,
                ttft_ms=_summary(metrics, "time_to_first_token_ms"),
                tpot_ms=_summary(metrics, "time_per_output_token_ms"),
                itl_ms=_summary(metrics, "inter_token_latency_ms"),
                e2e_ms=_summary(metrics, "request_latency", scale=1000.0),
                output_tps=_rate(metrics, "output_tokens_per_second"),
                total_tps=_rate(metrics, "tokens_per_second"),
                request_rate=_rate(metrics, "requests_per_second"),
            )
        )
        for request in ((benchmark.get("requests") or {}).get("successful") or [])[:10_000]:
            if isinstance(request, dict):
                inputs.append(_count(request.get("prompt_tokens")) or 0)
                outputs.append(_count(request.get("output_tokens")) or 0)
        if not inputs:
            inputs.append(round(_rate(metrics, "prompt_token_count") or 0))
            outputs.append(round(_rate(metrics, "output_token_count") or 0))
        starts.append(_finite(benchmark.get("start_time")))
        ends.append(_finite(benchmark.get("end_time")))
    if skipped:
        card["skipped_benchmarks"] = skipped
    _require(levels)
    basis = "Lengths as GuideLLM reports them for each successful request."
    return ParsedResults(
        source_tool="guidellm",
        levels=levels,
        card=card,
        workload=_workload("GuideLLM benchmark", inputs, outputs, basis),
        started_at=min((s for s in starts if s), default=None),
        finished_at=max((e for e in ends if e), default=None),
    )


# --- AIPerf -------------------------------------------------------------------------------------------------


def _aiperf_figures(metrics: dict, name: str) -> dict:
    figures = metrics.get(name)
    if not isinstance(figures, dict):
        return {}
    values = {"p50": figures.get("p50"), "p95": figures.get("p95"), "p99": figures.get("p99"),
              "mean": figures.get("avg", figures.get("mean"))}
    return _clean_percentiles({key: _finite(value) for key, value in values.items()})


def _aiperf_value(metrics: dict, name: str) -> float | None:
    figures = metrics.get(name)
    return _finite(figures.get("avg", figures.get("mean"))) if isinstance(figures, dict) else None


def _aiperf_level(metrics: dict, mode: str, level: float, errors: dict) -> dict:
    ok = _count(_aiperf_value(metrics, "request_count"))
    if not ok:
        raise ResultFileError("request_count: missing or zero")
    failed = sum(errors.values())
    return _level(
        mode, level,
        requests=ok + failed, ok=ok, errors=errors,
        duration_s=_aiperf_value(metrics, "benchmark_duration"),
        ttft_ms=_aiperf_figures(metrics, "time_to_first_token"),
        # AIPerf's inter_token_latency is per request (latency − TTFT) ÷ (tokens − 1): the TPOT of vLLM's
        # definition; its inter_chunk_latency pools every gap, as the ITL here does.
        tpot_ms=_aiperf_figures(metrics, "inter_token_latency"),
        itl_ms=_aiperf_figures(metrics, "inter_chunk_latency"),
        e2e_ms=_aiperf_figures(metrics, "request_latency"),
        output_tps=_aiperf_value(metrics, "output_token_throughput"),
        total_tps=_aiperf_value(metrics, "total_token_throughput"),
        request_rate=_aiperf_value(metrics, "request_throughput"),
    )


def _aiperf_errors(document: dict) -> dict:
    errors: dict[str, int] = {}
    for entry in document.get("error_summary") or []:
        if isinstance(entry, dict) and _count(entry.get("count")):
            details = entry.get("error_details") or {}
            name = str((details.get("type") if isinstance(details, dict) else None) or "error")[:60]
            errors[name] = errors.get(name, 0) + _count(entry["count"])
    return errors


def _aiperf_load(parameters: dict, where: str) -> tuple[str, float]:
    if _count(parameters.get("concurrency")):
        return "concurrency", float(parameters["concurrency"])
    rate = _finite(parameters.get("request_rate"))
    if rate and rate > 0:
        return "rate", rate
    raise ResultFileError(f"{where}: neither a concurrency nor a request rate is stated")


def _parse_aiperf(documents: list) -> ParsedResults:
    if len(documents) != 1:
        raise ResultFileError("file: an AIPerf export is one JSON document")
    document = documents[0]
    card: dict = {}
    if isinstance(document.get("aiperf_version"), str):
        card["tool_version"] = document["aiperf_version"][:40]
    if "per_combination_metrics" in document:
        combinations = document["per_combination_metrics"]
        if not isinstance(combinations, list):
            raise ResultFileError("per_combination_metrics: must be a list")
        levels, inputs, outputs = [], [], []
        for position, combination in enumerate(combinations):
            where = f"per_combination_metrics[{position}]"
            if not isinstance(combination, dict) or not isinstance(combination.get("metrics"), dict):
                raise ResultFileError(f"{where}.metrics: missing")
            mode, level = _aiperf_load(combination.get("parameters") or {}, f"{where}.parameters")
            try:
                levels.append(_aiperf_level(combination["metrics"], mode, level, {}))
            except ResultFileError as error:
                raise ResultFileError(f"{where}.metrics.{error}") from None
            inputs.append(round(_aiperf_value(combination["metrics"], "input_sequence_length") or 0))
            outputs.append(round(_aiperf_value(combination["metrics"], "output_sequence_length") or 0))
        basis = "Mean lengths per level as the AIPerf sweep aggregate reports them."
        return ParsedResults("aiperf", levels, card, _workload("AIPerf sweep", inputs, outputs, basis))
    config = document.get("input_config") or {}
    phases = [phase for phase in config.get("phases") or [] if isinstance(phase, dict)]
    profiling = next((phase for phase in phases if phase.get("kind") == "profiling"), None)
    if profiling is None:
        raise ResultFileError("input_config.phases: no profiling phase")
    mode, level = _aiperf_load(profiling, "input_config.phases.profiling")
    try:
        levels = [_aiperf_level(document, mode, level, _aiperf_errors(document))]
    except ResultFileError as error:
        raise ResultFileError(f"file.{error}") from None
    models = ((config.get("models") or {}).get("items")) or []
    if models and isinstance(models[0], dict) and isinstance(models[0].get("name"), str):
        card["model_id"] = models[0]["name"][:300]
    inputs = [round(_aiperf_value(document, "input_sequence_length") or 0)]
    outputs = [round(_aiperf_value(document, "output_sequence_length") or 0)]
    basis = "Mean lengths as the AIPerf export reports them."
    return ParsedResults("aiperf", levels, card, _workload("AIPerf profile", inputs, outputs, basis))


# --- printed result blocks (vLLM bench serve, benchmark_serving.py, SGLang bench_serving) ---------------------


def _console_level(figures: dict) -> dict:
    ok, failed = figures["ok"], figures.get("failed", 0)
    if figures.get("max_concurrency"):
        mode, level = "concurrency", float(figures["max_concurrency"])
    elif figures.get("traffic_rate"):
        mode, level = "rate", figures["traffic_rate"]
    else:
        # Every prompt sent at once, unbounded: the level is the number of requests, as for a result file.
        mode, level = "concurrency", float(ok + failed)
    stats = figures["stats"]
    return _level(
        mode, level, requests=ok + failed, ok=ok, errors={"failed": failed} if failed else {},
        duration_s=figures["duration_s"], ttft_ms=stats["ttft"], tpot_ms=stats["tpot"], itl_ms=stats["itl"],
        e2e_ms=stats["e2e"], output_tps=figures["output_tps"], total_tps=figures.get("total_tps"),
        request_rate=figures.get("request_rate"), goodput_rps=figures.get("goodput_rps"),
    )


def _parse_console(source: BinaryIO, source_tool: str | None) -> ParsedResults:
    """Every block of the text as one run, a level per block (a sweep pasted block after block)."""
    try:
        blocks = read_blocks(_console_lines(source))
    except ConsoleBlockError as error:
        raise ResultFileError(str(error)) from None
    printed = {printed_by(figures) for _, figures in blocks}
    if len(printed) > 1:
        raise ResultFileError(f"line {blocks[-1][0]}: blocks of vLLM's and SGLang's tools are mixed")
    tool = printed.pop()
    if source_tool is not None and source_tool != tool:
        raise ResultFileError(f"line {blocks[0][0]}: a block of {tool}, not of {source_tool}")
    levels = []
    for start, figures in blocks:
        level = _console_level(figures)
        if any((other["mode"], other["level"]) == (level["mode"], level["level"]) for other in levels):
            raise ResultFileError(f"line {start}: a second block at the same load ({level['mode']} {level['level']:g})")
        levels.append(level)
    counted = [figures for _, figures in blocks if figures["ok"]]
    inputs = [round(figures.get("input_tokens", 0) / figures["ok"]) for figures in counted]
    outputs = [round(figures.get("output_tokens", 0) / figures["ok"]) for figures in counted]
    card = {"backend": blocks[0][1]["backend"]} if "backend" in blocks[0][1] else {}
    basis = "Mean lengths: the block's total input and generated tokens over its successful requests."
    levels.sort(key=lambda level: level["level"])
    return ParsedResults(
        source_tool=tool, levels=levels, card=card, workload=_workload(f"{tool} result block", inputs, outputs, basis),
        plan={"levels": [level["level"] for level in levels]},
    )
