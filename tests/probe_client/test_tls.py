"""The TLS path (every hosted provider is https): stamps from the asyncio protocol, same metrics."""

import shutil
import subprocess

import pytest

from probe_client import run_compat_suite, run_speed_suite
from probe_client.sweep import SweepPlan, Workload, run_sweep
from tests.probe_client.conftest import config_for, run
from tests.simulator import start_simulator

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make a certificate"
)


@pytest.fixture(scope="module")
def tls_sim(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    with start_simulator(
        "groq",
        tls={"cert": str(cert), "key": str(key)},
        schedule={"ttft_ms": 60, "itl_ms": 10, "tokens": 20, "reasoning_tokens": 0},
    ) as sim:
        yield sim, str(cert)


def test_speed_over_tls_matches_the_wire(tls_sim):
    sim, cert = tls_sim
    assert sim.base_url.startswith("https://")
    speed = run(
        run_speed_suite(config_for(sim, ca_bundle=cert), input_tokens=100, max_tokens=32, requests=4, concurrency=2)
    )
    timelines = {r["response_id"]: r["timeline"] for r in sim.chat_requests}
    for result in speed.requests:
        assert result.ok, result.error_message
        written = result.raw_stamps["written_ns"]
        truth = (timelines[result.request_id]["first_token_ns"] - written) / 1e6
        assert result.ttft_ms == pytest.approx(truth, abs=5.0)
        assert result.ttft_ms == pytest.approx(60.0, abs=10.0)
    # Two workers, two requests each: the second request of each worker reuses its TLS connection.
    # The unrecorded parameter-settling request opened the first connection; the second stream opens its own.
    assert sum(r.connect_ms is not None for r in speed.requests) == 1


def test_untrusted_certificate_is_a_connect_error(tls_sim):
    sim, _ = tls_sim
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=8, requests=1, concurrency=1))
    assert speed.error_class == "connect_error"
    assert "CERTIFICATE_VERIFY_FAILED" in speed.requests[0].error_message


def test_compat_over_tls(tls_sim):
    sim, cert = tls_sim
    result = run(run_compat_suite(config_for(sim, ca_bundle=cert), checks=["n", "stream_usage"]))
    # Groq n=2 -> 400 (G1, Sources of docs/probes-measurement.md)
    assert [c.outcome for c in result.checks] == ["rejected", "supported"]


def test_a_sweep_over_tls_reads_through_the_reading_thread(tls_sim):
    """The sweep's connections are read by one thread (probe_client/transport.py); TLS is decrypted on top of
    its stamped reads."""
    sim, cert = tls_sim
    plan = SweepPlan(mode="concurrency", levels=(2,), requests_per_level=4)
    workload = Workload.from_dict({"name": "tls", "input": 60, "output": 20})
    result = run(run_sweep(config_for(sim, ca_bundle=cert), plan=plan, workload=workload))
    level = result.levels[0]
    assert level.ok == 4, level.errors
    for sample in level.samples:
        # The simulator starts its 60 ms after reading the request: no TTFT measured from the send is shorter.
        assert sample.ttft_ms >= 60 and len(sample.gaps_ms) == 19 and sample.output_tokens == 20
