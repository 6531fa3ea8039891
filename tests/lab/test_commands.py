"""`manage.py sweep` and `manage.py import_benchmark`: the lab from the command line, against the simulator and the
peer tools' own files."""
import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.exceptions import ApplicationError
from lab.models import SweepRun
from lab.services.imports import sweep_import_file
from tests.factories import HardwareSpecFactory, ProbeTargetFactory, ToolFactory
from tests.simulator import start_simulator
from tests.terminal import run_with_stderr_on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "probe_client" / "fixtures"
RESULT_FILES = sorted((FIXTURES / "peer_results").glob("*.json*")) + sorted((FIXTURES / "console_blocks").glob("*.txt"))
PERCENTILE_METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
LEVEL_KEYS = {"mode", "level", "requests", "ok", "errors", "output_tps", "total_tps", "request_rate", "goodput_rps",
              "schedule_lag_ms", *PERCENTILE_METRICS}
SMALL = ["--requests-per-level", "3", "--input-tokens", "50", "--max-tokens", "8"]


@pytest.fixture(scope="module")
def simulator():
    with start_simulator("openai", schedule={"ttft_ms": 10, "itl_ms": 2, "tokens": 8},
                         engine={"slots": 4, "itl_ms_per_active": 1}) as sim:
        yield sim


def _endpoint(sim) -> list[str]:
    return ["--base-url", sim.base_url, "--model", sim.model]


def _sweep(*args: str, stderr=None) -> dict:
    out = io.StringIO()
    call_command("sweep", *args, "--json", stdout=out, stderr=stderr or io.StringIO())
    return json.loads(out.getvalue())


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db
def test_closed_loop_levels_are_measured_and_nothing_is_stored(simulator):
    document = _sweep(*_endpoint(simulator), "--levels", "1,2", *SMALL)
    assert document["status"] == "succeeded" and document["run"] is None and document["error"] is None
    assert [level["level"] for level in document["levels"]] == [1, 2]
    for level in document["levels"]:
        assert LEVEL_KEYS <= set(level)
        assert level["mode"] == "concurrency" and level["ok"] == level["requests"] == 3
        for metric in PERCENTILE_METRICS:
            assert {"p50", "p95", "p99"} <= set(level[metric])
        assert level["ttft_ms"]["p50"] > 0 and level["output_tps"] > 0
    assert document["workload"]["input"] == {"kind": "fixed", "value": 50}
    assert document["card"]["model_id"] == simulator.model
    assert not SweepRun.objects.exists()


@pytest.mark.django_db
def test_without_json_a_table_of_levels_knee_and_card_is_printed(simulator):
    out = io.StringIO()
    call_command("sweep", *_endpoint(simulator), "--levels", "1,2", *SMALL, "--slo-ttft-ms", "5000",
                 "--slo-tpot-ms", "500", stdout=out, stderr=io.StringIO())
    lines = out.getvalue().splitlines()
    assert lines[0] == "sweep: succeeded"
    assert lines[1].startswith("  settle request (counted in no level): ok, TTFT ")
    assert "TTFT p50/p99 ms" in lines[2] and "merged" in lines[2]
    assert len([line for line in lines if "3/3" in line]) == 2
    assert any(line.startswith("  knee: every level met the SLO") for line in lines)
    assert any(line.startswith("  card: engine ") and f"model {simulator.model}," in line for line in lines)


