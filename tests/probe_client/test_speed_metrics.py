"""Metrics measured against a simulator that emits tokens on a known schedule (loopback, separate process)."""

import statistics

import pytest

from probe_client import run_speed_suite
from tests.probe_client.conftest import config_for, run

# Role-only first chunk, a reasoning phase of 5 tokens, 3 tokens per chunk, a usage chunk 100 ms late.
SCHEDULE = {
    "ttft_ms": 80,
    "itl_ms": 20,
    "tokens_per_chunk": 3,
    "reasoning_tokens": 5,
    "tokens": 30,
    "usage_delay_ms": 100,
}
TOTAL_TOKENS = 35
CHUNKS = 12  # ceil(35 / 3)
EXPECTED = {
    "ttft_ms": 80.0,
    "ttfat_ms": 100.0,  # the second chunk holds the last two reasoning tokens and the first answer token
    "e2e_ms": 80.0 + (CHUNKS - 1) * 20.0,  # the usage chunk and [DONE] do not count
}
EXPECTED_SPEED = (TOTAL_TOKENS - 3) / ((CHUNKS - 1) * 0.020)
EXPECTED_TPOT = (EXPECTED["e2e_ms"] - EXPECTED["ttft_ms"]) / (TOTAL_TOKENS - 1)
TOLERANCE_MS = 5.0


@pytest.fixture(scope="module")
def scheduled(simulator_factory):
    return simulator_factory("openai", schedule=SCHEDULE)


def actual_timeline(sim) -> dict:
    """What the simulator really emitted, per response id, as CLOCK_MONOTONIC stamps (shared by both processes)."""
    return {request["response_id"]: request["timeline"] for request in sim.chat_requests}


def assert_matches(result, actual: dict):
    """The client's figures against the wire: from the client's write to the server's emission of each event."""
    assert result.ok, (result.error_class, result.error_message)
    timeline = actual[result.request_id]
    written = result.raw_stamps["written_ns"]
    truth = {
        "ttft_ms": (timeline["first_token_ns"] - written) / 1e6,
        "ttfat_ms": (timeline["first_answer_ns"] - written) / 1e6,
        "e2e_ms": (timeline["last_token_ns"] - written) / 1e6,
    }
    for name, value in truth.items():
        assert getattr(result, name) == pytest.approx(value, abs=TOLERANCE_MS), name
    true_speed = (TOTAL_TOKENS - 3) / ((timeline["last_token_ns"] - timeline["first_token_ns"]) / 1e9)
    assert result.output_speed_tps == pytest.approx(true_speed, rel=0.05)
    assert result.output_tokens == TOTAL_TOKENS
    assert result.output_tokens_source == "usage"
    assert result.chunks == CHUNKS
    assert result.tokens_per_chunk == [3] * (CHUNKS - 1) + [2]
    assert result.tpot_ms == pytest.approx((result.e2e_ms - result.ttft_ms) / (TOTAL_TOKENS - 1))
    assert len(result.gaps_ms) == CHUNKS - 1
    assert result.buffered is False


def assert_schedule_medians(results):
    """Medians over the requests against the nominal schedule (the server's own timer jitter averages out)."""
    for name, expected in EXPECTED.items():
        assert statistics.median(getattr(r, name) for r in results) == pytest.approx(expected, abs=TOLERANCE_MS), name
    assert statistics.median(r.output_speed_tps for r in results) == pytest.approx(EXPECTED_SPEED, rel=0.05)
    assert statistics.median(r.tpot_ms for r in results) == pytest.approx(EXPECTED_TPOT, rel=0.05)
    assert statistics.median(r.itl_p50_ms for r in results) == pytest.approx(20.0, abs=TOLERANCE_MS)


def test_single_stream_matches_the_schedule(scheduled):
    scheduled.reset()
    speed = run(run_speed_suite(config_for(scheduled), input_tokens=100, max_tokens=64, requests=3, concurrency=1))
    assert speed.error_class == ""
    assert len(speed.requests) == 3
    actual = actual_timeline(scheduled)
    for result in speed.requests:
        assert_matches(result, actual)
        assert result.headers_ms is not None and result.headers_ms < 20
        assert result.queue_ms is not None and result.queue_ms >= 0
        assert result.request_id.startswith("chatcmpl-")
    # The first request opened the connection; the others reused it (keep-alive).
    assert speed.requests[0].connect_ms is not None
    assert all(r.connect_ms is None for r in speed.requests[1:])
    assert speed.include_usage_supported is True
    assert speed.token_param == "max_completion_tokens"
    assert_schedule_medians(speed.requests)
    summary = speed.summary()
    assert summary["ttft_ms"]["p50"] == pytest.approx(80.0, abs=TOLERANCE_MS)
    assert summary["success_rate"] == 1.0


def test_ten_parallel_streams_match_the_schedule(scheduled):
    scheduled.reset()
    speed = run(run_speed_suite(config_for(scheduled), input_tokens=100, max_tokens=64, requests=10, concurrency=10))
    assert [r.index for r in speed.requests] == list(range(10))
    actual = actual_timeline(scheduled)
    for result in speed.requests:
        assert_matches(result, actual)
    sent = scheduled.chat_requests
    assert len(sent) == 11, "ten measured requests after one unrecorded parameter-settling request"
    prompts = {r["body"]["messages"][0]["content"] for r in sent}
    assert len(prompts) == 11, "every request must carry a unique prompt (defeats prefix caches)"


