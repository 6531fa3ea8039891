"""An httpcore network backend that stamps every network read with the time its bytes really arrived.

Why not httpx's default (anyio) backend: its ``send`` yields to the event loop *after* handing the bytes to the
socket, so httpcore's ``send_request_body.complete`` trace event — and any stamp taken after it — comes late by
however long the other coroutines run (measured: up to 12 ms at 10 concurrent streams on a loaded 2-core
machine, which made TTFT read *shorter* than the server's real timeline). Likewise a stamp taken when the read
loop gets a chunk includes the wait for the event loop to resume that coroutine, which grows with the number
of streams (the "naive httpx" column of benchmarks/results/probe_accuracy.md).

Here every socket has ``SO_TIMESTAMPNS`` and is read with ``recvmsg``, so each read carries the kernel's
receive time of its newest packet — independent of when the event loop gets round to reading it — moved onto
the ``perf_counter`` clock (:class:`KernelStampedStream`). TLS is done in memory (``ssl.MemoryBIO``) on top of
the same socket (:class:`KernelStampedTLSStream`): decrypted bytes carry the stamp of the raw read that
completed their TLS record. ``read`` keeps the stamp in ``last_read_ns`` and ``write`` keeps
``last_write_ns``; the probe's read loop pairs each body chunk with ``network_stream.last_read_ns`` (the
response's ``network_stream`` extension), so parsing and scheduling delays never enter the measurement.
Writes never yield to the event loop unless the socket buffer is full.

With ``reading_thread=True`` (the sweep's transport) one thread reads and stamps every socket of the transport
(:class:`ReadingThread`): an event loop reads its streams one after another, and at a few hundred streams its
turns grow longer than an inter-token gap, so two token packets of a stream wait in the kernel together and the
read carries the second one's stamp. The thread does nothing but ``epoll`` and ``recvmsg``, so it gets round to
every socket within a fraction of a gap while the loop parses; the loop takes the stamped reads from each
stream's inbox. Its ``recvmsg`` is libc's, called through ``ctypes.PyDLL`` so that it keeps the GIL: the socket
module's releases the GIL around every call, and taking it back from the busy loop thread costs up to a switch
interval each time, so at 200 streams one pass over the ready sockets outlasted a 20 ms gap (on a quiet machine,
TTFT p99 off by up to 43 ms at 200 streams and 92 ms at 256 with the socket module's call; 0.07 and 0.34 ms with
this one: docs/benchmark-lab.md). For the same reason, while the thread runs the interpreter's switch interval is
0.5 ms instead of 5 ms. (The kernel's software transmit stamps, ``SO_TIMESTAMPING``, were tried for ``last_write_ns``
and left out: against a packet capture 60 of 400 requests at 200 streams came out up to 20 ms after their
request crossed the interface, where the stamp taken just before ``send`` was never more than 0.2 ms off.)
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import ctypes
import errno
import functools
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
import typing

import httpcore
import httpx
from httpcore._utils import is_socket_readable
from httpx._transports.default import AsyncResponseStream, map_httpcore_exceptions

READ_CHUNK = 65536


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
            self.last_read_ns = stamp if stamp is not None else time.perf_counter_ns()
            return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        while view:
            # Stamped just before the syscall that hands over the last bytes: a stamp taken after it could
            # come later than the answer, if this process is preempted in between.
            stamp = time.perf_counter_ns()
            try:
                sent = self._sock.send(view)
            except (BlockingIOError, InterruptedError):
                await self._wait(self._loop.add_writer, self._loop.remove_writer, timeout, httpcore.WriteTimeout)
                continue
            except OSError as error:
                raise httpcore.WriteError(str(error) or type(error).__name__) from None
            view = view[sent:]
            self.last_write_ns = stamp

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        raw = self if isinstance(self, ThreadReadStream) else None
        stream = KernelStampedTLSStream(self._sock, ssl_context, server_hostname, raw=raw)
        try:
            async with asyncio.timeout(timeout):
                await stream.handshake()
        except TimeoutError:
            await self.aclose()
            raise httpcore.ConnectTimeout("timed out during the TLS handshake") from None
        except (OSError, ssl.SSLError, httpcore.ReadError) as error:
            await self.aclose()
            raise httpcore.ConnectError(str(error) or type(error).__name__) from None
        return stream

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


class KernelStampedTLSStream(KernelStampedStream):
    """TLS over the kernel-stamped socket, decrypted in memory (``ssl.MemoryBIO``): decrypted bytes carry the
    kernel time of the raw read that completed their TLS record."""

    def __init__(
        self, sock: socket.socket, context: ssl.SSLContext, server_hostname: str | None,
        raw: KernelStampedStream | None = None,
    ) -> None:
        super().__init__(sock)
        # A stream read by a reading thread hands over its raw reads; a plain one is read here.
        self._raw = raw
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._raw_stamp: int | None = None

    async def _flush(self, timeout: float | None = None) -> None:
        pending = self._outgoing.read()
        if pending:
            await KernelStampedStream.write(self, pending, timeout)

    async def _fill(self, timeout: float | None = None) -> None:
        """Move one raw read from the socket into the TLS engine, keeping its kernel stamp."""
        if self._raw is not None:
            raw = await self._raw.read(READ_CHUNK, timeout)
            stamp = self._raw.last_read_ns
        else:
            raw = await KernelStampedStream.read(self, READ_CHUNK, timeout)
            stamp = self.last_read_ns
        if raw:
            self._incoming.write(raw)
            self._raw_stamp = stamp
        else:
            self._incoming.write_eof()

    async def handshake(self) -> None:
        while True:
            try:
                self._tls.do_handshake()
                await self._flush()
                return
            except ssl.SSLWantReadError:
                await self._flush()
                await self._fill()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            try:
                data = self._tls.read(max_bytes)
            except ssl.SSLWantReadError:
                await self._flush(timeout)
                await self._fill(timeout)
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""
            except ssl.SSLError as error:
                raise httpcore.ReadError(str(error)) from None
            self.last_read_ns = self._raw_stamp if self._raw_stamp is not None else time.perf_counter_ns()
            return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            self._tls.write(buffer)
        except ssl.SSLError as error:
            raise httpcore.WriteError(str(error)) from None
        await self._flush(timeout)

    async def aclose(self) -> None:
        try:
            self._tls.unwrap()
            self._sock.send(self._outgoing.read())
        except (ssl.SSLError, OSError):
            pass
        if self._raw is not None:
            await self._raw.aclose()
        else:
            self._sock.close()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("TLS inside TLS is not used by the probe client")

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "ssl_object":
            return self._tls
        if info == "is_readable":
            raw_pending = self._raw is not None and bool(self._raw.get_extra_info("is_readable"))
            return self._incoming.pending > 0 or raw_pending or is_socket_readable(self._sock)
        return super().get_extra_info(info)


class ThreadReadStream(KernelStampedStream):
    """A socket read and stamped by a :class:`ReadingThread`: ``read`` returns the oldest stamped read of the
    stream's inbox, waiting for the thread to fill it when it is empty."""

    def __init__(self, sock: socket.socket, reader: ReadingThread) -> None:
        super().__init__(sock)
        self.inbox: collections.deque = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._reader = reader
        reader.add(self)

    def wake(self) -> None:
        """Called in the event loop by the reading thread when the inbox got something."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while not self.inbox:
            self._waiter = self._loop.create_future()
            if self.inbox:  # filled between the test and the future
                break
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError:
                raise httpcore.ReadTimeout("timed out") from None
        stamp, data = self.inbox.popleft()
        if not data or isinstance(data, OSError):
            self.inbox.appendleft((stamp, data))  # the end of the stream, or its error, answers every later read
        if isinstance(data, OSError):
            raise httpcore.ReadError(str(data) or type(data).__name__)
        self.last_read_ns = stamp
        return data

    async def aclose(self) -> None:
        self._reader.remove(self)
        self._sock.close()

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "is_readable":
            return bool(self.inbox) or is_socket_readable(self._sock)
        return super().get_extra_info(info)


class ReadingThread:
    """One thread that reads and stamps every registered socket as soon as the kernel has bytes for it (edge-
    triggered ``epoll``, each socket read until it is empty), and wakes the event loop once per batch. The
    loop only ever takes stamped reads from the inboxes, so however long it parses, no read waits for it."""

    SWITCH_INTERVAL_S = 0.0005
    # The interpreter's own switch interval, kept while any reading thread of the process runs.
    _running = 0
    _saved_switch_interval = 0.0
    _switch_lock = threading.Lock()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._receiver = _GilHoldingReceiver()
        with ReadingThread._switch_lock:
            if ReadingThread._running == 0:
                ReadingThread._saved_switch_interval = sys.getswitchinterval()
                sys.setswitchinterval(min(ReadingThread._saved_switch_interval, self.SWITCH_INTERVAL_S))
            ReadingThread._running += 1
        self._epoll = select.epoll()
        self._streams: dict[int, ThreadReadStream] = {}
        # Held while the thread reads a batch, so a socket is never closed (and its number reused) meanwhile.
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="probe-reading-thread", daemon=True)
        self._thread.start()

    def add(self, stream: ThreadReadStream) -> None:
        fd = stream.get_extra_info("socket").fileno()
        with self._lock:
            self._streams[fd] = stream
            self._epoll.register(fd, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)

    def remove(self, stream: ThreadReadStream) -> None:
        fd = stream.get_extra_info("socket").fileno()
        with self._lock:
            if self._streams.get(fd) is stream:
                del self._streams[fd]
                self._epoll.unregister(fd)

    def close(self) -> None:
        self._closed = True
        self._thread.join()
        self._epoll.close()
        with ReadingThread._switch_lock:
            ReadingThread._running -= 1
            if ReadingThread._running == 0:
                sys.setswitchinterval(ReadingThread._saved_switch_interval)

    def _run(self) -> None:
        while not self._closed:
            events = self._epoll.poll(0.1)
            if not events:
                continue
            woken = []
            with self._lock:
                for fd, _ in events:
                    stream = self._streams.get(fd)
                    if stream is not None and self._drain(stream, self._receiver):
                        woken.append(stream)
            if woken:
                try:
                    self._loop.call_soon_threadsafe(_wake_all, woken)
                except RuntimeError:  # the loop is closed: nobody is reading any more
                    return

    @staticmethod
    def _drain(stream: ThreadReadStream, receiver: _GilHoldingReceiver) -> bool:
        """Read the socket until the kernel has nothing more for it (edge-triggered: the next bytes raise a new
        edge), its end, or its error."""
        fd = stream.get_extra_info("socket").fileno()
        received = False
        while True:
            try:
                data, ancillary = receiver.receive(fd)
            except (BlockingIOError, InterruptedError):
                return received
            except OSError as error:
                stream.inbox.append((time.perf_counter_ns(), error))
                return True
            stamp = _kernel_stamp(ancillary) if data else None
            stream.inbox.append((stamp if stamp is not None else time.perf_counter_ns(), data))
            if not data:
                return True
            received = True


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class _MessageHeader(ctypes.Structure):
    """struct msghdr (recvmsg(2))."""

    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32), ("iov", ctypes.POINTER(_IOVec)),
                ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]


@functools.cache
def _libc_recvmsg() -> typing.Callable[[int, typing.Any, int], int]:
    """libc's recvmsg from the process's own symbols, as a PyDLL function: one that runs with the GIL held. Looked up
    on first use, on the Linux machines the reading thread (epoll) runs on."""
    recvmsg = ctypes.PyDLL(None, use_errno=True).recvmsg
    recvmsg.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    recvmsg.restype = ctypes.c_ssize_t
    return recvmsg


_CMSG_HEADER = struct.Struct("@Nii")  # struct cmsghdr: length, level, type; the data follows at CMSG_LEN(0)


class _GilHoldingReceiver:
    """``socket.recvmsg(READ_CHUNK, ANCILLARY_SIZE)`` on a non-blocking socket, without releasing the GIL (the call
    never waits), into buffers of its own: one receiver per thread."""

    def __init__(self) -> None:
        self._data = ctypes.create_string_buffer(READ_CHUNK)
        self._control = ctypes.create_string_buffer(ANCILLARY_SIZE)
        self._iov = _IOVec(ctypes.addressof(self._data), READ_CHUNK)
        self._header = _MessageHeader(iov=ctypes.pointer(self._iov), iovlen=1,
                                      control=ctypes.addressof(self._control))
        self._recvmsg = _libc_recvmsg()

    def receive(self, fd: int) -> tuple[bytes, list[tuple[int, int, bytes]]]:
        """(data, ancillary) as ``socket.recvmsg`` gives them; BlockingIOError when nothing is queued."""
        self._header.controllen = ANCILLARY_SIZE
        count = self._recvmsg(fd, ctypes.byref(self._header), 0)
        if count < 0:
            code = ctypes.get_errno()
            if code in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise BlockingIOError(code, os.strerror(code))
            if code == errno.EINTR:
                raise InterruptedError(code, os.strerror(code))
            raise OSError(code, os.strerror(code))
        ancillary = []
        if self._header.controllen >= socket.CMSG_LEN(0):
            length, level, kind = _CMSG_HEADER.unpack_from(self._control.raw)
            ancillary.append((level, kind, self._control.raw[socket.CMSG_LEN(0):length]))
        return ctypes.string_at(self._data, count), ancillary


def _wake_all(streams: list[ThreadReadStream]) -> None:
    for stream in streams:
        stream.wake()


class StampingBackend(httpcore.AsyncNetworkBackend):
    """Opens kernel-stamped sockets; with ``reading_thread``, sockets read by one :class:`ReadingThread`."""

    def __init__(self, *, reading_thread: bool = False) -> None:
        self._threaded = reading_thread
        self._reader: ReadingThread | None = None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

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
                    if not self._threaded:
                        return KernelStampedStream(sock)
                    if self._reader is None:
                        self._reader = ReadingThread(loop)
                    return ThreadReadStream(sock, self._reader)
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

    def __init__(
        self, *, limits: httpx.Limits, tls: bool = True, ca_bundle: str | None = None, reading_thread: bool = False
    ) -> None:
        # Loading the CA bundle costs ~60 ms of CPU; a plain-http target never needs it.
        verify: bool | ssl.SSLContext = False
        if tls:
            verify = ssl.create_default_context(cafile=ca_bundle) if ca_bundle else True
        super().__init__(limits=limits, trust_env=False, verify=verify)
        self._ssl_context = self._pool._ssl_context if tls else None
        self._slots_max = max(1, limits.max_connections or 1)
        self._keepalive_expiry = limits.keepalive_expiry
        self._backend = StampingBackend(reading_thread=reading_thread)
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
        self._backend.close()