@pytest.mark.django_db
def test_json_has_every_request_the_settle_request_and_a_null_stopped_reason(simulator):
    stderr = io.StringIO()
    document = _sweep(*_endpoint(simulator), "--levels", "1,2", *SMALL, stderr=stderr)
    assert "One settle request is sent first" in stderr.getvalue()
    assert document["stopped_reason"] is None
    assert [level["level"] for level in document["card"]["merged_reads"]] == [1, 2]
    assert document["settle"]["ok"] is True and document["settle"]["ttft_ms"] > 0
    assert document["settle"]["output_tokens"] == 8 and document["settle"]["error_class"] is None
    for level in document["levels"]:
        records = level["request_records"]
        assert sorted(record["index"] for record in records) == [0, 1, 2]
        assert min(record["sent_ms"] for record in records) == 0.0
        for record in records:
            assert record["ok"] and record["output_tokens"] == 8 and len(record["itl_ms"]) == 7
            assert record["ttft_ms"] > 0 and record["error_class"] == ""
            assert isinstance(record["ttft_merged"], bool) and isinstance(record["itl_merged"], list)
        # The level's percentiles are those of its records.
        assert level["ttft_ms"]["p50"] == pytest.approx(
            sorted(record["ttft_ms"] for record in records)[1], abs=0.001)
        assert level["ttft_ms"]["merged_reads"] == sum(record["ttft_merged"] for record in records)


@pytest.mark.django_db(transaction=True)
def test_merged_reads_are_counted_beside_the_percentiles(client):
    schedule = {"ttft_ms": 5, "itl_ms": 20, "tokens": 4, "events_per_write": 2, "precise": False}
    with start_simulator("openai", schedule=schedule) as paired:
        out = io.StringIO()
        call_command("sweep", *_endpoint(paired), "--levels", "2", "--requests-per-level", "2", "--input-tokens",
                     "50", "--max-tokens", "4", "--save", stdout=out, stderr=io.StringIO())
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if "2/2" in line)
    assert row.split()[3] == "2"  # the merged column: both TTFTs came with the second token
    assert any(line.startswith("  merged: requests whose first two token events came in one network read")
               for line in lines)
    run = SweepRun.objects.get()
    level = run.levels.get()
    assert level.ttft_ms["merged_reads"] == 2 and level.itl_ms["merged_reads"] == 6
    assert all(record["ttft_merged"] and record["itl_merged"] == [0, 1, 2] for record in level.request_records)
    assert run.results["settle"]["ok"] is True and "knee" in run.results
    assert run.card["merged_reads"] == [{"level": 2.0, "ttft": 2, "itl": 6}]
    # The count beside the percentiles on the run page, its card, the API's levels, and each request's flags.
    page = client.get(f"/engines/lab/{run.pk}/").content.decode()
    assert 'data-ttft-merged="2">2 merged reads<' in page and 'data-itl-merged="6">6 merged<' in page
    assert "<strong>Merged reads</strong> (under TTFT and ITL)" in page
    assert "At 2: 2 of 2 TTFTs and 6 inter-token gaps came from merged reads" in page
    assert "one request of the workload settles which parameters the endpoint accepts" in page
    rows = client.get(f"/api/v1/probes/sweeps/{run.pk}/levels/").json()["results"]
    assert (rows[0]["ttft_merged_reads"], rows[0]["itl_merged_reads"]) == (2, 6)
    records = client.get(f"/api/v1/probes/sweeps/{run.pk}/requests/").json()["results"]
    assert [(record["ttft_merged"], record["itl_merged"]) for record in records] == [(True, [0, 1, 2])] * 2


@pytest.mark.django_db
def test_open_loop_rates_report_their_schedule_lag(simulator):
    document = _sweep(*_endpoint(simulator), "--rates", "5,10", *SMALL)
    assert [(level["mode"], level["level"]) for level in document["levels"]] == [("rate", 5.0), ("rate", 10.0)]
    assert all(level["schedule_lag_ms"]["p50"] is not None for level in document["levels"])


@pytest.mark.django_db
def test_a_preset_and_an_slo_give_goodput_and_a_knee(simulator):
    document = _sweep(*_endpoint(simulator), "--levels", "1", "--requests-per-level", "2", "--preset", "chat",
                      "--slo-ttft-ms", "5000", "--slo-tpot-ms", "500")
    assert document["workload"]["name"] == "chat"
    assert document["plan"]["slo"]["ttft_ms"] == 5000
    level = document["levels"][0]
    assert level["meets_slo"] is True and level["goodput_rps"] > 0
    assert document["results"]["knee"]["best"] == 1


