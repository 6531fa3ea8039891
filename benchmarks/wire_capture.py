"""A yardstick outside every tool: a packet capture on the loopback interface, read back per connection.

:class:`LoopbackCapture` runs ``tcpdump`` on ``lo`` for the simulator's port while a tool measures, with
nanosecond kernel stamps; :func:`read_exchanges` reassembles each TCP connection from the file (dpkt) and
returns, for every chat completion request on it, when the request's last byte crossed the interface, when the
first and the last token-bearing SSE event of its answer did, the answer's id and its token events. Those are
the moments every client means by "request sent" and "token received", stamped by the kernel the same way for
every tool, whatever its process or its scheduling.

Both directions cross ``lo`` as one packet each (the capture sees the receive side), so a packet's stamp is the
moment it was handed to the receiver's socket. An SSE event split across packets counts from the packet that
completed it.
"""
from __future__ import annotations

import bisect
import json
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import dpkt

EVENT = re.compile(rb"data: (\{[^\n]*\})\n\n")
LISTENING_TIMEOUT_S = 10.0
SETTLE_S = 0.2  # for tcpdump to write the last packets it was handed before it is stopped


@dataclass
class WireExchange:
    """One request and its answer as the capture saw them; stamps in ns of CLOCK_REALTIME (the capture's)."""

    client_port: int
    path: str
    sent_ns: int
    response_id: str = ""
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    token_events: int = 0

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_token_ns is None else (self.first_token_ns - self.sent_ns) / 1e6

    @property
    def tpot_ms(self) -> float | None:
        if self.first_token_ns is None or self.token_events < 2:
            return None
        return (self.last_token_ns - self.first_token_ns) / 1e6 / (self.token_events - 1)


@dataclass
class _Direction:
    """One direction of a TCP connection: its bytes in order, and the stamp of the packet that carried each
    stretch of them (``ends[i]`` is the offset just past the bytes of packet ``stamps[i]``)."""

    next_seq: int | None = None
    data: bytearray = field(default_factory=bytearray)
    ends: list = field(default_factory=list)
    stamps: list = field(default_factory=list)
    pending: dict = field(default_factory=dict)

    def add(self, seq: int, payload: bytes, stamp: int, syn: bool) -> None:
        if syn:
            self.next_seq = (seq + 1) & 0xFFFFFFFF
            return
        if not payload:
            return
        if self.next_seq is None:  # the capture started inside this connection
            self.next_seq = seq
        self.pending.setdefault(seq, (payload, stamp))
        while self.pending:
            ahead = {(s - self.next_seq) & 0xFFFFFFFF: s for s in self.pending}
            offset = min(ahead)
            if offset >= 0x80000000:  # an old retransmission, wholly before what was read
                start = ahead[offset]
                piece, piece_stamp = self.pending.pop(start)
                overlap = (self.next_seq - start) & 0xFFFFFFFF
                if overlap < len(piece):
                    self.pending[self.next_seq] = (piece[overlap:], piece_stamp)
                continue
            if offset != 0:
                return  # a gap: wait for the missing segment
            piece, piece_stamp = self.pending.pop(self.next_seq)
            self.data += piece
            self.ends.append(len(self.data))
            self.stamps.append(piece_stamp)
            self.next_seq = (self.next_seq + len(piece)) & 0xFFFFFFFF

    def stamp_at(self, offset: int) -> int:
        """The stamp of the packet that carried the byte at ``offset``."""
        return self.stamps[bisect.bisect_right(self.ends, offset)]


def _requests(stream: _Direction) -> list[tuple[str, int]]:
    """(method and path, offset of the last byte) of each HTTP/1.1 request sent on one connection."""
    found, position, data = [], 0, bytes(stream.data)
    while True:
        head_end = data.find(b"\r\n\r\n", position)
        if head_end < 0:
            return found
        head = data[position:head_end].decode("latin-1")
        request_line, _, headers = head.partition("\r\n")
        length = 0
        for line in headers.split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        end = head_end + 4 + length
        if end > len(data):
            return found
        found.append((" ".join(request_line.split(" ")[:2]), end - 1))
        position = end


