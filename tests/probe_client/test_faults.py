"""Every fault a probe must survive becomes a classified error within a bounded time; no exception escapes."""

import asyncio
import json
import socket
import time

import pytest

from probe_client import ERROR_CLASSES, run_compat_suite, run_speed_suite
from tests.probe_client.conftest import config_for, run

FAST = {"read_timeout_s": 1.0, "request_deadline_s": 3.0, "connect_timeout_s": 1.0}
SCHEDULE = {"ttft_ms": 5, "itl_ms": 1, "tokens": 10}


def speed_under(simulator, fault=None, requests=1, concurrency=1, sim=None, **config):
    headers = {"x-simulator-options": json.dumps({"fault": fault, **(sim or {})})} if fault else None
    values = {**FAST, **config}
    started = time.monotonic()
    result = run(
        run_speed_suite(
            config_for(simulator, extra_headers=headers, **values),
            input_tokens=50,
            max_tokens=16,
            requests=requests,
            concurrency=concurrency,
        )
    )
    return result, time.monotonic() - started


@pytest.fixture(scope="module")
def sim(simulator_factory):
    return simulator_factory("openai", schedule=SCHEDULE)


@pytest.mark.parametrize(
    "fault, error_class, bound_s",
    [
        ("stall_before_headers", "stall_before_headers", 2.5),
        ("stall_mid_stream", "stall_mid_stream", 2.5),
        ("reset_mid_stream", "connection_reset", 1.0),
        ("malformed_sse", "malformed_sse", 1.0),
        ("invalid_json", "invalid_json", 1.0),
        ("stream_error_event", "stream_error_event", 1.0),
        ("stream_error_object", "stream_error_event", 1.0),
        ("html_502", "http_5xx", 1.0),
        ("text_400", "http_4xx", 1.5),
        ("http_500", "http_5xx", 1.0),
        ("overloaded_503", "overloaded", 1.0),
        ("unauthorized_401", "auth_failed", 1.0),
        ("too_large_content_length", "response_too_large", 1.0),
        ("slow_drip", "slow_drip", 4.0),
        ("no_done_hang", "missing_done", 2.5),
        ("close_without_finish", "missing_done", 1.0),
        ("redirect", "redirect", 1.0),
    ],
)
def test_fault_is_classified_in_bounded_time(sim, fault, error_class, bound_s):
    sim.reset()
    result, elapsed = speed_under(sim, fault, requests=2, concurrency=2, sim={"drip_interval_ms": 100})
    # Two parallel requests follow one unrecorded parameter-settling request: two rounds at most.
    assert elapsed < 2 * bound_s + 1.0, elapsed
    assert result.requests, result.error_class
    for request in result.requests:
        assert request.error_class == error_class, (request.error_class, request.error_message)
        assert request.ok is False
        assert request.error_message
    assert error_class in ERROR_CLASSES


def test_partial_stream_keeps_its_ttft(sim):
    result, _ = speed_under(sim, "stall_mid_stream")
    (request,) = result.requests
    assert request.ttft_ms is not None and request.ttft_ms < 100
    assert request.e2e_ms is not None


def test_provider_and_proxy_messages_are_kept(sim):
    result, _ = speed_under(sim, "html_502")
    assert "502 Bad Gateway" in result.requests[0].error_message
    result, _ = speed_under(sim, "stream_error_event")
    assert "tool call validation failed" in result.requests[0].error_message
    # The HTTP status was 200; Groq puts the real one into the event (G11, Sources of docs/probes-measurement.md).
    assert result.requests[0].http_status == 200
    assert "(status 400)" in result.requests[0].error_message


def test_response_larger_than_the_cap(sim):
    result, elapsed = speed_under(sim, "too_large", max_response_bytes=200_000, sim={"too_large_bytes": 5_000_000})
    assert result.requests[0].error_class == "response_too_large"
    assert elapsed < 3


def test_deadline_while_tokens_still_flow(simulator_factory):
    slow = simulator_factory("openai", schedule={"ttft_ms": 5, "itl_ms": 300, "tokens": 40})
    result, elapsed = speed_under(slow, request_deadline_s=2.0)
    (request,) = result.requests
    assert request.error_class == "deadline_exceeded"
    assert request.ttft_ms is not None
    # The whole stream lasts 12 s; half of that bounds a 2 s deadline with room for a loaded machine.
    assert elapsed < 6.0


def test_no_done_but_clean_close_after_finish_is_complete(sim):
    # Cerebras ends its streams this way (C6, Sources of docs/probes-measurement.md).
    result, _ = speed_under(sim, "no_done_close")
    assert result.requests[0].ok