@pytest.mark.django_db
def test_a_jsonl_workload_samples_the_operators_lengths(simulator, tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text('{"input_tokens": 40, "output_tokens": 6}\n{"prompt_tokens": 80, "completion_tokens": 4}\n')
    document = _sweep(*_endpoint(simulator), "--levels", "1", "--requests-per-level", "2",
                      "--workload-jsonl", str(traffic))
    assert document["workload"]["input"] == {"kind": "sample", "values": [40, 80]}
    assert document["workload"]["name"] == "traffic"
    assert document["levels"][0]["ok"] == 2


@pytest.mark.django_db
def test_a_suite_runs_from_the_command_line(simulator):
    document = _sweep(*_endpoint(simulator), "--suite", "prefix-cache", "--requests-per-level", "2",
                      "--max-tokens", "4")
    assert document["kind"] == "prefix_cache" and document["status"] == "succeeded"
    assert document["results"]["shared_ttft_ms"]["p50"] > 0


@pytest.mark.django_db(transaction=True)
def test_save_stores_a_lab_run_shown_on_the_pages(simulator, client):
    hardware = HardwareSpecFactory(slug="rtx-4090", name="RTX 4090")
    tool = ToolFactory(slug="vllm", name="vLLM", kind="engine")
    document = _sweep(*_endpoint(simulator), "--levels", "1,2", *SMALL, "--save", "--tool", "vllm",
                      "--hardware", "rtx-4090", "--hardware-count", "2", "--hourly-price-usd", "0.80",
                      "--flags", "--parallel 4")
    run = SweepRun.objects.lab().get(pk=document["run"])
    assert run.origin == SweepRun.Origin.MEASURED and run.target is None and run.tool == tool
    assert run.card["engine"] == "vLLM"
    assert run.status == SweepRun.Status.SUCCEEDED and run.levels_done == run.levels_total == 2
    assert (run.hardware, run.hardware_count, run.flags) == (hardware, 2, "--parallel 4")
    assert run.card["model_id"] == simulator.model and run.card["hardware"]["slug"] == "rtx-4090"
    assert [level["level"] for level in document["levels"]] == [1.0, 2.0]
    assert all(level.cost_per_1m_output_usd for level in run.levels.all())
    assert document["page"] == f"/engines/lab/{run.pk}/"
    page = client.get(document["page"]).content.decode()
    assert f"#{run.pk}: vLLM" in page
    assert f"/engines/lab/{run.pk}/" in client.get("/engines/lab/").content.decode()

    # Every request is kept and exported: send time, TTFT, TPOT, each inter-token gap, tokens, error.
    lines = client.get(f"/api/v1/probes/sweeps/{run.pk}/requests/?format=jsonl").content.decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert [(record["level"], record["index"]) for record in records] == [(1.0, 0), (1.0, 1), (1.0, 2),
                                                                          (2.0, 0), (2.0, 1), (2.0, 2)]
    first = records[0]
    assert first["sent_ms"] == 0 and first["ok"] and first["error_class"] == ""
    assert first["ttft_ms"] > 0 and first["e2e_ms"] > first["ttft_ms"] and first["output_tokens"] == 8
    assert len(first["itl_ms"]) >= 1 and all(gap >= 0 for gap in first["itl_ms"])
    assert records[2]["sent_ms"] > records[1]["sent_ms"] > 0
    exported = client.get(f"/api/v1/probes/sweeps/{run.pk}/requests/?format=csv").content.decode()
    header = exported.splitlines()[0].split(",")
    assert header[:4] == ["mode", "level", "index", "sent_ms"] and "itl_ms" in header
    assert len(exported.splitlines()) == 7


@pytest.mark.django_db(transaction=True)
def test_save_with_a_target_is_that_targets_run(simulator):
    target = ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model, api_key_env="")
    with pytest.raises(CommandError) as error:
        _sweep("--target", target.slug, "--tool", target.tool.slug, "--levels", "1", *SMALL, "--save")
    assert error.value.returncode == 2 and str(error.value).startswith("--tool:")
    document = _sweep("--target", target.slug, "--levels", "1", *SMALL, "--save")
    run = SweepRun.objects.get(pk=document["run"])
    assert run.target == target and run.tool == target.tool and run.status == SweepRun.Status.SUCCEEDED


