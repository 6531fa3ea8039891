"""An httpcore network backend that stamps every network read with the time its bytes really arrived.

Why not httpx's default (anyio) backend: its ``send`` yields to the event loop *after* handing the bytes to the
socket, so httpcore's ``send_request_body.complete`` trace event — and any stamp taken after it — comes late by
however long the other coroutines run (measured: up to 12 ms at 10 concurrent streams on a loaded 2-core
machine, which made TTFT read *shorter* than the server's real timeline). Likewise a stamp taken when the read
loop gets a chunk includes the wait for the event loop to resume that coroutine, which grows with the number
of streams (the "naive httpx" column of benchmarks/results/probe_accuracy.md).

Plain TCP (``http://``, self-hosted engines and the simulator): :class:`KernelStampedStream` reads with
``recvmsg`` on a socket with ``SO_TIMESTAMPNS``, so each read carries the kernel's receive time of its newest
packet — independent of when the event loop gets round to it — moved onto the ``perf_counter`` clock.
TLS (``https://``, hosted providers): TLS records do not line up with packets, so the socket is handed to an
``asyncio.Protocol`` (:class:`StampingStream`) whose ``data_received`` — called as soon as the event loop
sees the socket readable, before any coroutine resumes — stamps each arrival with ``time.perf_counter_ns()``.
Either way ``read`` hands the bytes to httpcore and keeps the stamp in ``last_read_ns``, and ``write`` keeps
``last_write_ns``; the probe's read loop pairs each body chunk with ``network_stream.last_read_ns`` (the
response's ``network_stream`` extension), so parsing and scheduling delays never enter the measurement.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import socket
import ssl
import struct
import time
import typing

import httpcore
import httpx
from httpcore._utils import is_socket_readable
from httpx._transports.default import AsyncResponseStream, map_httpcore_exceptions

READ_CHUNK = 65536


class StampingProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.arrivals: collections.deque[tuple[int, bytes]] = collections.deque()
        self.eof = False
        self.error: BaseException | None = None
        self._read_waiter: asyncio.Future | None = None
        self._drain_waiter: asyncio.Future | None = None
        self.paused = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.arrivals.append((time.perf_counter_ns(), data))
        self._wake_reader()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake_reader()
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        self.eof = True
        self.error = exc
        self._wake_reader()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    def _wake_reader(self) -> None:
        if self._read_waiter is not None and not self._read_waiter.done():
            self._read_waiter.set_result(None)

    async def wait_readable(self) -> None:
        self._read_waiter = asyncio.get_running_loop().create_future()
        try:
            await self._read_waiter
        finally:
            self._read_waiter = None

    async def wait_drained(self) -> None:
        self._drain_waiter = asyncio.get_running_loop().create_future()
        try:
            await self._drain_waiter
        finally:
            self._drain_waiter = None


class StampingStream(httpcore.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: StampingProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.last_read_ns: int | None = None
        self.last_write_ns: int | None = None

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        protocol = self._protocol
        if not protocol.arrivals and not protocol.eof:
            try:
                async with asyncio.timeout(timeout):
                    while not protocol.arrivals and not protocol.eof:
                        await protocol.wait_readable()
            except TimeoutError:
                raise httpcore.ReadTimeout("timed out waiting for data") from None
        if protocol.arrivals:
            stamp, data = protocol.arrivals.popleft()
            if len(data) > max_bytes:
                protocol.arrivals.appendleft((stamp, data[max_bytes:]))
                data = data[:max_bytes]
            self.last_read_ns = stamp
            return data
        if protocol.error is not None and not isinstance(protocol.error, (ssl.SSLError,)):
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise httpcore.WriteError("connection closed")
        self._transport.write(buffer)
        self.last_write_ns = time.perf_counter_ns()
        if self._protocol.paused:
            try:
                async with asyncio.timeout(timeout):
                    while self._protocol.paused and not self._transport.is_closing():
                        await self._protocol.wait_drained()
            except TimeoutError:
                raise httpcore.WriteTimeout("timed out writing the request") from None
            self.last_write_ns = time.perf_counter_ns()

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            self._transport.abort()
            raise httpcore.ConnectTimeout("timed out during the TLS handshake") from None
        except (OSError, ssl.SSLError) as error:
            self._transport.abort()
            raise httpcore.ConnectError(str(error)) from None
        self._protocol.transport = transport
        return StampingStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "is_readable":
            # An idle pooled connection that became readable was closed by the server (or sent junk).
            return bool(self._protocol.arrivals) or self._protocol.eof
        return None


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux value; the module constant is not always exported
ANCILLARY_SIZE = socket.CMSG_SPACE(16)
MAX_STAMP_AGE_NS = 10_000_000_000


def _kernel_stamp(ancillary: list) -> int | None:
    """The kernel's receive time of the newest packet in this read, moved onto the perf_counter clock."""
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            seconds, nanoseconds = struct.unpack("qq", raw[:16])
            realtime = seconds * 1_000_000_000 + nanoseconds
            now_perf = time.perf_counter_ns()
            now_real = time.time_ns()
            stamp = realtime - (now_real - now_perf)
            if now_perf - MAX_STAMP_AGE_NS < stamp <= now_perf:
                return stamp
    return None


