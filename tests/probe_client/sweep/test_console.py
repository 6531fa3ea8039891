"""The result blocks `vllm bench serve` (and benchmark_serving.py) and SGLang's `bench_serving` print, copied from
public pages into tests/probe_client/fixtures/console_blocks/ (each file's first line gives its URL), read to the
exact figures printed; a truncated, reordered or garbled block is refused with the line at fault."""
from pathlib import Path

import pytest

from probe_client.sweep import ResultFileError, parse_result_file
from probe_client.sweep.imports import MAX_CONSOLE_LINE_BYTES, MAX_RESULT_LINES

BLOCKS = Path(__file__).resolve().parents[1] / "fixtures" / "console_blocks"


def _read(name: str):
    return parse_result_file((BLOCKS / name).read_bytes())


def test_vllm_bench_serve_all_prompts_at_once():
    parsed = _read("vllm_bench_serve__gpustack_gpt-oss-120b_h100_vllm-0.10.2_sharegpt.txt")
    assert parsed.source_tool == "vllm-bench-serve"
    (level,) = parsed.levels
    assert (level["mode"], level["level"], level["requests"], level["ok"]) == ("concurrency", 1000.0, 1000, 1000)
    assert level["duration_s"] == 67.40 and level["request_rate"] == 14.84
    assert level["output_tps"] == 2901.05 and level["total_tps"] == 6095.37
    assert level["ttft_ms"] == {"mean": 24830.45, "p50": 25973.43, "p99": 54033.43}
    assert level["tpot_ms"] == {"mean": 54.10, "p50": 47.57, "p99": 193.25}
    assert level["itl_ms"] == {"mean": 46.65, "p50": 37.98, "p99": 121.49}
    assert level["e2e_ms"] == {}
    assert parsed.workload["input"] == {"kind": "fixed", "value": round(215312 / 1000)}


def test_vllm_bench_serve_with_a_concurrency_limit_and_peak_lines():
    (level,) = _read("vllm_bench_serve__gpustack_gpt-oss-120b_h100_vllm-0.10.2_sharegpt_maxconc4.txt").levels
    assert (level["mode"], level["level"], level["ok"]) == ("concurrency", 4.0, 100)
    assert level["ttft_ms"] == {"mean": 49.00, "p50": 47.49, "p99": 107.46}
    (peak,) = _read("vllm_bench_serve__gpustack_gpt-oss-120b_a100_vllm-0.11.0_sharegpt_peak_lines.txt").levels
    assert peak["output_tps"] == 2276.40 and peak["total_tps"] == 4768.75


def test_older_benchmark_serving_py_block_with_trailing_spaces():
    (level,) = _read("benchmark_serving_py__dstack_tgi_llama-3.1-405b_mi300x8_sonnet80_n2048_trailing_spaces.txt").levels
    assert level["ok"] == 2048 and level["output_tps"] == 852.79 and level["ttft_ms"]["p99"] == 110957.99


def test_sglang_bench_serving_blocks():
    parsed = _read("sglang_bench_serving__sgl-cookbook_gpt-oss-120b_b200x8_sglang-0.5.6_sharegpt_conc100.txt")
    assert parsed.source_tool == "sglang-bench-serving" and parsed.card == {"backend": "sglang"}
    (level,) = parsed.levels
    assert (level["mode"], level["level"], level["ok"]) == ("concurrency", 100.0, 1000)
    assert level["output_tps"] == 7773.26 and level["total_tps"] == 19776.83 and level["request_rate"] == 40.39
    assert level["e2e_ms"] == {"mean": 2208.97, "p50": 1591.11}
    assert level["itl_ms"] == {"mean": 11.00, "p50": 5.75, "p95": 25.35, "p99": 43.18, "max": 621.42}
    older = _read("sglang_bench_serving__sglang-dlora_old_format_trailing_spaces_rate2.txt").levels[0]
    assert (older["mode"], older["level"]) == ("rate", 2.0)
    assert older["total_tps"] == 2137.04 and older["tpot_ms"]["p50"] == 0.0  # printed as -0.00


def test_a_sweep_pasted_block_after_block_is_one_run_with_a_level_each():
    one = (BLOCKS / "sglang_bench_serving__sgl-cookbook_gpt-oss-120b_b200x8_sglang-0.5.6_sharegpt_conc100.txt").read_text()
    two = (BLOCKS / "sglang_bench_serving__sgl-cookbook_gpt-oss-120b_b200x8_sglang-0.5.6_sharegpt_conc1.txt").read_text()
    parsed = parse_result_file(f"$ python -m sglang.bench_serving ...\n{one}\nlog line\n{two}".encode())
    assert [level["level"] for level in parsed.levels] == [1.0, 100.0]


GOOD = (BLOCKS / "vllm_bench_serve__gpustack_gpt-oss-120b_h100_vllm-0.10.2_sharegpt.txt").read_text()


def _lines() -> list[str]:
    return GOOD.splitlines()


def _line_of(text: str) -> int:
    return next(number for number, line in enumerate(_lines(), start=1) if line.startswith(text))


@pytest.mark.parametrize(("broken", "message"), [
    # Cut after the TTFT section: no closing line.
    (lambda lines: lines[:lines.index("P99 TTFT (ms):                           54033.43") + 1],
     "ends before its closing ===== line"),
    # A statistic moved under another metric's section.
    (lambda lines: [*lines[:_line_of("Mean TPOT") - 1], "Mean TTFT (ms):                          1.00",
                    *lines[_line_of("Mean TPOT") - 1:]],
     "Mean TTFT (ms) is outside its own section"),
    (lambda lines: [*lines[:_line_of("Total input") - 1], "Successful requests:                     999",
                    *lines[_line_of("Total input") - 1:]],
     "Successful requests is given twice"),
    (lambda lines: [*lines[:_line_of("Total input") - 1], "Total Token throughput (tok/s):   lots",
                    *lines[_line_of("Total input") - 1:]],
     "'lots' is not a valid value"),
    (lambda lines: [*lines[:_line_of("Total input") - 1], "%%% corrupted %%%", *lines[_line_of("Total input") - 1:]],
     "not a line of the result block"),
    (lambda lines: [line for line in lines if not line.startswith("Benchmark duration")],
     "has no 'benchmark duration (s)' line"),
])
def test_a_broken_block_is_refused_naming_the_line(broken, message):
    text = "\n".join(broken(_lines()))
    with pytest.raises(ResultFileError) as raised:
        parse_result_file(text.encode())
    assert message in str(raised.value) and str(raised.value).startswith("line ")


def test_a_figure_after_the_sections_is_out_of_order():
    lines = _lines()
    moved = [line for line in lines if not line.startswith("Request throughput")]
    moved.insert(len(moved) - 1, "Request throughput (req/s):              14.84")
    with pytest.raises(ResultFileError, match=r"^line \d+: Request throughput \(req/s\) comes after the latency"):
        parse_result_file("\n".join(moved).encode())


def test_printed_text_past_the_line_limits_is_refused_naming_them():
    header = b"============ Serving Benchmark Result ============\n"
    with pytest.raises(ResultFileError, match=f"^file: more than {MAX_RESULT_LINES:,} lines$"):
        parse_result_file(header + b"\n" * MAX_RESULT_LINES)
    with pytest.raises(ResultFileError, match="^file line 2: longer than 1 MiB$"):
        parse_result_file(header + b"x" * (MAX_CONSOLE_LINE_BYTES + 1) + b"\n")
