"""Result files of the peer tools: GuideLLM's and AIPerf's as those tools wrote them against the simulator, and
vLLM bench serve's built from its documented layout (vLLM cannot run here; see fixtures/peer_results/README)."""
import json
from pathlib import Path

import pytest

from probe_client.jsonlimits import MAX_JSON_VALUES
from probe_client.sweep import ResultFileError, find_knee, parse_result_file
from probe_client.sweep.imports import MAX_JSON_DOCUMENT_BYTES, MAX_RESULT_BYTES, MAX_RESULT_ROWS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "peer_results"
GUIDELLM = FIXTURES / "guidellm-0.8.1-benchmarks.json"
AIPERF_SWEEP = FIXTURES / "aiperf-0.13.0-profile_export_aiperf_sweep.json"
AIPERF_ONE = FIXTURES / "aiperf-0.13.0-profile_export_aiperf.json"
VLLM = FIXTURES / "vllm-bench-serve-documented-format.jsonl"


@pytest.mark.parametrize(("path", "tool"), [(GUIDELLM, "guidellm"), (AIPERF_SWEEP, "aiperf")])
def test_real_peer_files_give_the_sweep_the_simulator_was_set_to(path, tool):
    parsed = parse_result_file(path.read_bytes())
    assert parsed.source_tool == tool
    assert [(level["mode"], level["level"]) for level in parsed.levels] == [("concurrency", 1.0), ("concurrency", 2.0),
                                                                           ("concurrency", 4.0)]
    assert all(level["ok"] == level["requests"] == 8 for level in parsed.levels)
    one, two, four = (level["ttft_ms"]["p50"] for level in parsed.levels)
    # The simulator has two slots: up to 2 streams TTFT is the ~13 ms schedule, at 4 half the requests queue
    # behind a whole answer (~70 ms).
    assert 10 < one < 25 and 10 < two < 25 and four > 50
    assert parsed.workload["output"] == {"kind": "fixed", "value": 16}
    for level in parsed.levels:
        assert level["output_tps"] > 0 and level["duration_s"] > 0
        assert level["e2e_ms"]["p50"] > level["ttft_ms"]["p50"]
        assert 3 < level["tpot_ms"]["p50"] < 15  # 4 ms per step plus 1 ms per other active stream


def test_guidellm_card_names_the_tool_version_and_model():
    parsed = parse_result_file(GUIDELLM.read_bytes())
    assert parsed.card == {"tool_version": "0.8.1", "model_id": "sim-model"}
    assert parsed.started_at and parsed.finished_at > parsed.started_at


def test_one_aiperf_profile_is_one_level_with_its_load():
    parsed = parse_result_file(AIPERF_ONE.read_bytes(), source_tool="aiperf")
    assert [(level["mode"], level["level"]) for level in parsed.levels] == [("concurrency", 2.0)]
    assert parsed.card == {"tool_version": "0.13.0", "model_id": "sim-model"}
    assert parsed.workload["input"] == {"kind": "fixed", "value": 128}


def test_vllm_append_result_lines_are_levels_with_goodput_and_a_knee():
    parsed = parse_result_file(VLLM.read_bytes())
    assert parsed.source_tool == "vllm-bench-serve"
    assert [level["level"] for level in parsed.levels] == [1.0, 4.0, 16.0]
    first = parsed.levels[0]
    assert first["ttft_ms"] == {"p50": 35.0, "p95": pytest.approx(49.0), "p99": pytest.approx(63.0),
                                "mean": pytest.approx(36.75)}
    assert first["goodput_rps"] == 1.6 and first["request_rate"] == 64 / 40.0
    assert first["output_tps"] == pytest.approx(64 * 128 / 40.0)
    assert parsed.workload["input"] == {"kind": "fixed", "value": 1024}
    assert parsed.card["model_id"] == "Qwen/Qwen3-8B"
    assert find_knee(parsed.levels).reason == "no SLO was set"


