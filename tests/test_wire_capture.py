"""benchmarks/wire_capture.py reads a loopback capture back per connection: written here packet by packet with
dpkt at known times, so every stamp it must return is known."""

import json
import sys
from decimal import Decimal
from pathlib import Path

import dpkt
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from wire_capture import WireExchange, read_exchanges  # noqa: E402

SERVER, CLIENT = 8000, 51000
T0 = 1_800_000_000


class Connection:
    """One TCP connection's packets, in both directions, with their sequence numbers kept."""

    def __init__(self, writer, client_port: int) -> None:
        self.writer = writer
        self.port = client_port
        self.seq = {True: 1000, False: 5000}

    def packet(self, at_ms: float, payload: bytes = b"", *, to_server: bool, syn: bool = False,
               seq: int | None = None) -> None:
        segment = dpkt.tcp.TCP(
            sport=self.port if to_server else SERVER, dport=SERVER if to_server else self.port,
            seq=self.seq[to_server] if seq is None else seq, flags=dpkt.tcp.TH_SYN if syn else dpkt.tcp.TH_ACK,
            data=payload,
        )
        ip = dpkt.ip.IP(src=b"\x7f\x00\x00\x01", dst=b"\x7f\x00\x00\x01", p=dpkt.ip.IP_PROTO_TCP, data=segment)
        frame = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        self.writer.writepkt(bytes(frame), ts=Decimal(T0) + Decimal(str(at_ms)) / 1000)
        if seq is None:
            self.seq[to_server] += 1 if syn else len(payload)


def event(response_id: str, delta: dict) -> bytes:
    data = {"id": response_id, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    chunk = b"data: " + json.dumps(data).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(chunk), chunk)


def request(body: bytes) -> tuple[bytes, bytes]:
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: {len(body)}\r\n\r\n").encode()
    return head, body


def test_requests_and_token_events_are_stamped_by_the_packets_that_carried_them(tmp_path):
    path = tmp_path / "capture.pcap"
    with open(path, "wb") as handle:
        writer = dpkt.pcap.Writer(handle, nano=True)
        conn = Connection(writer, CLIENT)
        conn.packet(0.0, to_server=True, syn=True)
        conn.packet(0.01, to_server=False, syn=True)
        head, body = request(b'{"stream": true}')
        conn.packet(1.0, head, to_server=True)
        conn.packet(1.5, body, to_server=True)  # the request is sent when its last byte is
        conn.packet(3.0, b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", to_server=False)
        conn.packet(3.1, event("first", {"role": "assistant", "content": ""}), to_server=False)
        token = event("first", {"content": " word"})
        conn.packet(21.0, token[:20], to_server=False)
        conn.packet(21.4, token[20:], to_server=False)  # an event counts from the packet that completed it
        retransmitted = event("first", {"content": " word"})
        conn.packet(51.5, retransmitted, to_server=False)
        conn.packet(51.9, retransmitted, to_server=False, seq=conn.seq[False] - len(retransmitted))
        conn.packet(52.0, b"data: [DONE]\n\n" + b"0\r\n\r\n", to_server=False)
        # The same connection kept alive for a second request.
        head, body = request(b'{"stream": true, "n": 2}')
        conn.packet(60.0, head + body, to_server=True)
        conn.packet(61.0, b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", to_server=False)
        conn.packet(85.0, event("second", {"content": " word"}), to_server=False)
        # A request whose answer is not a chat completion, on another connection, is left out.
        other = Connection(writer, CLIENT + 1)
        other.packet(70.0, b"GET /v1/models HTTP/1.1\r\nhost: x\r\n\r\n", to_server=True)
        other.packet(71.0, b'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}', to_server=False)

    first, second = read_exchanges(path, SERVER)
    assert (first.response_id, first.client_port, first.path) == ("first", CLIENT, "/v1/chat/completions")
    assert first.ttft_ms == pytest.approx(21.4 - 1.5, abs=1e-6)
    assert first.token_events == 2 and first.tpot_ms == pytest.approx(51.5 - 21.4, abs=1e-6)
    assert (second.response_id, second.token_events) == ("second", 1)
    assert second.ttft_ms == pytest.approx(25.0, abs=1e-6)


def test_a_tools_requests_are_cut_into_levels_only_where_one_level_had_ended():
    from sweep_accuracy import split_levels

    def exchange(sent_ms: int, last_ms: int) -> WireExchange:
        return WireExchange(client_port=1, path="/v1/chat/completions", sent_ns=sent_ms * 10**6,
                            first_token_ns=(sent_ms + 1) * 10**6, last_token_ns=last_ms * 10**6)

    one_stream = [exchange(0, 10), exchange(11, 20)]
    two_streams = [exchange(21, 40), exchange(22, 35), exchange(36, 50), exchange(41, 55)]
    first, second = split_levels(two_streams[::-1] + one_stream, [2, 4])
    assert first == one_stream and second == two_streams
    # Cut after three requests, the fourth would start while the third was still answering.
    with pytest.raises(ValueError, match="began before the level"):
        split_levels(one_stream + two_streams, [3, 3])
    with pytest.raises(ValueError, match="6 chat requests, 5 were asked for"):
        split_levels(one_stream + two_streams, [2, 3])
