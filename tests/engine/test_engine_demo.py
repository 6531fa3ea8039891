"""`manage.py engine_demo` (make engine): a real engine, registered as a target, probed, and its runs stored."""
import io
import os
import signal
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from lab.engine.machine import cpu_model_name
from lab.engine.tiny_model import MODEL_NAME
from lab.models import SweepRun
from probes.models import CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget
from scoring.vocabulary import COMPAT_CHECKS
from tests.factories import ProbeTargetFactory, ToolFactory

pytestmark = [pytest.mark.engine, pytest.mark.slow]

FAST_OPTIONS = ["--workloads", "in-100", "--requests", "2", "--context", "2048", "--sweep-requests", "2"]


def _port_open(base_url: str) -> bool:
    host, port = base_url.removeprefix("http://").split("/")[0].split(":")
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, int(port))) == 0


@pytest.mark.django_db
def test_once_registers_the_engine_probes_it_and_stores_runs_and_summaries(tmp_path, client):
    tool = ToolFactory(slug="llama-cpp", name="llama.cpp")
    # The fixture's template for a real llama-server is not the demo's target and stays as it was.
    template = ProbeTargetFactory(
        slug="llama-cpp-local", tool=tool, base_url="http://127.0.0.1:8080/v1", model_id="gpt-oss-120b",
        api_key_env="", enabled=False,
    )
    out = io.StringIO()

    call_command("engine_demo", "--once", "--model-dir", str(tmp_path), *FAST_OPTIONS, stdout=out)

    template.refresh_from_db()
    assert (template.base_url, template.model_id, template.hardware) == ("http://127.0.0.1:8080/v1", "gpt-oss-120b", "")
    assert not template.runs.exists()
    target = ProbeTarget.objects.get(slug="llama-cpp-tiny-local")
    assert target.tool == tool
    assert target.base_url.startswith("http://127.0.0.1:") and target.base_url.endswith("/v1")
    assert target.model_id == MODEL_NAME
    assert "random" in target.notes and "gibberish" in target.notes
    assert target.api_key_env == ""
    assert cpu_model_name() in target.hardware
    assert target.quantization.startswith("Q8_0")
    assert version("llama_cpp_python") in target.engine_version
    assert target.enabled is False, "with --once the engine is gone afterwards, so the target is disabled"
    assert not _port_open(target.base_url), "the engine process was stopped"
    assert (tmp_path / f"{MODEL_NAME}.Q8_0.gguf").is_file()

    speed = ProbeRun.objects.get(target=target, suite=ProbeRun.Suite.SPEED)
    assert (speed.workload, speed.concurrency, speed.request_count) == ("in-100", 1, 2)
    assert speed.status in (ProbeRun.Status.SUCCEEDED, ProbeRun.Status.PARTIAL), speed.error_message
    ok = [m for m in speed.measurements.all() if m.ok]
    assert ok and all(0 < m.ttft_ms < m.e2e_ms and m.output_speed_tps > 0 for m in ok)
    assert speed.target_snapshot["base_url"] == target.base_url
    assert speed.target_snapshot["engine_version"] == target.engine_version

    summary = MeasurementSummary.objects.get(target=target, workload="in-100", concurrency=1)
    assert summary.samples == len(ok)
    assert summary.success_rate == pytest.approx(len(ok) / speed.request_count, abs=1e-3)
    assert summary.metrics["ttft_ms"]["p50"] > 0 and summary.metrics["output_speed_tps"]["p50"] > 0

    compat = ProbeRun.objects.get(target=target, suite=ProbeRun.Suite.COMPAT)
    assert sorted(compat.compat_outcomes.values_list("check_name", flat=True)) == sorted(COMPAT_CHECKS)
    assert CompatStatus.objects.filter(target=target).count() == len(COMPAT_CHECKS)

    report = out.getvalue()
    assert "speed in-100 x1" in report and "compat:" in report and target.base_url in report

    page = client.get("/engines/")
    assert page.status_code == 200
    assert target.name in page.content.decode()

    sweep = SweepRun.objects.lab().get(target=target)
    assert sweep.kind == SweepRun.Kind.SWEEP and sweep.origin == SweepRun.Origin.MEASURED
    assert sweep.status == SweepRun.Status.SUCCEEDED, (sweep.error_class, sweep.error_message)
    levels = list(sweep.levels.order_by("level"))
    assert [level.level for level in levels] == [1.0, 2.0, 4.0]
    assert all(level.ok == level.requests == 2 for level in levels)
    assert all(level.ttft_ms["p50"] > 0 and level.output_tps > 0 for level in levels)
    assert sweep.card["model_id"] == MODEL_NAME and sweep.card["engine"] == tool.name
    assert sweep.card["server_sources"], "the card records what the server said about itself"
    assert f"/engines/lab/{sweep.pk}/" in report
    lab_page = client.get(f"/engines/lab/{sweep.pk}/")
    assert lab_page.status_code == 200 and "Benchmark card" in lab_page.content.decode()


@pytest.mark.django_db
def test_without_the_llama_cpp_tool_it_says_to_load_the_catalog(tmp_path):
    with pytest.raises(CommandError, match="load_catalog"):
        call_command("engine_demo", "--once", "--model-dir", str(tmp_path))
    assert not list(tmp_path.iterdir()), "nothing is written or started before the catalog check"


@pytest.mark.django_db
def test_unknown_workload_is_refused_before_anything_starts(tmp_path):
    ToolFactory(slug="llama-cpp", name="llama.cpp")
    with pytest.raises(CommandError, match="--workloads"):
        call_command("engine_demo", "--once", "--model-dir", str(tmp_path), "--workloads", "in-7")
    assert not ProbeTarget.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_keeps_the_engine_up_for_scheduled_probes_until_interrupted(tmp_path):
    tool = ToolFactory(slug="llama-cpp", name="llama.cpp")
    # A target left by an earlier run points at a port that is gone; the demo updates it in place.
    ProbeTargetFactory(
        slug="llama-cpp-tiny-local", tool=tool, base_url="http://127.0.0.1:9/v1", api_key_env="", enabled=False
    )
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"
        ),
        "PYTHONUNBUFFERED": "1",
    }
    command = [sys.executable, "manage.py", "engine_demo", "--model-dir", str(tmp_path), "--no-compat",
               *FAST_OPTIONS]
    process = subprocess.Popen(
        command, cwd=Path(settings.BASE_DIR), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "press Ctrl-C" in line:
                break
        assert "press Ctrl-C" in "".join(lines), "".join(lines)

        target = ProbeTarget.objects.get(slug="llama-cpp-tiny-local")
        assert target.base_url != "http://127.0.0.1:9/v1"
        assert target.enabled and _port_open(target.base_url), "the engine stays up for the scheduled probes"
        assert ProbeRun.objects.filter(target=target, suite=ProbeRun.Suite.SPEED).exists()

        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest
    target.refresh_from_db()
    assert not target.enabled and not _port_open(target.base_url)
    assert "disabled" in rest