def test_what_the_client_sends(scheduled):
    scheduled.reset()
    run(run_speed_suite(config_for(scheduled), input_tokens=1000, max_tokens=64, requests=1, concurrency=1))
    (request,) = scheduled.chat_requests
    body = request["body"]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body
    assert request["headers"]["accept-encoding"] == "identity"
    assert request["headers"]["accept"] == "text/event-stream"
    words = len(body["messages"][0]["content"].split())
    assert 900 <= words <= 1000


def test_headers_time_is_separate_from_ttft(simulator_factory):
    sim = simulator_factory("openai", schedule={"headers_delay_ms": 60, "ttft_ms": 90, "itl_ms": 5, "tokens": 10})
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=32, requests=1, concurrency=1))
    (result,) = speed.requests
    assert result.headers_ms == pytest.approx(60.0, abs=TOLERANCE_MS)
    assert result.ttft_ms == pytest.approx(90.0, abs=TOLERANCE_MS)


def test_stream_released_in_one_clump_is_flagged_buffered(simulator_factory):
    sim = simulator_factory("openai", schedule={"ttft_ms": 50, "itl_ms": 0, "tokens": 40, "reasoning_tokens": 0})
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=64, requests=1, concurrency=1))
    (result,) = speed.requests
    assert result.ok
    assert result.buffered is True
    assert result.e2e_ms - result.ttft_ms < 5


def test_include_usage_rejected_is_retried_without_it_and_tokens_are_estimated(simulator_factory):
    sim = simulator_factory(
        "openai", reject_stream_options=True, schedule={"ttft_ms": 10, "itl_ms": 2, "tokens": 12, "reasoning_tokens": 0}
    )
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=32, requests=2, concurrency=1))
    assert all(r.ok for r in speed.requests)
    assert speed.include_usage_supported is False
    assert speed.request_params["stream_options"] is None
    assert all(r.output_tokens_source == "estimate" for r in speed.requests)
    # Twelve 5-character tokens estimated at ceil(5/4) = 2 each: an estimate, and labelled as one.
    assert speed.requests[0].output_tokens == 24
    bodies = [r["body"] for r in sim.chat_requests]
    assert "stream_options" in bodies[0] and "stream_options" not in bodies[1] and "stream_options" not in bodies[2]


def test_max_completion_tokens_rejected_falls_back_to_max_tokens(simulator_factory):
    sim = simulator_factory(
        "openai", reject_max_completion_tokens=True, schedule={"ttft_ms": 10, "itl_ms": 2, "tokens": 12}
    )
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=32, requests=2, concurrency=2))
    assert all(r.ok for r in speed.requests), [r.error_message for r in speed.requests]
    assert speed.token_param == "max_tokens"
    assert speed.include_usage_supported is True


def test_ignored_length_parameter_is_caught_and_switched(simulator_factory):
    # Together's simulator drops max_completion_tokens (not in its spec: T4 in the Sources section of
    # docs/probes-measurement.md).
    sim = simulator_factory("together", schedule={"ttft_ms": 5, "itl_ms": 0.2})
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=16, requests=3, concurrency=1))
    assert all(r.ok and r.output_tokens == 16 for r in speed.requests), "the capped attempt is retried, not lost"
    assert speed.token_param == "max_tokens"
    sent = [request["body"] for request in sim.chat_requests]
    assert "max_completion_tokens" in sent[0] and all("max_tokens" in body for body in sent[1:])
    assert len(sent) == 4
    assert len({body["messages"][0]["content"] for body in sent}) == 4, "the retry gets a fresh prompt"


def test_parallel_run_settles_the_length_parameter_before_the_streams_start(simulator_factory):
    sim = simulator_factory("together", schedule={"ttft_ms": 5, "itl_ms": 0.2})
    speed = run(run_speed_suite(config_for(sim), input_tokens=100, max_tokens=16, requests=4, concurrency=4))
    assert [r.error_class for r in speed.requests] == ["", "", "", ""]
    sent = [request["body"] for request in sim.chat_requests]
    # One settling attempt is cut and retried with max_tokens; the four measured streams use max_tokens only.
    assert len(sent) == 6
    assert "max_completion_tokens" in sent[0]
    assert all("max_tokens" in body and "max_completion_tokens" not in body for body in sent[1:])


def test_callback_and_cli_shape(simulator_factory):
    sim = simulator_factory("openai", schedule={"ttft_ms": 5, "itl_ms": 1, "tokens": 6})
    seen = []
    speed = run(
        run_speed_suite(
            config_for(sim), input_tokens=100, max_tokens=16, requests=4, concurrency=2, on_request_done=seen.append
        )
    )
    assert sorted(r.index for r in seen) == [0, 1, 2, 3]
    document = speed.to_json()
    request = document["requests"][0]
    assert set(request) == {
        "ttft_ms", "ttfat_ms", "headers_ms", "e2e_ms", "output_tokens", "output_tokens_source",
        "output_speed_tps", "tpot_ms", "itl_ms", "chunks", "buffered", "error",
    }  # fmt: skip
    assert set(request["itl_ms"]) == {"p50", "p95", "p99"}
    assert {"ttft_ms", "output_speed_tps", "e2e_ms"} <= set(document["summary"])
    assert set(document["summary"]["ttft_ms"]) == {"p50", "p95", "p99"}
    fields = speed.requests[0].as_fields()
    assert "raw_stamps" not in fields and fields["index"] == 0