class KernelStampedStream(httpcore.AsyncNetworkStream):
    """Plain TCP read with ``recvmsg`` and the socket's ``SO_TIMESTAMPNS``: each read carries the time the
    kernel received its newest packet, however late the event loop gets round to reading it. A read that
    gathers several packets gets the newest packet's time; the stamp is then late by at most their spacing."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._loop = asyncio.get_running_loop()
        self.last_read_ns: int | None = None
        self.last_write_ns: int | None = None
        self.kernel_stamps = 0

    async def _wait(self, add, remove, timeout: float | None, error: type[Exception]) -> None:
        future = self._loop.create_future()
        fd = self._sock.fileno()

        def ready() -> None:
            if not future.done():
                future.set_result(None)

        add(fd, ready)
        try:
            async with asyncio.timeout(timeout):
                await future
        except TimeoutError:
            raise error("timed out") from None
        finally:
            remove(fd)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            try:
                data, ancillary, _, _ = self._sock.recvmsg(max_bytes, ANCILLARY_SIZE)
            except (BlockingIOError, InterruptedError):
                await self._wait(self._loop.add_reader, self._loop.remove_reader, timeout, httpcore.ReadTimeout)
                continue
            except OSError as error:
                raise httpcore.ReadError(str(error) or type(error).__name__) from None
            stamp = _kernel_stamp(ancillary) if data else None
            if stamp is not None:
                self.kernel_stamps += 1
            self.last_read_ns = stamp if stamp is not None else time.perf_counter_ns()
            return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            try:
                sent = self._sock.send(view)
            except (BlockingIOError, InterruptedError):
                await self._wait(self._loop.add_writer, self._loop.remove_writer, timeout, httpcore.WriteTimeout)
                continue
            except OSError as error:
                raise httpcore.WriteError(str(error) or type(error).__name__) from None
            view = view[sent:]
        self.last_write_ns = time.perf_counter_ns()

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        # TLS records do not line up with packets; hand the socket to an asyncio transport instead.
        transport, protocol = await self._loop.create_connection(StampingProtocol, sock=self._sock)
        return await StampingStream(transport, protocol).start_tls(ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "socket":
            return self._sock
        if info == "client_addr":
            return self._sock.getsockname()
        if info == "server_addr":
            return self._sock.getpeername()
        if info == "is_readable":
            return is_socket_readable(self._sock)
        return None


class StampingBackend(httpcore.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        last_error: OSError | None = None
        try:
            async with asyncio.timeout(timeout):
                addresses = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                for family, kind, proto, _, address in addresses:
                    sock = socket.socket(family, kind, proto)
                    try:
                        sock.setblocking(False)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                        for option in socket_options or ():
                            sock.setsockopt(*option)
                        if local_address:
                            sock.bind((local_address, 0))
                        await loop.sock_connect(sock, address)
                    except OSError as error:
                        sock.close()
                        last_error = error
                        continue
                    except BaseException:
                        sock.close()
                        raise
                    return KernelStampedStream(sock)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout} s") from None
        except OSError as error:
            raise httpcore.ConnectError(str(error)) from None
        raise httpcore.ConnectError(str(last_error) if last_error else f"no address for {host}")

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None):
        raise httpcore.ConnectError("unix sockets are not used by the probe client")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# The connection slot of the current task: each speed-suite worker sets its own number.
CONNECTION_SLOT: contextvars.ContextVar[int] = contextvars.ContextVar("probe_connection_slot", default=0)


class StampingTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over the stamping backend, with one single-connection pool per worker slot.

    httpcore's pool rescans every connection of the pool on each request and each response close, which is
    quadratic in the pool size: at 100 connections that was ~0.9 s of CPU per 100 requests, spent in bursts
    that stalled every stream in flight. A pool per slot keeps each of those scans at one connection, while
    each worker still reuses its kept-alive connection (built on httpx 0.28 / httpcore 1.0 internals).
    """

    def __init__(self, *, limits: httpx.Limits, tls: bool = True, ca_bundle: str | None = None) -> None:
        # Loading the CA bundle costs ~60 ms of CPU; a plain-http target never needs it.
        verify: bool | ssl.SSLContext = False
        if tls:
            verify = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
        super().__init__(limits=limits, trust_env=False, verify=verify)
        self._ssl_context = self._pool._ssl_context if tls else None
        self._slots_max = max(1, limits.max_connections or 1)
        self._keepalive_expiry = limits.keepalive_expiry
        self._backend = StampingBackend()
        self._slot_pools: dict[int, httpcore.AsyncConnectionPool] = {}

    def _pool_for(self, slot: int) -> httpcore.AsyncConnectionPool:
        pool = self._slot_pools.get(slot)
        if pool is None:
            pool = httpcore.AsyncConnectionPool(
                ssl_context=self._ssl_context,
                max_connections=1,
                max_keepalive_connections=1,
                keepalive_expiry=self._keepalive_expiry,
                http1=True,
                http2=False,
                network_backend=self._backend,
            )
            self._slot_pools[slot] = pool
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        pool = self._pool_for(CONNECTION_SLOT.get() % self._slots_max)
        with map_httpcore_exceptions():
            response = await pool.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=AsyncResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        for pool in self._slot_pools.values():
            await pool.aclose()
        await super().aclose()
