"""The strict SSE decoder: same events and same stamps-by-byte-offset however the bytes are cut."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe_client.sse import SSEDecoder, decode_reads


def feed_all(pieces: list[bytes]) -> tuple[list, SSEDecoder]:
    decoder = SSEDecoder()
    events = []
    for index, piece in enumerate(pieces):
        events.extend(decoder.feed(piece, received_ns=1000 + index, read_index=index))
    decoder.close()
    return events, decoder


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(p for p in points if 0 < p < len(data))), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


line_end = st.sampled_from([b"\n", b"\r", b"\r\n"])
safe_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=30)


@st.composite
def event_streams(draw):
    """A byte stream of events written with any line ending, optional space, comments and multi-line data."""
    parts = []
    expected = []
    if draw(st.booleans()):
        parts.append(b"\xef\xbb\xbf")
    for _ in range(draw(st.integers(0, 6))):
        end = draw(line_end)
        if draw(st.booleans()):
            parts.append(b":" + draw(safe_text).encode() + end)
        event_type = draw(st.sampled_from([None, "message", "error"]))
        if event_type:
            parts.append(b"event: " + event_type.encode() + end)
        lines = draw(st.lists(safe_text, min_size=1, max_size=3))
        end = b""
        for line in lines:
            space = b" " if draw(st.booleans()) or line.startswith(" ") else b""
            end = draw(line_end)
            parts.append(b"data:" + space + line.encode() + end)
        # A lone CR followed by LF would be one CRLF line ending, not an empty line.
        parts.append(draw(st.sampled_from([b"\r", b"\r\n"])) if end == b"\r" else draw(line_end))
        expected.append((event_type or "message", "\n".join(lines)))
    return b"".join(parts), expected


@settings(max_examples=300, deadline=None)
@given(stream=event_streams(), points=st.lists(st.integers(0, 400), max_size=12))
def test_any_cut_yields_same_events_and_same_receive_order(stream, points):
    data, expected = stream
    # The reference: one byte per read, so each event's read_index is the byte offset that completed it.
    reference, _ = feed_all([data[i : i + 1] for i in range(len(data))])
    assert [(e.event, e.data) for e in reference] == expected

    pieces = cut(data, points)
    events, decoder = feed_all(pieces)
    assert [(e.event, e.data) for e in events] == expected
    assert decoder.problems == []
    # Each event is stamped with the read that held the byte completing it, so stamps never go backwards.
    starts = [0]
    for piece in pieces:
        starts.append(starts[-1] + len(piece))
    for ref, event in zip(reference, events):
        completing_offset = ref.read_index
        owner = next(i for i in range(len(pieces)) if starts[i] <= completing_offset < starts[i + 1])
        # A CR whose LF arrives in the next read completes the line at the CR.
        assert event.read_index == owner
        assert event.received_ns == 1000 + owner
    assert [e.received_ns for e in events] == sorted(e.received_ns for e in events)


@pytest.mark.parametrize(
    "raw",
    [
        b"data: hello\n\n",
        b"data:hello\n\n",
        b"data: hello\r\n\r\n",
        b"data: hello\r\r",
        b": keep-alive\ndata: hello\n\n",
        b":\n\ndata: hello\n\n",
        b"id: 7\nretry: 10\ndata: hello\n\n",
    ],
    ids=["lf", "no-space", "crlf", "cr", "comment", "empty-comment", "id-retry"],
)
def test_line_endings_and_comment_forms(raw):
    events, decoder = feed_all([raw])
    assert [e.data for e in events] == ["hello"]
    assert decoder.problems == []


def test_crlf_split_across_reads_is_one_line_ending():
    events, _ = feed_all([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"])
    assert [e.data for e in events] == ["a", "b"]
    assert [e.read_index for e in events] == [1, 2]


def test_multi_line_data_is_joined_with_newline():
    events, _ = feed_all([b'data: {"a":\ndata: 1}\n\n'])
    assert json.loads(events[0].data) == {"a": 1}


def test_comments_are_counted_not_dispatched():
    events, decoder = feed_all([b": ping\n: ping\n\n"])
    assert events == [] and decoder.comments == 2


def test_truncated_final_event_is_not_dispatched():
    events, decoder = feed_all([b'data: one\n\ndata: {"partial": tr'])
    assert [e.data for e in events] == ["one"]
    assert decoder.truncated_data == '{"partial": tr'


def test_event_error_type_is_kept():
    events, _ = feed_all([b'event: error\ndata: {"error": {"message": "x"}}\n\n'])
    assert events[0].event == "error"


def test_unknown_fields_and_invalid_utf8_are_problems():
    _, decoder = feed_all([b'{"choices": []}\n\n', b"data: \xff\xfe\n\n"])
    assert 'unknown_field:{"choices"' in decoder.problems
    assert "invalid_utf8" in decoder.problems


def test_oversized_line_is_a_problem_and_memory_stays_bounded():
    decoder = SSEDecoder(max_line_bytes=1024)
    decoder.feed(b"data: " + b"x" * 5000)
    assert "line_too_long" in decoder.problems
    assert len(decoder._partial) <= 1024


def test_decode_reads_uses_the_stamps_given():
    events, _ = decode_reads([(50, b"data: a\n"), (70, b"\ndata: b\n\n")])
    assert [(e.data, e.received_ns) for e in events] == [("a", 70), ("b", 70)]


@settings(max_examples=200, deadline=None)
@given(stream=event_streams(), tail=safe_text, points=st.lists(st.integers(0, 400), max_size=8))
def test_truncated_final_event_is_kept_aside_however_the_bytes_are_cut(stream, tail, points):
    data, expected = stream
    data += b"data: " + tail.encode()
    events, decoder = feed_all(cut(data, points))
    assert [(e.event, e.data) for e in events] == expected
    assert decoder.truncated_data == tail