def _answers(stream: _Direction) -> list[tuple[int, int]]:
    """(start, end) offsets of each HTTP response on one connection, in order (no pipelining in HTTP/1.1
    clients, so the k-th answer belongs to the k-th request)."""
    data = bytes(stream.data)
    starts = [m.start() for m in re.finditer(rb"HTTP/1\.1 \d{3} ", data)]
    return list(zip(starts, starts[1:] + [len(data)]))


def _has_token(event: dict) -> bool:
    for choice in event.get("choices") or ():
        delta = choice.get("delta") or {}
        if delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning") or delta.get("tool_calls"):
            return True
    return False


def read_exchanges(path: Path, server_port: int) -> list[WireExchange]:
    """Every chat completion request in the capture, in the order their answers began."""
    connections: dict[int, tuple[_Direction, _Direction]] = {}
    with open(path, "rb") as handle:
        reader = dpkt.pcap.Reader(handle)
        for stamp, frame in reader:
            ip = dpkt.ethernet.Ethernet(frame).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP):
                continue
            segment = ip.data
            to_server = segment.dport == server_port
            client_port = segment.sport if to_server else segment.dport
            pair = connections.setdefault(client_port, (_Direction(), _Direction()))
            direction = pair[0] if to_server else pair[1]
            direction.add(segment.seq, bytes(segment.data), int(stamp * 1_000_000_000), bool(segment.flags & dpkt.tcp.TH_SYN))
    exchanges = []
    for client_port, (outbound, inbound) in connections.items():
        data = bytes(inbound.data)
        for (target, last_byte), (start, end) in zip(_requests(outbound), _answers(inbound)):
            if not target.startswith("POST ") or not target.endswith("/chat/completions"):
                continue
            exchange = WireExchange(client_port=client_port, path=target[5:], sent_ns=outbound.stamp_at(last_byte))
            for match in EVENT.finditer(data, start, end):
                try:
                    event = json.loads(match.group(1))
                except ValueError:
                    continue
                exchange.response_id = exchange.response_id or str(event.get("id", ""))
                if _has_token(event):
                    arrived = inbound.stamp_at(match.end() - 1)
                    if exchange.first_token_ns is None:
                        exchange.first_token_ns = arrived
                    exchange.last_token_ns = arrived
                    exchange.token_events += 1
            exchanges.append(exchange)
    exchanges.sort(key=lambda exchange: exchange.sent_ns)
    return exchanges


class LoopbackCapture:
    """``tcpdump`` on ``lo`` for one TCP port, into ``path``, for the duration of a ``with`` block. Needs
    tcpdump and the right to capture (root, or CAP_NET_RAW). ``dropped`` is the kernel's count of packets it
    could not hand to the capture (any drop leaves a connection incomplete; the caller should say so)."""

    def __init__(self, port: int, path: Path) -> None:
        self.port = port
        self.path = path
        self.dropped: int | None = None
        self._process: subprocess.Popen | None = None

    @staticmethod
    def available() -> str | None:
        """Why a capture cannot run here, or None when it can."""
        if shutil.which("tcpdump") is None:
            return "tcpdump is not installed (apt-get install tcpdump)"
        probe = subprocess.run(["tcpdump", "-i", "lo", "-c", "0", "-w", "/dev/null"], capture_output=True, text=True)
        if "permission" in probe.stderr.lower() or "operation not permitted" in probe.stderr.lower():
            return "tcpdump may not capture here (needs root or CAP_NET_RAW)"
        return None

    def __enter__(self) -> LoopbackCapture:
        # --immediate-mode: without it the kernel hands packets over in blocks, up to a second late, and those
        # still in the ring when tcpdump is stopped are lost (the last answer of every connection). -B: a
        # 64 MiB buffer, so that a burst of 256 streams is not dropped while tcpdump waits for a core.
        self._process = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-w", str(self.path), "-s", "0", "-B", "65536", "-n", "--immediate-mode",
             "--time-stamp-precision=nano", f"tcp port {self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + LISTENING_TIMEOUT_S
        line = ""
        while "listening on" not in line:
            line = self._process.stderr.readline()
            if not line and self._process.poll() is not None or time.monotonic() > deadline:
                self._process.kill()
                raise RuntimeError(f"tcpdump did not start: {line.strip()!r}")
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(SETTLE_S)
        self._process.send_signal(signal.SIGINT)
        _, errors = self._process.communicate(timeout=30)
        found = re.search(r"(\d+) packets? dropped by kernel", errors)
        self.dropped = int(found.group(1)) if found else None
