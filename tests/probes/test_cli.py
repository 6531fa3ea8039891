"""`manage.py probe`: ad-hoc JSON against the simulator, --target --save storing runs, clear errors."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from probes.models import MeasurementSummary, ProbeRun
from scoring.vocabulary import COMPAT_CHECKS
from tests.factories import ProbeTargetFactory
from tests.simulator import start_simulator
from tests.terminal import run_with_stderr_on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
REQUEST_KEYS = {"ttft_ms", "ttfat_ms", "headers_ms", "e2e_ms", "output_tokens", "output_tokens_source",
                "output_speed_tps", "tpot_ms", "itl_ms", "chunks", "buffered", "error"}


@pytest.fixture(scope="module")
def simulator():
    with start_simulator("openai", schedule={"ttft_ms": 20, "itl_ms": 2, "tokens": 8}) as sim:
        yield sim


def _probe(*args: str) -> str:
    out = io.StringIO()
    call_command("probe", *args, stdout=out)
    return out.getvalue()


def test_json_output_is_one_document_of_the_documented_shape(simulator, api_key):
    # A separate process: stdout must hold the JSON document and nothing else.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    result = subprocess.run(
        [sys.executable, "manage.py", "probe", "--base-url", simulator.base_url, "--model", simulator.model,
         "--api-key-env", "ATLAS_TEST_API_KEY", "--suite", "all", "--input-tokens", "100", "--max-tokens", "8",
         "--requests", "3", "--concurrency", "3", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert set(document) == {"speed", "compat"}
    requests = document["speed"]["requests"]
    assert len(requests) == 3
    for request in requests:
        assert REQUEST_KEYS <= set(request)
        assert set(request["itl_ms"]) == {"p50", "p95", "p99"}
        assert request["error"] is None and request["ttft_ms"] > 0
    summary = document["speed"]["summary"]
    for metric in ("ttft_ms", "output_speed_tps", "e2e_ms"):
        assert set(summary[metric]) >= {"p50", "p95", "p99"}
    assert len(document["compat"]) == len(COMPAT_CHECKS)
    for check in document["compat"].values():
        assert {"outcome", "status", "detail"} <= set(check)
        assert check["outcome"] in {"supported", "accepted", "ignored", "rejected", "error"}
    assert "\r" not in result.stderr  # no progress bar when stderr is not a terminal


@pytest.mark.django_db
def test_adhoc_runs_store_nothing(simulator):
    output = _probe("--base-url", simulator.base_url, "--model", simulator.model, "--suite", "speed",
                    "--requests", "2", "--max-tokens", "8", "--input-tokens", "100")
    assert "ttft_ms" in output and "2 of 2 requests succeeded" in output
    assert not ProbeRun.objects.exists()


@pytest.mark.django_db
def test_a_stored_target_without_save_is_measured_but_not_stored(simulator, api_key):
    target = ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model)
    document = json.loads(_probe("--target", target.slug, "--suite", "speed", "--requests", "1",
                                 "--max-tokens", "8", "--input-tokens", "100", "--json"))
    assert len(document["speed"]["requests"]) == 1
    assert not ProbeRun.objects.exists()


@pytest.mark.django_db
def test_target_save_stores_runs_and_summaries(simulator, api_key):
    target = ProbeTargetFactory(base_url=simulator.base_url, model_id=simulator.model)
    document = json.loads(_probe("--target", target.slug, "--save", "--suite", "speed", "--input-tokens", "100",
                                 "--requests", "2", "--max-tokens", "8", "--json"))
    [run] = ProbeRun.objects.filter(target=target)
    assert document["runs"] == [{"id": run.pk, "suite": "speed", "workload": "in-100", "concurrency": 1,
                                 "status": "succeeded", "error_class": None}]
    assert len(document["speed"]["requests"]) == run.measurements.count() == 2
    # Stored measurements print in exactly the ad-hoc per-request shape (one serializer for both).
    for request, measurement in zip(document["speed"]["requests"], run.measurements.order_by("index")):
        assert set(request) == REQUEST_KEYS and set(request["itl_ms"]) == {"p50", "p95", "p99"}
        assert (request["ttft_ms"], request["output_tokens"], request["chunks"], request["error"]) == (
            measurement.ttft_ms, measurement.output_tokens, measurement.chunks, None)
    assert MeasurementSummary.objects.get(target=target).samples == 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "m"], "--base-url"),
        (["--base-url", "http://127.0.0.1:9/v1"], "--model"),
        (["--base-url", "ftp://example.org", "--model", "m"], "--base-url"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "sk-abc123"], "--api-key-env"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "ATLAS_UNSET_API_KEY"],
         "--api-key-env"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--requests", "0"], "--requests"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--concurrency", "-2"], "--concurrency"),
        (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--save"], "--save"),
        (["--target", "no-such-target"], "--target"),
        (["--target", "x", "--base-url", "http://127.0.0.1:9/v1"], "--target"),
    ],
)
def test_bad_options_name_the_option(args, message, monkeypatch):
    monkeypatch.delenv("ATLAS_UNSET_API_KEY", raising=False)
    with pytest.raises(CommandError, match=message):
        _probe(*args)


@pytest.mark.django_db
def test_save_accepts_only_standard_workloads(api_key):
    target = ProbeTargetFactory()
    with pytest.raises(CommandError, match="--input-tokens"):
        _probe("--target", target.slug, "--save", "--input-tokens", "777")


def test_a_bad_suite_is_refused_by_the_parser():
    with pytest.raises(CommandError, match="--suite"):
        _probe("--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--suite", "latency")


def test_a_progress_bar_is_drawn_only_on_a_terminal(simulator):
    returncode, stdout, drawn = run_with_stderr_on_a_terminal(
        "probe", "--base-url", simulator.base_url, "--model", simulator.model, "--suite", "speed", "--requests", "3",
        "--max-tokens", "8", "--input-tokens", "100", "--json", columns=100)
    assert returncode == 0
    assert len(json.loads(stdout)["speed"]["requests"]) == 3  # stdout stays one JSON document
    assert b"speed:" in drawn and b"/3 [" in drawn, bytes(drawn)