def test_429_retry_after_is_honoured(sim):
    sim.reset()
    result, elapsed = speed_under(sim, "rate_limited", sim={"retry_after": "0.3", "fault_requests": 1})
    (request,) = result.requests
    assert request.ok
    assert result.rate_limit_retries == 1
    assert elapsed >= 0.3
    assert len(sim.chat_requests) == 2


def test_429_retry_after_beyond_the_cap_is_not_waited_for(sim):
    sim.reset()
    result, elapsed = speed_under(sim, "rate_limited", sim={"retry_after": "120"})
    assert result.requests[0].error_class == "rate_limited"
    assert elapsed < 2
    assert len(sim.chat_requests) == 1


def test_groq_429_message_hint_is_used_without_retry_after(simulator_factory):
    groq = simulator_factory("groq", schedule=SCHEDULE)
    result, elapsed = speed_under(
        groq, "rate_limited", sim={"retry_after": "0.2", "omit_retry_after": True, "fault_requests": 1}
    )
    # G9, Sources of docs/probes-measurement.md.
    assert elapsed >= 0.2, "the wait comes from Groq's 'try again in 0.2s' message (G9)"
    assert result.requests[0].ok
    assert result.rate_limit_retries == 1


def test_redirect_is_never_followed(sim):
    sim.reset()
    result, _ = speed_under(sim, "redirect")
    assert "attacker.invalid" in result.requests[0].error_message
    assert len(sim.requests) == 1
    assert result.error_class == "redirect"


def test_connection_refused():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    from probe_client import EndpointConfig

    config = EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", **FAST)
    started = time.monotonic()
    result = run(run_speed_suite(config, input_tokens=50, max_tokens=8, requests=5, concurrency=1))
    assert result.error_class == "connect_error"
    assert len(result.requests) == 1, "a refused connection stops the run instead of failing every request"
    assert time.monotonic() - started < 2
    compat = run(run_compat_suite(config))
    assert compat.error_class == "connect_error"
    assert all(check.outcome == "error" for check in compat.checks)


def test_connect_timeout_when_the_accept_queue_is_full():
    from probe_client import EndpointConfig

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        # Fill the accept queue; further SYNs are dropped, so connecting hangs until the timeout.
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        time.sleep(0.2)
        config = EndpointConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", **{**FAST, "connect_timeout_s": 0.5})
        started = time.monotonic()
        result = run(run_speed_suite(config, input_tokens=50, max_tokens=8, requests=1, concurrency=1))
        assert result.requests[0].error_class == "connect_timeout"
        # Without the 0.5 s timeout the kernel keeps retrying the SYN for about two minutes.
        assert time.monotonic() - started < 5
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_missing_key_sends_nothing(sim, monkeypatch):
    monkeypatch.delenv("ATLAS_C_MISSING_API_KEY", raising=False)
    sim.reset()
    result = run(
        run_speed_suite(
            config_for(sim, api_key_env="ATLAS_C_MISSING_API_KEY"), input_tokens=50, max_tokens=8, requests=3, concurrency=1
        )
    )
    assert result.error_class == "auth_missing"
    assert result.requests == []
    compat = run(run_compat_suite(config_for(sim, api_key_env="ATLAS_C_MISSING_API_KEY")))
    assert compat.error_class == "auth_missing"
    assert sim.requests == []


def test_compat_suite_under_faults_reports_error_outcomes(sim):
    config = config_for(sim, extra_headers={"x-simulator-options": '{"fault": "http_500"}'}, **FAST)
    result = run(run_compat_suite(config, checks=["n", "logprobs", "stream_usage"]))
    assert [c.outcome for c in result.checks] == ["error"] * 3
    assert all(c.http_status == 500 and c.detail.startswith("http_5xx") for c in result.checks)
    config = config_for(sim, extra_headers={"x-simulator-options": '{"fault": "stall_before_headers"}'}, **FAST)
    started = time.monotonic()
    result = run(run_compat_suite(config, checks=["n", "stream_usage"]))
    assert [c.outcome for c in result.checks] == ["error", "error"]
    assert time.monotonic() - started < 5


def test_client_never_hangs_the_event_loop_on_cancel(sim):
    async def cancel_midway():
        config = config_for(sim, extra_headers={"x-simulator-options": '{"fault": "stall_before_headers"}'}, **FAST)
        task = asyncio.ensure_future(run_speed_suite(config, input_tokens=50, max_tokens=8, requests=1, concurrency=1))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancel_midway())
