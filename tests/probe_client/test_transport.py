"""The sweep's reading thread: libc's recvmsg called with the GIL held gives what the socket module's gives (the bytes
and the kernel's receive stamp), and the thread lowers the switch interval only while it runs."""
from __future__ import annotations

import asyncio
import socket
import sys
import time

import pytest

from probe_client.transport import (
    READ_CHUNK,
    SO_TIMESTAMPNS,
    ReadingThread,
    _GilHoldingReceiver,
    _kernel_stamp,
)


@pytest.fixture
def connected():
    """A loopback TCP connection whose receiving end is non-blocking and stamped by the kernel."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    client.setblocking(False)
    time.sleep(0.1)  # the kernel turns receive stamping on for the system by deferred work, not at once
    yield accepted, client
    accepted.close()
    client.close()


def _wait_readable(sock: socket.socket) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            if sock.recv(1, socket.MSG_PEEK):
                return
        except BlockingIOError:
            time.sleep(0.001)
    raise AssertionError("nothing arrived")


def test_the_gil_holding_receive_gives_the_bytes_and_the_kernel_stamp(connected):
    sender, receiver_socket = connected
    receiver = _GilHoldingReceiver()
    with pytest.raises(BlockingIOError):
        receiver.receive(receiver_socket.fileno())

    before = time.perf_counter_ns()
    sender.sendall(b"data: {\"token\": 1}\n\n")
    _wait_readable(receiver_socket)
    data, ancillary = receiver.receive(receiver_socket.fileno())
    assert data == b"data: {\"token\": 1}\n\n"
    [(level, kind, raw)] = ancillary
    assert (level, kind, len(raw)) == (socket.SOL_SOCKET, SO_TIMESTAMPNS, 16)
    stamp = _kernel_stamp(ancillary)
    assert stamp is not None and before - 1_000_000 <= stamp <= time.perf_counter_ns()

    sender.sendall(b"x" * (READ_CHUNK + 10))
    _wait_readable(receiver_socket)
    received = b""
    while len(received) < READ_CHUNK + 10:
        try:
            received += receiver.receive(receiver_socket.fileno())[0]
        except BlockingIOError:
            time.sleep(0.001)
    assert received == b"x" * (READ_CHUNK + 10)

    sender.close()
    time.sleep(0.05)
    assert receiver.receive(receiver_socket.fileno())[0] == b""


def test_a_receive_on_a_closed_descriptor_is_an_os_error():
    with pytest.raises(OSError) as raised:
        _GilHoldingReceiver().receive(-1)
    assert not isinstance(raised.value, BlockingIOError)


def test_the_switch_interval_is_lowered_while_any_reading_thread_runs_and_restored_after():
    usual = sys.getswitchinterval()
    loop = asyncio.new_event_loop()
    try:
        first = ReadingThread(loop)
        second = ReadingThread(loop)
        assert sys.getswitchinterval() == pytest.approx(ReadingThread.SWITCH_INTERVAL_S)
        first.close()
        assert sys.getswitchinterval() == pytest.approx(ReadingThread.SWITCH_INTERVAL_S)
        second.close()
        assert sys.getswitchinterval() == usual
    finally:
        loop.close()
