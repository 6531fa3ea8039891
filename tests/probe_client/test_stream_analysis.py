"""Stream analysis on hand-built streams (pure data through the real decoder and the metric rules)."""

import json

import pytest

from probe_client.http import Exchange
from probe_client.stream_analysis import TokenEvent, is_buffered, measure, tokens_per_chunk

MS = 1_000_000


def sse(payload) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def chunk(delta=None, finish=None, usage=None, choices=True):
    body = {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []}
    if usage is not None:
        body["usage"] = usage
    return sse(body)


def exchange_of(timed_reads, *, done=True, headers=None):
    reads = [(t * MS, data) for t, data in timed_reads]
    if done:
        reads.append((reads[-1][0] + MS, b"data: [DONE]\n\n"))
    ex = Exchange(start_ns=0, started_wall=0.0, written_ns=0, headers_ns=MS, status=200)
    ex.headers = {"content-type": "text/event-stream", **(headers or {})}
    ex.reads = reads
    ex.eof = True
    return ex


def test_role_only_and_empty_chunks_do_not_stop_the_clock():
    ex = exchange_of(
        [
            (10, chunk({"role": "assistant", "content": ""})),
            (20, chunk({"content": ""})),
            (30, chunk({"content": "Hi"})),
            (40, chunk({"content": " there"})),
            (41, chunk(finish="stop")),
            (90, chunk(usage={"prompt_tokens": 5, "completion_tokens": 2}, choices=False)),
        ]
    )
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.ok
    assert result.ttft_ms == 30 and result.ttfat_ms == 30
    assert result.e2e_ms == 40, "the usage chunk and [DONE] must not stretch E2E"
    assert result.output_tokens == 2 and result.output_tokens_source == "usage"
    assert result.input_tokens == 5
    assert result.tpot_ms == 10
    assert result.output_speed_tps == pytest.approx(1 / 0.010)


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
def test_reasoning_counts_for_ttft_not_for_ttfat(field):
    ex = exchange_of(
        [
            (10, chunk({field: "think"})),
            (50, chunk({"content": "answer"})),
            (51, chunk(finish="stop")),
        ]
    )
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.ttft_ms == 10 and result.ttfat_ms == 50
    assert result.output_tokens_source == "estimate"


def test_tool_call_delta_is_a_token():
    ex = exchange_of(
        [
            (10, chunk({"role": "assistant"})),
            (
                25,
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": ""},
                            }
                        ]
                    }
                ),
            ),
            (30, chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]})),
            (31, chunk(finish="tool_calls")),
        ]
    )
    result, analysis = measure(ex, index=0, read_timeout_s=5)
    assert result.ttft_ms == 25 and result.ttfat_ms == 25
    assert analysis.tool_calls[(0, 0)] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}


def test_in_stream_error_object_and_invalid_json_are_classified():
    ex = exchange_of([(10, chunk({"content": "a"})), (20, sse({"error": {"message": "engine died"}}))])
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.error_class == "stream_error_event" and "engine died" in result.error_message
    assert result.ttft_ms == 10
    ex = exchange_of([(10, chunk({"content": "a"})), (20, b"data: {not json\n\n"), (21, chunk(finish="stop"))])
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.error_class == "invalid_json"


def test_truncated_final_event_is_malformed():
    ex = exchange_of([(10, chunk({"content": "a"})), (20, b'data: {"choices": [')], done=False)
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.error_class == "malformed_sse"


def test_done_without_trailing_blank_line_is_accepted():
    ex = exchange_of(
        [(10, chunk({"content": "a"})), (11, chunk({"content": "b"})), (12, b"data: [DONE]\n")], done=False
    )
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.ok


def test_non_sse_success_is_unexpected_content_type():
    ex = exchange_of([(10, b'{"choices": []}')], done=False, headers={"content-type": "application/json"})
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.error_class == "unexpected_content_type"


def test_server_timings_and_request_id_are_collected():
    ex = exchange_of(
        [
            (10, sse({"choices": [{"index": 0, "delta": {"content": "a"}}], "x_groq": {"id": "req_123"}})),
            (
                20,
                sse(
                    {
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                        "timings": {"predicted_ms": 9.5},
                        "time_info": {"total_time": 0.1},
                        "perf_metrics": {"x": 1},
                    }
                ),
            ),
        ],
        headers={"x-compute-time": "0.2"},
    )
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.request_id == "req_123"
    assert result.server_timings["timings"] == {"predicted_ms": 9.5}
    assert result.server_timings["time_info"] == {"total_time": 0.1}
    assert result.server_timings["perf_metrics"] == {"x": 1}
    assert result.server_timings["headers"] == {"x-compute-time": "0.2"}


def test_tokens_per_chunk_rules():
    events = [TokenEvent(0, 0, chars, "content", True) for chars in (10, 10, 20)]
    assert tokens_per_chunk(events, 8) == [2, 2, 4]
    assert tokens_per_chunk(events, None) == [3, 3, 5]
    continuous = [TokenEvent(0, 0, 4, "content", True, cumulative_tokens=c) for c in (1, 3, 4)]
    assert tokens_per_chunk(continuous, 4) == [1, 2, 1]


def test_buffered_flag_is_about_shared_reads_not_short_gaps():
    def events(reads):
        return [TokenEvent(0, read, 4, "content", True) for read in reads]

    assert is_buffered(events([3, 3, 3, 3, 3, 4]))
    assert not is_buffered(events([1, 2, 3, 4, 5])), "a fast stream with one read per token is not buffered"
    assert not is_buffered(events([1, 1])), "too few chunks to say"
    # Tokens 0.1 ms apart, each in its own read (a fast engine), are a real stream.
    fast = exchange_of([(10 + i * 0.1, chunk({"content": "ab"})) for i in range(20)] + [(13, chunk(finish="stop"))])
    result, _ = measure(fast, index=0, read_timeout_s=5)
    assert result.ok and not result.buffered
    clumped = exchange_of([(10, b"".join(chunk({"content": "ab"}) for _ in range(20))), (11, chunk(finish="stop"))])
    result, _ = measure(clumped, index=0, read_timeout_s=5)
    assert result.buffered


def test_error_event_with_plain_text_data_is_a_stream_error():
    ex = exchange_of([(10, chunk({"content": "a"})), (20, b"event: error\ndata: upstream overloaded\n\n")])
    result, _ = measure(ex, index=0, read_timeout_s=5)
    assert result.error_class == "stream_error_event"
    assert "upstream overloaded" in result.error_message