class _InterruptAfterFirstLevel(io.StringIO):
    """Stderr that presses Ctrl-C once the first level is reported, as an operator would."""

    def write(self, text: str) -> int:
        if text.startswith("level 1 "):
            os.kill(os.getpid(), signal.SIGINT)
        return super().write(text)


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_stops_cleanly_and_a_saved_run_keeps_its_finished_levels(simulator):
    out = io.StringIO()
    with pytest.raises(CommandError) as error:
        call_command("sweep", *_endpoint(simulator), "--levels", "1,2,4", "--requests-per-level", "12",
                     "--input-tokens", "50", "--max-tokens", "8", "--save", "--json", stdout=out,
                     stderr=_InterruptAfterFirstLevel())
    assert error.value.returncode == 130
    document = json.loads(out.getvalue())
    run = SweepRun.objects.get(pk=document["run"])
    assert run.status == SweepRun.Status.STOPPED and run.stopped_reason == "stopped by an operator"
    assert list(run.levels.values_list("level", flat=True)) == [1.0]
    assert [level["level"] for level in document["levels"]] == [1.0]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--levels", "1,x"], "--levels"),
        (["--levels", "1,1000"], "--levels"),
        (["--rates", "0"], "--rates"),
        (["--requests-per-level", "0"], "--requests-per-level"),
        (["--levels", "1", "--requests-per-level", "4001"], "--requests-per-level"),
        (["--hourly-price-usd", "cheap"], "--hourly-price-usd"),
        (["--hardware-count", "0"], "--hardware-count"),
        (["--hardware", "no-such-gpu"], "--hardware"),
        (["--tool", "no-such-engine"], "--tool"),
        (["--slo-ttft-ms", "100"], "--slo-tpot-ms"),
        (["--slo-ttft-ms", "-1", "--slo-tpot-ms", "10"], "--slo-ttft-ms"),
        (["--max-duration-s", "99999"], "--max-duration-s"),
        (["--preset", "chat", "--input-tokens", "5"], "--preset"),
        (["--input-tokens", "5"], "--max-tokens"),
        (["--input-tokens", "5", "--max-tokens", "40000"], "--max-tokens"),
        (["--workload-jsonl", "/nonexistent/traffic.jsonl"], "--workload-jsonl"),
        (["--suite", "prefix-cache", "--levels", "1"], "--levels"),
        (["--suite", "prefix-cache", "--input-tokens", "9"], "--input-tokens"),
        (["--suite", "prefix-cache", "--requests-per-level", "1"], "--requests-per-level"),
        (["--suite", "structured-output", "--max-tokens", "8"], "--max-tokens"),
        (["--suite", "structured-output", "--input-tokens", "9"], "--input-tokens"),
        (["--api-key-env", "my-key"], "--api-key-env"),
        (["--api-key-env", "ATLAS_UNSET_TEST_API_KEY"], "--api-key-env"),
        (["--target", "no-such-target"], "--target"),
    ],
)
def test_bad_arguments_exit_2_naming_the_flag(simulator, args, flag, monkeypatch):
    monkeypatch.delenv("ATLAS_UNSET_TEST_API_KEY", raising=False)
    endpoint = [] if "--target" in args else _endpoint(simulator)
    with pytest.raises(CommandError) as error:
        call_command("sweep", *endpoint, *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert error.value.returncode == 2
    assert str(error.value).startswith(flag + ":"), str(error.value)
    assert not SweepRun.objects.exists()


@pytest.mark.django_db
def test_a_bad_jsonl_line_is_named(simulator, tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_text('{"input_tokens": 40, "output_tokens": 6}\n{"input_tokens": 40}\n')
    with pytest.raises(CommandError) as error:
        call_command("sweep", *_endpoint(simulator), "--workload-jsonl", str(traffic), stderr=io.StringIO())
    assert error.value.returncode == 2
    assert str(error.value).startswith("--workload-jsonl: file line 2")


def test_missing_endpoint_exits_2_naming_the_flags():
    with pytest.raises(CommandError) as error:
        call_command("sweep", "--levels", "1", stderr=io.StringIO())
    assert error.value.returncode == 2 and str(error.value).startswith("--base-url and --model:")


@pytest.mark.django_db
def test_an_unreachable_endpoint_exits_3():
    with pytest.raises(CommandError) as error:
        call_command("sweep", "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--model", "m",
                     "--levels", "1", *SMALL, stdout=io.StringIO(), stderr=io.StringIO())
    assert error.value.returncode == 3
    assert "connect" in str(error.value)


def test_json_is_one_document_on_stdout_and_the_key_is_never_printed(simulator, monkeypatch):
    # A separate process: stdout must hold the JSON document and nothing else, whatever goes to stderr.
    key = "sk-atlas-canary-" + os.urandom(12).hex()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "ATLAS_TEST_API_KEY": key}
    result = subprocess.run(
        [sys.executable, "manage.py", "sweep", *_endpoint(simulator), "--api-key-env", "ATLAS_TEST_API_KEY",
         "--levels", "1,2", *SMALL, "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) == {"run", "page", "kind", "status", "stopped_reason", "error", "endpoint", "plan",
                             "workload", "settle", "levels", "results", "card"}
    assert document["endpoint"]["api_key_env"] == "ATLAS_TEST_API_KEY"
    assert "level 1 streams: 3/3 requests ok" in result.stderr
    assert key not in result.stdout + result.stderr
    assert key[:12] not in result.stdout + result.stderr


@pytest.mark.django_db(transaction=True)
def test_a_server_that_echoes_the_key_never_gets_it_printed_or_stored(monkeypatch):
    key = "sk-atlas-canary-" + os.urandom(12).hex()
    monkeypatch.setenv("ATLAS_TEST_API_KEY", key)
    with start_simulator("openai", fault="echo_auth_500", schedule={"ttft_ms": 5, "itl_ms": 1, "tokens": 4}) as sim:
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(CommandError) as error:
            call_command("sweep", *_endpoint(sim), "--api-key-env", "ATLAS_TEST_API_KEY", "--levels", "1", *SMALL,
                         "--save", "--json", stdout=out, stderr=err)
    assert error.value.returncode == 3
    assert "no request succeeded (http_5xx x3)" in str(error.value)
    document = json.loads(out.getvalue())
    assert document["levels"][0]["errors"] == {"http_5xx": 3}
    stored = SweepRun.objects.get(pk=document["run"])
    assert [record["error_class"] for record in stored.levels.get().request_records] == ["http_5xx"] * 3
    printed = out.getvalue() + err.getvalue() + str(error.value)
    saved = json.dumps([stored.error_message, stored.card, list(stored.levels.values())], default=str)
    for text in (printed, saved):
        assert key not in text and key[:12] not in text and key[-12:] not in text


def test_an_argument_the_parser_refuses_exits_2_naming_the_flag(simulator):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    result = subprocess.run(
        [sys.executable, "manage.py", "sweep", *_endpoint(simulator), "--preset", "no-such-preset"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2 and "--preset" in result.stderr


# --- import_benchmark ---


@pytest.mark.django_db
@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda path: path.name)
def test_every_result_file_and_console_block_imports(path):
    out = io.StringIO()
    call_command("import_benchmark", str(path), "--json", stdout=out)
    document = json.loads(out.getvalue())
    run = SweepRun.objects.get(pk=document["run"])
    assert run.origin == SweepRun.Origin.IMPORTED and run.status == SweepRun.Status.IMPORTED
    assert run.levels.count() == len(document["levels"]) >= 1
    assert run.source_tool == document["source_tool"]


@pytest.mark.django_db
def test_import_with_the_operators_card_fields(simulator):
    hardware = HardwareSpecFactory(slug="h100-sxm", name="H100 SXM")
    out = io.StringIO()
    call_command("import_benchmark", str(FIXTURES / "peer_results" / "guidellm-0.8.1-benchmarks.json"),
                 "--source-tool", "guidellm", "--hardware", "h100-sxm", "--hourly-price-usd", "2.5", stdout=out)
    run = SweepRun.objects.get()
    assert run.hardware == hardware and run.source_tool == "guidellm"
    assert all(level.cost_per_1m_output_usd for level in run.levels.all() if level.output_tps)
    assert f"as run {run.pk}" in out.getvalue() and "GuideLLM" in out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "content",
    [b'{"x": 1}', b"not json at all", b"", b"{\"date\": \"x\"}\n{broken", b"Serving Benchmark Result\nnot a block"],
)
def test_a_bad_file_exits_2_with_the_apis_message(tmp_path, content):
    path = tmp_path / "result.json"
    path.write_bytes(content)
    with pytest.raises(ApplicationError) as api_error:
        sweep_import_file(data=content)
    with pytest.raises(CommandError) as error:
        call_command("import_benchmark", str(path), stdout=io.StringIO())
    assert error.value.returncode == 2
    assert str(error.value) == api_error.value.message
    assert not SweepRun.objects.exists()


@pytest.mark.django_db
def test_a_refused_figure_is_a_warning_and_no_usable_figure_exits_2(tmp_path):
    first = json.loads((FIXTURES / "peer_results" / "vllm-bench-serve-documented-format.jsonl").read_text()
                       .splitlines()[0])
    path = tmp_path / "result.json"
    path.write_text(json.dumps({**first, "mean_ttft_ms": "fast"}))
    out = io.StringIO()
    call_command("import_benchmark", str(path), stdout=out)
    assert "Warning: refused mean_ttft_ms = 'fast': not a finite number" in out.getvalue()
    path.write_text(json.dumps({**first, **{key: float("nan") for key in first if key.endswith("_ms")},
                                "output_throughput": None, "total_token_throughput": None,
                                "request_throughput": None, "request_goodput": None}))
    with pytest.raises(CommandError) as error:
        call_command("import_benchmark", str(path), stdout=io.StringIO())
    assert error.value.returncode == 2 and str(error.value).startswith("file: no usable figure: refused ")
    assert SweepRun.objects.count() == 1


@pytest.mark.django_db
def test_a_source_tool_that_does_not_match_the_file_is_refused():
    with pytest.raises(CommandError) as error:
        call_command("import_benchmark", str(FIXTURES / "peer_results" / "guidellm-0.8.1-benchmarks.json"),
                     "--source-tool", "aiperf", stdout=io.StringIO())
    assert error.value.returncode == 2 and "aiperf" in str(error.value)


@pytest.mark.django_db
def test_a_missing_file_or_unknown_hardware_exits_2():
    with pytest.raises(CommandError) as error:
        call_command("import_benchmark", "/nonexistent/result.json")
    assert error.value.returncode == 2 and str(error.value).startswith("file: cannot read")
    with pytest.raises(CommandError) as error:
        call_command("import_benchmark", str(RESULT_FILES[0]), "--hardware", "no-such-gpu")
    assert error.value.returncode == 2 and str(error.value).startswith("--hardware:")


def test_a_progress_bar_of_requests_is_drawn_only_on_a_terminal(simulator):
    returncode, stdout, drawn = run_with_stderr_on_a_terminal(
        "sweep", *_endpoint(simulator), "--levels", "1,2", *SMALL, "--json", columns=120)
    assert returncode == 0
    assert len(json.loads(stdout)["levels"]) == 2  # stdout stays one JSON document
    assert b"level 1:" in drawn and b"/3 [" in drawn, bytes(drawn)
    assert b"level 2 streams: 3/3 requests ok" in drawn
