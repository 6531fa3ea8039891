"""A strict, incremental Server-Sent Events decoder (WHATWG "event stream interpretation").

It is fed the raw network reads *after* the stream has been received, each with the ``perf_counter_ns`` stamp
taken in the read loop, so parsing never delays a stamp. Every event carries the stamp of the read that
completed it (the read holding its terminating blank line). Feeding the same bytes cut at any points yields
the same events with the same stamps-by-byte-offset; the property test in ``tests/probe_client`` checks it.

Handled: LF, CR and CRLF line endings (a CRLF split across two reads counts once); ``data:`` with or without
the optional space; multi-line ``data`` joined with ``\\n``; ``:`` comment/keep-alive lines; ``event``, ``id``
(ignored when it contains NUL) and ``retry`` fields; a leading byte-order mark. Strictness: unknown field
names, invalid UTF-8 and lines or events above their caps are recorded in ``problems``; a final event without
its terminating blank line is not dispatched and is kept in ``truncated_data``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_LINE_BYTES = 1 << 20
MAX_EVENT_BYTES = 4 << 20


@dataclass(slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    received_ns: int = 0
    read_index: int = 0


@dataclass
class SSEDecoder:
    max_line_bytes: int = MAX_LINE_BYTES
    max_event_bytes: int = MAX_EVENT_BYTES
    comments: int = 0
    problems: list[str] = field(default_factory=list)
    truncated_data: str | None = None
    _partial: bytearray = field(default_factory=bytearray)
    _skip_lf: bool = False
    _started: bool = False
    _data_lines: list[str] = field(default_factory=list)
    _data_bytes: int = 0
    _has_data: bool = False
    _event_type: str = ""
    _last_id: str | None = None
    _closed: bool = False

    def feed(self, chunk: bytes, received_ns: int = 0, read_index: int = 0) -> list[SSEEvent]:
        """Decode one network read; returns the events it completed, in order."""
        if self._closed:
            raise RuntimeError("decoder is closed")
        events: list[SSEEvent] = []
        if not chunk:
            return events
        view = memoryview(chunk)
        position = 0
        length = len(chunk)
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0:1] == b"\n":
                position = 1
        while position < length:
            cr = chunk.find(b"\r", position)
            lf = chunk.find(b"\n", position)
            if cr == -1 and lf == -1:
                self._append_partial(view[position:])
                break
            if cr == -1 or (lf != -1 and lf < cr):
                end, next_position = lf, lf + 1
            else:
                end = cr
                if cr + 1 < length:
                    next_position = cr + 2 if chunk[cr + 1 : cr + 2] == b"\n" else cr + 1
                else:
                    next_position = cr + 1
                    self._skip_lf = True
            self._append_partial(view[position:end])
            line = bytes(self._partial)
            self._partial.clear()
            event = self._process_line(line, received_ns, read_index)
            if event is not None:
                events.append(event)
            position = next_position
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream. A pending, unterminated event is not dispatched (see ``truncated_data``)."""
        self._closed = True
        if self._partial:
            line = bytes(self._partial)
            self._partial.clear()
            self._process_line(line, 0, 0, dispatch=False)
        if self._has_data:
            self.truncated_data = "\n".join(self._data_lines)
        return []

    def _append_partial(self, piece: memoryview) -> None:
        if len(self._partial) + len(piece) > self.max_line_bytes:
            if "line_too_long" not in self.problems:
                self.problems.append("line_too_long")
            return
        self._partial += piece

    def _process_line(self, raw: bytes, received_ns: int, read_index: int, dispatch: bool = True) -> SSEEvent | None:
        if not self._started:
            self._started = True
            if raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
        if not raw:
            return self._dispatch(received_ns, read_index) if dispatch else None
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.problems.append("invalid_utf8")
            line = raw.decode("utf-8", "replace")
        if line.startswith(":"):
            self.comments += 1
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data_bytes += len(raw)
            if self._data_bytes > self.max_event_bytes:
                if "event_too_large" not in self.problems:
                    self.problems.append("event_too_large")
                return None
            self._data_lines.append(value)
            self._has_data = True
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            pass
        else:
            if len(self.problems) < 20:
                self.problems.append(f"unknown_field:{name[:40]}")
        return None

    def _dispatch(self, received_ns: int, read_index: int) -> SSEEvent | None:
        if not self._has_data:
            self._event_type = ""
            return None
        event = SSEEvent(
            data="\n".join(self._data_lines),
            event=self._event_type or "message",
            id=self._last_id,
            received_ns=received_ns,
            read_index=read_index,
        )
        self._data_lines = []
        self._data_bytes = 0
        self._has_data = False
        self._event_type = ""
        return event


def decode_reads(reads: list[tuple[int, bytes]]) -> tuple[list[SSEEvent], SSEDecoder]:
    """Decode a whole list of stamped reads; returns the events and the decoder (for its problems/comments)."""
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for index, (stamp, chunk) in enumerate(reads):
        events.extend(decoder.feed(chunk, stamp, index))
    decoder.close()
    return events, decoder
