"""Starting and stopping the engine process, and describing the machine it runs on."""
import pytest

from lab.engine.machine import cpu_model_name, machine_hardware_description
from lab.engine.server import EngineSettings, EngineStartError, parse_perf_reports, running_engine

pytestmark = pytest.mark.engine


def test_an_engine_that_cannot_load_its_model_fails_with_the_servers_own_log(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(EngineStartError) as failure:
        with running_engine(EngineSettings(model_path=broken, model_alias="broken"), log_path=tmp_path / "log"):
            pass
    message = str(failure.value)
    assert "exited with code" in message
    assert "--- server log ---" in message and str(broken) in message


def test_a_missing_model_file_is_reported_before_anything_starts(tmp_path):
    with pytest.raises(EngineStartError, match="model file not found"):
        with running_engine(EngineSettings(model_path=tmp_path / "absent.gguf", model_alias="absent")):
            pass


def test_perf_reports_are_read_in_order_and_incomplete_ones_skipped():
    log = """
llama_perf_context_print:        load time =       0.24 ms
llama_perf_context_print: prompt eval time =      15.00 ms /   112 tokens (    0.13 ms per token)
llama_perf_context_print:        eval time =     263.30 ms /   299 runs   (    0.88 ms per token)
llama_perf_context_print:       total time =     713.34 ms /   411 tokens
INFO:     127.0.0.1:33990 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:        load time =       0.24 ms
llama_perf_context_print: prompt eval time =       0.00 ms /     1 tokens (    0.00 ms per token)
llama_perf_context_print:        load time =       0.24 ms
llama_perf_context_print: prompt eval time =       0.03 ms /    11 tokens (    0.00 ms per token)
llama_perf_context_print:        eval time =       0.71 ms /     7 runs   (    0.10 ms per token)
llama_perf_context_print:       total time =       4.58 ms /    18 tokens
"""
    first, second = parse_perf_reports(log)
    assert (first.prompt_tokens, first.eval_runs, first.generated_tokens) == (112, 299, 300)
    assert (first.prompt_eval_ms, first.eval_ms, first.total_ms) == (15.0, 263.3, 713.34)
    assert (second.prompt_tokens, second.generated_tokens) == (11, 8)


@pytest.mark.parametrize(
    ("cpuinfo", "expected"),
    [
        (
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7B13 64-Core Processor\n",
            "AMD EPYC 7B13 64-Core Processor",
        ),
        (
            "processor\t: 0\nBogoMIPS\t: 48.00\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n",
            "Raspberry Pi 4 Model B Rev 1.4",
        ),
    ],
)
def test_cpu_name_comes_from_cpuinfo(cpuinfo, expected):
    assert cpu_model_name(cpuinfo) == expected
    assert machine_hardware_description(cpuinfo).startswith(f"CPU: {expected} (")


def test_cpu_name_falls_back_to_the_platform_without_cpuinfo():
    assert cpu_model_name("")