def test_a_guidellm_sweep_profile_keeps_its_rates_and_lists_what_it_left_out():
    report = json.loads(GUIDELLM.read_text())
    first, second, third = report["benchmarks"]
    second["config"]["strategy"] = {"type_": "constant", "rate": 5.0}
    third["config"]["strategy"] = {"type_": "constant", "rate": 10.0}
    throughput = json.loads(json.dumps(first))
    throughput["config"]["strategy"] = {"type_": "throughput", "max_concurrency": 512}
    report["benchmarks"].append(throughput)
    parsed = parse_result_file(json.dumps(report).encode())
    assert [(level["mode"], level["level"]) for level in parsed.levels] == [("rate", 5.0), ("rate", 10.0)]
    assert parsed.card["skipped_benchmarks"] == ["throughput", "concurrency 1"]


@pytest.mark.parametrize(
    ("data", "source_tool", "message"),
    [
        (b"", None, "file: empty"),
        (b"\xff\xfe", None, "file: not UTF-8"),
        (b'{"completed": 3', None, "file line 1: not valid JSON"),
        (b'{"hello": "world"}', None, "file: not a result file of vLLM bench serve"),
        (b"[1, 2]", None, "file: not a result file"),
        (GUIDELLM.read_bytes(), "aiperf", "file: not a aiperf result file (it looks like a guidellm file)"),
        (b'{"hello": 1}', "guidellm", "file: not a guidellm result file (its keys match none"),
        (b"{}", "llmperf", "source_tool: one of"),
        (b'{"completed": 2, "mean_ttft_ms": 3, "max_concurrency": 2}', None, "file.duration: missing"),
        (b'{"completed": 0, "mean_ttft_ms": 3}', None, "file: no benchmark with a completed request"),
        (b'{"benchmarks": [{"config": {"strategy": {"type_": "concurrent"}}, "metrics": {}}]}', None,
         "benchmarks[0].config.strategy.streams: missing"),
        (b'{"benchmarks": [{"config": {}}]}', None, "benchmarks[0].metrics: missing"),
    ],
)
def test_bad_files_are_refused_naming_where(data, source_tool, message):
    with pytest.raises(ResultFileError) as error:
        parse_result_file(data, source_tool=source_tool)
    assert str(error.value).startswith(message)


def test_the_same_level_twice_is_refused():
    line = VLLM.read_text().splitlines()[0]
    with pytest.raises(ResultFileError, match="the same load level appears twice"):
        parse_result_file(f"{line}\n{line}\n".encode())


def _refusal(data: bytes) -> str:
    with pytest.raises(ResultFileError) as error:
        parse_result_file(data)
    return str(error.value)


def test_hostile_files_are_refused_naming_the_limit_they_pass():
    assert _refusal(b"{}\n" * (MAX_RESULT_ROWS + 1)) == (
        f"file: more than {MAX_RESULT_ROWS:,} JSON lines; import at most {MAX_RESULT_ROWS:,} runs at a time"
    )
    assert _refusal(b"[" + b"0," * MAX_JSON_VALUES + b"0]") == (
        f"file: JSON with more than {MAX_JSON_VALUES:,} values is refused"
    )
    assert _refusal(b"[" * 65 + b"]" * 65) == "file: JSON nested deeper than 64 levels is refused"
    # Past 16 MiB a file is read a line at a time, and the value limit holds for the lines together.
    padding = b" " * (MAX_JSON_DOCUMENT_BYTES - 1) + b"\n"
    assert _refusal(padding + b'{"completed": 1}\n' + b"[" * 65 + b"]" * 65) == (
        "file line 3: JSON nested deeper than 64 levels is refused"
    )
    line = b"[" + b"0," * (MAX_JSON_VALUES // 2) + b"0]\n"
    assert _refusal(padding + line * 2) == f"file line 3: the file holds more than {MAX_JSON_VALUES:,} JSON values"
    half = b'["' + b"a" * (MAX_JSON_DOCUMENT_BYTES // 2) + b'"]\n'
    assert _refusal(half * 3) == "file line 2: more than 16 MiB of JSON in all is refused"
    # A single document past what is read whole: refused at its first (and only) line.
    big = b'{"x": "' + b"a" * MAX_JSON_DOCUMENT_BYTES + b'"}'
    assert _refusal(big) == "file line 1: a JSON document larger than 16 MiB is refused"
    assert _refusal(b"x" * (MAX_RESULT_BYTES + 1)) == "file: larger than 64 MiB"


def test_a_file_is_read_from_its_file_object_as_from_its_bytes():
    with VLLM.open("rb") as file:
        from_file = parse_result_file(file)
    assert from_file.levels == parse_result_file(VLLM.read_bytes()).levels
