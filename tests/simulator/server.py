"""The simulator's HTTP/1.1 server: asyncio streams, stdlib only, one process (see ``tests/simulator/__init__``)."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import time
import uuid
from dataclasses import dataclass, field

from .engine_model import EngineModel
from .profiles import PROFILES, Profile, _error

WORDS = ("calm", "tide", "wave", "salt", "reef", "gull", "mist", "port", "sail", "keel", "buoy", "dock", "foam", "cove")
REASONING_WORDS = ("plan", "note", "idea", "step", "test", "goal", "mind", "take")
UNLIMITED_TOKENS = 200
NATURAL_TOKENS = 24
PRECISE_WINDOW_S = 0.002
# Faults written in place of the stream's events, and faults that break a stream after fault_after_events events.
STREAM_FAULTS = ("malformed_sse", "invalid_json", "too_large", "slow_drip")
MID_STREAM_FAULTS = ("stall_mid_stream", "reset_mid_stream", "stream_error_event", "stream_error_object",
                     "close_without_finish")


@dataclass
class Schedule:
    """When each part of a stream is written, in milliseconds after the request body was read."""

    headers_delay_ms: float = 0.0
    role_chunk: bool = True
    ttft_ms: float = 2.0
    itl_ms: float = 0.5
    tokens_per_chunk: int = 1
    reasoning_tokens: int | None = None
    tokens: int | None = None
    usage_delay_ms: float = 0.0
    precise: bool = True
    events_per_write: int = 1

    @classmethod
    def from_options(cls, options: dict | None) -> Schedule:
        options = dict(options or {})
        return cls(**{k: v for k, v in options.items() if k in cls.__dataclass_fields__})


@dataclass
class Reply:
    reasoning: list[str] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str = "stop"


def _split_text(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or []


def _instance(schema: dict):
    kind = schema.get("type")
    if kind == "object":
        return {name: _instance(sub) for name, sub in (schema.get("properties") or {}).items()}
    if kind in ("number", "integer"):
        return 18
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    return "Paris"


def _prompt(body: dict) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def compose_reply(profile: Profile, body: dict, schedule: Schedule) -> Reply:
    """What the simulated model answers: deterministic, shaped by the parameters it honours."""
    prompt = _prompt(body)
    limit = body.get("max_tokens")
    if profile.honours_max_completion_tokens and body.get("max_completion_tokens") is not None:
        limit = body["max_completion_tokens"]
    reply = Reply()
    reasoning_model = body.get("model") in profile.reasoning_models
    reasoning_count = (
        schedule.reasoning_tokens if schedule.reasoning_tokens is not None else (3 if reasoning_model else 0)
    )
    reply.reasoning = [" " + REASONING_WORDS[i % len(REASONING_WORDS)] for i in range(reasoning_count)]
    tools = body.get("tools") or []
    tool_choice = body.get("tool_choice", "auto")
    wants_tool = tools and (
        tool_choice == "required"
        or isinstance(tool_choice, dict)
        or (tool_choice == "auto" and ("tool" in prompt.lower() or "get_weather" in prompt))
    )
    response_format = body.get("response_format") or {}
    bias = body.get("logit_bias") or {}
    seed = body.get("seed")
    if wants_tool:
        cities = [city for city in ("Paris", "Tokyo") if city in prompt] or ["Paris"]
        if body.get("parallel_tool_calls") is False:
            cities = cities[:1]
        reply.tool_calls = [("get_weather", json.dumps({"city": city})) for city in cities]
        reply.finish_reason = "tool_calls"
    elif response_format.get("type") == "json_object":
        reply.content = _split_text(json.dumps({"city": "Paris"}))
    elif response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        reply.content = _split_text(json.dumps(_instance(schema)))
    elif any(isinstance(v, (int, float)) and v >= 50 for v in bias.values()):
        reply.content = ["0"] * (limit or NATURAL_TOKENS)
    elif "Count from 1 to 10" in prompt:
        reply.content = ["1"] + [f" {i}" for i in range(2, 11)]
    else:
        if schedule.tokens is not None:
            count = schedule.tokens
        elif "until you are stopped" in prompt:
            count = UNLIMITED_TOKENS
        else:
            count = NATURAL_TOKENS
        if seed is not None:
            rng = random.Random(seed)
        elif (body.get("temperature") or 0) > 0:
            rng = random.Random()
        else:
            rng = random.Random(0)
        reply.content = [" " + rng.choice(WORDS) for _ in range(count)]
    stops = body.get("stop")
    if isinstance(stops, str):
        stops = [stops]
    if stops and reply.content:
        text = "".join(reply.content)
        cut = min((text.find(s) for s in stops if s and s in text), default=-1)
        if cut >= 0:
            reply.content = _split_text(text[:cut], 1) if cut else []
            reply.finish_reason = "stop"
    if limit is not None and not reply.tool_calls:
        total = len(reply.reasoning) + len(reply.content)
        if total > limit:
            keep_reasoning = min(len(reply.reasoning), limit)
            reply.reasoning = reply.reasoning[:keep_reasoning]
            reply.content = reply.content[: limit - keep_reasoning]
            reply.finish_reason = "length"
    return reply


def masked_keys(key: str) -> tuple[str, str, str]:
    """The key as providers echo it masked: its first six and last six characters around "...", "***" or "…"."""
    return f"{key[:6]}...{key[-6:]}", f"{key[:6]}***{key[-6:]}", f"{key[:6]}…{key[-6:]}"


def _unrecognized(param: str) -> dict:
    return _error(f"Unrecognized request argument supplied: {param}", param=param)


def _cerebras_time_info() -> dict:
    """Cerebras' timing block (C3, C6), in seconds."""
    return {"queue_time": 0.0001, "prompt_time": 0.002, "completion_time": 0.01, "total_time": 0.013,
            "created": time.time()}


def _key_echo_headers(key: str) -> dict[str, str]:
    # Header values are Latin-1 on the wire, so the "…" form stays in the error JSON.
    dots, stars, _ = masked_keys(key)
    return {"x-request-id": f"req_{dots}", "x-ratelimit-key": key, "x-ratelimit-key-hint": stars}


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send_head(self, status: int, headers: dict, *, chunked: bool, length: int | None = None) -> None:
        reason = {
            200: "OK",
            302: "Found",
            400: "Bad Request",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
            502: "Bad Gateway",
            503: "Service Unavailable",
        }.get(status, "Status")
        lines = [f"HTTP/1.1 {status} {reason}"]
        for name, value in headers.items():
            lines.append(f"{name}: {value}")
        if chunked:
            lines.append("transfer-encoding: chunked")
        elif length is not None:
            lines.append(f"content-length: {length}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await self.writer.drain()

    async def send_chunk(self, data: bytes) -> None:
        if data:
            self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self.writer.drain()

    async def end_chunks(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def hang(self) -> None:
        """Say nothing more until the client goes away."""
        try:
            while await self.reader.read(65536):
                pass
        except (ConnectionError, OSError):
            pass

    def reset(self) -> None:
        sock = self.writer.get_extra_info("socket")
        if sock is not None and hasattr(sock, "setsockopt"):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


class Simulator:
    def __init__(self, profile: str = "openai", options: dict | None = None) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")
        self.profile = PROFILES[profile]
        self.options = dict(options or {})
        self.requests: list[dict] = []
        self.fault_count = 0
        self.echo_headers: dict[str, str] = {}
        self.engine = EngineModel.from_options(self.options.get("engine"))
        self._server: asyncio.AbstractServer | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        context = None
        tls = self.options.get("tls")
        if tls:
            import ssl

            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(tls["cert"], tls["key"])
        self._server = await asyncio.start_server(self._serve, host, port, backlog=1024, ssl=context)
        bound = self._server.sockets[0].getsockname()
        scheme = "https" if context else "http"
        return f"{scheme}://{bound[0]}:{bound[1]}{self.profile.base_path}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(reader, writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                recv_head_ns = time.perf_counter_ns()
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                headers = {}
                for line in header_lines:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = b""
                if headers.get("content-length"):
                    body = await reader.readexactly(int(headers["content-length"]))
                keep_open = await self._route(connection, method, path, headers, body, recv_head_ns)
                if not keep_open:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            try:
                writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass

    async def _route(
        self, conn: Connection, method: str, path: str, headers: dict, raw: bytes, recv_head_ns: int
    ) -> bool:
        recv_ns = time.perf_counter_ns()
        if path.startswith("/_simulator/requests"):
            return await self._send_json(conn, 200, {"requests": self.requests})
        if path.startswith("/_simulator/options") and method == "POST":
            # A provider whose behaviour changes between two runs: the new options apply to every later request.
            self.options.update(json.loads(raw or b"{}"))
            return await self._send_json(conn, 200, {"options": self.options})
        if path.startswith("/_simulator/reset"):
            self.requests.clear()
            self.fault_count = 0
            if self.engine is not None:
                self.engine.reset()
            return await self._send_json(conn, 200, {"ok": True})
        options = dict(self.options)
        if headers.get("x-simulator-options"):
            options.update(json.loads(headers["x-simulator-options"]))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        key = headers.get("authorization", "").removeprefix("Bearer ")
        self.echo_headers = _key_echo_headers(key) if options.get("echo_key") and key else {}
        redact = set(options.get("redact_headers") or ())
        record = {
            "method": method,
            "path": path,
            "headers": {k: ("[redacted]" if k in redact else v) for k, v in headers.items()},
            "body": body,
            "recv_ns": recv_ns,
            "received_at": time.time(),
            "timeline": {},
        }
        self.requests.append(record)
        profile = self.profile
        if path == "/version" and method == "GET" and options.get("engine_version"):
            # vLLM's GET /version, for the benchmark card and the retest rule.
            return await self._send_json(conn, 200, {"version": options["engine_version"]})
        if path == "/metrics" and method == "GET" and self.engine is not None:
            return await self._send_raw(conn, 200, self.engine.metrics_text().encode(), "text/plain; version=0.0.4")
        if path.endswith("/models") and method == "GET":
            data = [{"id": m, "object": "model", "owned_by": profile.name} for m in profile.models or ("sim-model",)]
            return await self._send_json(
                conn, 200, data if profile.models_bare_list else {"object": "list", "data": data}
            )
        if not path.endswith("/chat/completions") or method != "POST":
            return await self._send_raw(conn, 404, b"Not Found", "text/plain")
        if not isinstance(body, dict):
            return await self._send_error(conn, 400, _error("could not parse the JSON body"))
        fault = options.get("fault")
        if fault and (options.get("fault_requests") is None or self.fault_count < options["fault_requests"]):
            self.fault_count += 1
            handled = await self._pre_fault(conn, fault, options, headers)
            if handled is not None:
                return handled
        else:
            fault = None
        if profile.models and body.get("model") not in profile.models:
            # T9 (Together): OpenAI model strings return 404; every profile answers an unknown model this way.
            return await self._send_error(
                conn, 404, _error(f"Unable to access model {body.get('model')}.", code="model_not_found")
            )
        rejection = profile.reject(body)
        if rejection is not None:
            status, fields = rejection
            return await self._send_error(conn, status, fields)
        if body.get("stream_options") is not None and options.get("reject_stream_options"):
            return await self._send_error(conn, 400, _unrecognized("stream_options"))
        if "max_completion_tokens" in body and options.get("reject_max_completion_tokens"):
            return await self._send_error(conn, 400, _unrecognized("max_completion_tokens"))
        schedule = Schedule.from_options(options.get("schedule"))
        reply = compose_reply(profile, body, schedule)
        if body.get("stream"):
            return await self._stream(conn, body, reply, schedule, record, fault, options)
        return await self._complete(conn, body, reply, record)

    # ----- plain responses -------------------------------------------------------------------------------
    def _common_headers(self, request_id: str) -> dict:
        headers = {"x-request-id": request_id, "server": f"simulator/{self.profile.name}"}
        headers.update(self.profile.extra_headers)
        headers.update(self.echo_headers)
        return headers

    async def _send_raw(
        self, conn: Connection, status: int, payload: bytes, content_type: str, extra: dict | None = None
    ) -> bool:
        headers = {"content-type": content_type, "server": f"simulator/{self.profile.name}"}
        headers.update(extra or {})
        await conn.send_head(status, headers, chunked=False, length=len(payload))
        conn.writer.write(payload)
        await conn.writer.drain()
        return True

    async def _send_json(self, conn: Connection, status: int, data, extra: dict | None = None) -> bool:
        return await self._send_raw(conn, status, json.dumps(data).encode(), "application/json", extra)

    async def _send_error(self, conn: Connection, status: int, fields: dict, extra: dict | None = None) -> bool:
        headers = dict(self.profile.extra_headers)
        headers.update(self.echo_headers)
        headers.update(extra or {})
        return await self._send_raw(conn, status, self.profile.error_body(status, fields), "application/json", headers)

    def _usage(self, body: dict, reply: Reply, choices: int = 1, cached: int | None = None) -> dict:
        prompt_tokens = max(1, len(_prompt(body).split()))
        completion = (len(reply.reasoning) + len(reply.content) + 8 * len(reply.tool_calls)) * choices
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
        if cached is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        if self.profile.name == "groq":  # G7, G8: timing fields in usage (seconds)
            usage.update({"queue_time": 0.0021, "prompt_time": 0.0043, "completion_time": 0.0312, "total_time": 0.0355})
        return usage

    def _logprobs(self, reply: Reply, top: int) -> dict:
        tokens = reply.content or ["x"]

        def alternatives(token: str) -> list[tuple[str, float]]:
            return [(token, -0.1), (" alt", -2.3), (" other", -3.1)]

        if self.profile.logprobs_shape == "together":  # T4
            return {
                "tokens": tokens,
                "token_logprobs": [-0.1] * len(tokens),
                "top_logprobs": [dict(alternatives(t)[: max(1, top)]) for t in tokens],
            }
        entries = []
        for token in tokens:
            top_logprobs = [{"token": text, "logprob": logprob} for text, logprob in alternatives(token)[:top]]
            entries.append({"token": token, "logprob": -0.1, "bytes": list(token.encode()),
                            "top_logprobs": top_logprobs})
        return {"content": entries}

    def _message(self, reply: Reply) -> dict:
        message = {"role": "assistant", "content": "".join(reply.content) if not reply.tool_calls else None}
        if reply.reasoning:
            message[self.profile.reasoning_field] = "".join(reply.reasoning)
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
                for i, (name, arguments) in enumerate(reply.tool_calls)
            ]
        return message

    async def _complete(self, conn: Connection, body: dict, reply: Reply, record: dict) -> bool:
        n = body.get("n") or 1
        request_id = self._request_id()
        choices = []
        for index in range(n):
            choice = {
                "index": index,
                "message": self._message(reply),
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
            if body.get("logprobs"):
                choice["logprobs"] = self._logprobs(reply, int(body.get("top_logprobs") or 0))
            choices.append(choice)
        data = {
            "id": request_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": choices,
            "usage": self._usage(body, reply, n),
        }
        if self.profile.name == "cerebras":  # C3
            data["time_info"] = _cerebras_time_info()
        if self.profile.name == "groq":
            data["x_groq"] = {"id": "req_" + uuid.uuid4().hex[:26]}
        extra = self._common_headers(request_id)
        if self.profile.name == "fireworks":  # F3: perf metrics as response headers on non-streaming calls
            extra["fireworks-prompt-tokens"] = str(data["usage"]["prompt_tokens"])
            extra["fireworks-server-time-to-first-token"] = "0.004"
        record["timeline"]["completed_ns"] = time.perf_counter_ns()
        return await self._send_json(conn, 200, data, extra)

    def _request_id(self) -> str:
        if self.profile.id_prefix:
            return self.profile.id_prefix + uuid.uuid4().hex[:24]
        return str(uuid.uuid4())

    # ----- faults that replace the response ---------------------------------------------------------------
    async def _pre_fault(self, conn: Connection, fault: str, options: dict, headers: dict) -> bool | None:
        if fault == "unauthorized_401":
            return await self._send_error(conn, 401, _error("Invalid API Key", code="invalid_api_key"))
        if fault == "echo_auth_500":
            # A broken upstream that echoes the request headers into its error page.
            page = f"upstream failed; request headers were: authorization={headers.get('authorization', '')}".encode()
            return await self._send_raw(conn, 500, page, "text/plain")
        if fault == "echo_key_401":
            key = headers.get("authorization", "").removeprefix("Bearer ")
            dots, stars, ellipsis = masked_keys(key)
            message = f"Incorrect API key provided: {dots}. You sent {key} ({ellipsis})."
            return await self._send_error(conn, 401, _error(message, param=stars, code="invalid_api_key"))
        if fault == "stall_before_headers":
            await conn.hang()
            return False
        if fault == "html_502":
            page = b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
            return await self._send_raw(conn, 502, page, "text/html")
        if fault == "text_400":
            return await self._send_raw(conn, 400, b"Bad Request: malformed payload", "text/plain")
        if fault == "rate_limited":
            retry_after = str(options.get("retry_after", "1"))
            if self.profile.name == "groq":  # G9
                message = f"Rate limit reached for model `openai/gpt-oss-120b` on tokens per minute (TPM): Limit 15000, Used 11972, Requested 4351. Please try again in {retry_after}s."
                fields = {"message": message, "type": "tokens", "code": "rate_limit_exceeded"}
            else:
                fields = _error("Rate limit exceeded", type_="rate_limit_error", code="rate_limit_exceeded")
            headers = {} if options.get("omit_retry_after") else {"retry-after": retry_after}
            return await self._send_error(conn, 429, fields, headers)
        if fault == "http_500":
            return await self._send_error(conn, 500, _error("Internal server error", type_="server_error"))
        if fault == "overloaded_503":  # F2 (Fireworks) and T2/T4 (Together): load shedding
            return await self._send_error(conn, 503, _error("Service Overloaded", type_="server_error"))
        if fault == "redirect":
            headers = {"location": "http://attacker.invalid/v1/chat/completions"}
            return await self._send_raw(conn, 302, b"", "text/plain", headers)
        if fault == "too_large_content_length":
            await conn.send_head(200, {"content-type": "application/json"}, chunked=False, length=10**10)
            conn.writer.write(b'{"id": "x"')
            await conn.writer.drain()
            await conn.hang()
            return False
        return None

    # ----- streaming ------------------------------------------------------------------------------------
    async def _stream(
        self,
        conn: Connection,
        body: dict,
        reply: Reply,
        schedule: Schedule,
        record: dict,
        fault: str | None,
        options: dict,
    ) -> bool:
        profile = self.profile
        loop = asyncio.get_running_loop()
        base = loop.time() - (time.perf_counter_ns() - record["recv_ns"]) / 1e9
        timeline = record["timeline"]
        request_id = self._request_id()
        record["response_id"] = request_id
        created = int(time.time())
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        n = body.get("n") or 1

        def chunk(choices: list, **extra) -> bytes:
            data = {
                "id": request_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model"),
                "choices": choices,
            }
            data.update(extra)
            return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"

        async def at(offset_ms: float) -> None:
            target = base + offset_ms / 1000.0
            delay = target - loop.time()
            if not schedule.precise:
                if delay > 0:
                    await asyncio.sleep(delay)
                return
            # The event loop's timers overshoot by about a millisecond; the last stretch is slept precisely.
            if delay > PRECISE_WINDOW_S:
                await asyncio.sleep(delay - PRECISE_WINDOW_S)
            remaining = target - loop.time()
            if remaining > 0:
                time.sleep(remaining)

        if schedule.headers_delay_ms:
            await at(schedule.headers_delay_ms)
        headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        headers.update(self._common_headers(request_id))
        if profile.name == "fireworks":  # F3: streaming responses carry some perf headers (e.g. TTFT)
            headers["fireworks-server-time-to-first-token"] = f"{schedule.ttft_ms / 1000:.4f}"
        await conn.send_head(200, headers, chunked=True)
        timeline["headers_ns"] = time.perf_counter_ns()
        engine = self.engine
        cached = None
        first_offset_ms = schedule.ttft_ms
        if engine is not None:
            await engine.acquire()
            timeline["queued_ms"] = (time.perf_counter_ns() - record["recv_ns"]) / 1e6
            base = loop.time()
            tokens = _prompt(body).split()
            cached = engine.lookup(tokens) if engine.prefix_cache else None
            timeline["prompt_tokens"] = len(tokens)
            timeline["cached_tokens"] = cached
            first_offset_ms += engine.prefill_ms(len(tokens), cached or 0)
            constrained = engine.constrained(body)
            if constrained:
                first_offset_ms += engine.grammar_ms
            if not engine.report_cached_tokens:
                cached = None
        try:
            sent_events = 0

            batch = max(1, int(schedule.events_per_write))
            clump: list[bytes] | None = [] if schedule.itl_ms == 0 or batch > 1 else None

            async def emit(data: bytes) -> None:
                """Write one event; with itl_ms == 0 token events are held and released in one write, like a
                buffering proxy or a server that generates everything before streaming it, and with
                events_per_write N they are written N at a time (the earlier ones late by a gap each)."""
                nonlocal sent_events
                sent_events += 1
                if clump is not None and data.startswith(b"data: {") and b'"delta":{"role"' not in data:
                    clump.append(data)
                    if schedule.itl_ms and len(clump) >= batch:
                        await conn.send_chunk(b"".join(clump))
                        clump.clear()
                    return
                if clump:
                    await conn.send_chunk(b"".join(clump))
                    clump.clear()
                await conn.send_chunk(data)

            if fault in STREAM_FAULTS:
                return await self._stream_fault(conn, fault, options, chunk)

            if schedule.role_chunk:
                extra = {}
                if profile.name == "groq":
                    extra["x_groq"] = {"id": "req_" + uuid.uuid4().hex[:26], "seed": body.get("seed", 0)}
                roles = [{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                         for i in range(n)]
                await emit(chunk(roles, **extra))

            pieces: list[tuple[str, object]] = [("reasoning", t) for t in reply.reasoning]
            pieces += [("content", t) for t in reply.content] + [("tool", call) for call in reply.tool_calls]
            size = max(1, schedule.tokens_per_chunk)
            groups = [pieces[i : i + size] for i in range(0, len(pieces), size)]
            fault_after = int(options.get("fault_after_events", 3))
            for number, group in enumerate(groups):
                if fault in MID_STREAM_FAULTS and sent_events >= fault_after:
                    return await self._mid_stream_fault(conn, fault)
                if number == 0:
                    offset_ms = first_offset_ms
                elif engine is not None:
                    offset_ms += engine.step_ms(schedule.itl_ms, constrained=constrained)
                else:
                    offset_ms += schedule.itl_ms
                await at(offset_ms)
                delta: dict = {}
                for kind, value in group:
                    if kind == "tool":
                        name, arguments = value
                        index = len(delta.setdefault("tool_calls", []))
                        delta["tool_calls"].append({"index": index, "id": f"call_{index}", "type": "function",
                                                    "function": {"name": name, "arguments": ""}})
                        delta["tool_calls"].append({"index": index, "function": {"arguments": arguments}})
                    else:
                        field_name = profile.reasoning_field if kind == "reasoning" else "content"
                        delta[field_name] = delta.get(field_name, "") + value
                if "tool_calls" in delta:
                    # One chunk per tool-call delta: the name first, then the argument text (L4, T5 style).
                    for call_delta in delta.pop("tool_calls"):
                        await emit(chunk([{"index": 0, "delta": {"tool_calls": [call_delta]}, "finish_reason": None}]))
                if delta:
                    choices = []
                    for i in range(n):
                        choice = {"index": i, "delta": dict(delta), "finish_reason": None}
                        if body.get("logprobs"):
                            content = Reply(content=[v for k, v in group if k == "content"])
                            choice["logprobs"] = self._logprobs(content, int(body.get("top_logprobs") or 0))
                        choices.append(choice)
                    await emit(chunk(choices))
                now = time.perf_counter_ns()
                timeline.setdefault("first_token_ns", now)
                if any(kind != "reasoning" for kind, _ in group):
                    timeline.setdefault("first_answer_ns", now)
                timeline["last_token_ns"] = now
                timeline["token_chunks"] = timeline.get("token_chunks", 0) + 1
            if fault == "close_without_finish":
                return await self._mid_stream_fault(conn, fault)
            usage = self._usage(body, reply, n, cached=cached)
            finish_extra: dict = {}
            finish_choices = [{"index": i, "delta": {}, "finish_reason": reply.finish_reason} for i in range(n)]
            if profile.usage_mode == "finish_chunk":
                finish_extra["usage"] = usage
                if profile.name == "cerebras":  # C6
                    finish_extra["time_info"] = _cerebras_time_info()
                if profile.name == "fireworks" and body.get("perf_metrics_in_response"):  # F3
                    finish_extra["perf_metrics"] = {
                        "server-time-to-first-token": schedule.ttft_ms / 1000,
                        "prompt-tokens": usage["prompt_tokens"],
                    }
            elif profile.usage_mode == "groq":  # G6, G8
                finish_extra["x_groq"] = {"usage": usage}
                if include_usage:
                    finish_extra["usage"] = usage
            await emit(chunk(finish_choices, **finish_extra))
            timeline["finish_ns"] = time.perf_counter_ns()
            if (profile.usage_mode == "opt_in" or profile.usage_mode == "groq") and include_usage:
                if schedule.usage_delay_ms:
                    await asyncio.sleep(schedule.usage_delay_ms / 1000.0)
                extra = {"usage": usage}
                if profile.name == "groq":
                    extra["service_tier"] = "on_demand"
                await emit(chunk([], **extra))
                timeline["usage_ns"] = time.perf_counter_ns()
            if fault == "no_done_hang":
                await conn.hang()
                return False
            if profile.done_sentinel and fault != "no_done_close":
                await emit(b"data: [DONE]\n\n")
            await conn.end_chunks()
            timeline["end_ns"] = time.perf_counter_ns()
            return True
        finally:
            if engine is not None:
                engine.release()

    async def _mid_stream_fault(self, conn: Connection, fault: str) -> bool:
        if fault == "stall_mid_stream":
            await conn.hang()
            return False
        if fault == "reset_mid_stream":
            conn.reset()
            return False
        if fault == "stream_error_event":  # G11: Groq's mid-stream error event
            error = {
                "error": {
                    "message": "tool call validation failed",
                    "type": "invalid_request_error",
                    "code": "tool_use_failed",
                    "status_code": 400,
                }
            }
            await conn.send_chunk(b"event: error\ndata: " + json.dumps(error).encode() + b"\n\n")
            await conn.end_chunks()
            return False
        if fault == "stream_error_object":  # vLLM/SGLang stream errors: {"error": {...}} as a data event (S1)
            error = {"error": {"message": "The engine has stopped", "type": "InternalServerError", "code": 500}}
            await conn.send_chunk(b"data: " + json.dumps(error).encode() + b"\n\n")
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.end_chunks()
            return True
        if fault == "close_without_finish":
            await conn.end_chunks()
            return True
        return False

    async def _stream_fault(self, conn: Connection, fault: str, options: dict, chunk) -> bool:
        if fault == "malformed_sse":
            # Raw JSON lines without the data: field (what some proxies and native APIs send).
            await conn.send_chunk(b'{"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n')
            await conn.send_chunk(b'{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.end_chunks()
            return True
        if fault == "invalid_json":
            await conn.send_chunk(chunk([{"index": 0, "delta": {"content": " fine"}, "finish_reason": None}]))
            await conn.send_chunk(b'data: {"choices":[{"index":0,"delta":{"content":"bro\n\n')
            await conn.send_chunk(chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]))
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.end_chunks()
            return True
        if fault == "too_large":
            payload = chunk([{"index": 0, "delta": {"content": "x" * 8000}, "finish_reason": None}])
            total = int(options.get("too_large_bytes", 4 * 1024 * 1024))
            sent = 0
            try:
                while sent < total:
                    await conn.send_chunk(payload)
                    sent += len(payload)
                await conn.end_chunks()
            except (ConnectionError, OSError):
                return False
            return True
        if fault == "slow_drip":
            interval = float(options.get("drip_interval_ms", 200)) / 1000.0
            try:
                while True:
                    await conn.send_chunk(b":")
                    await asyncio.sleep(interval)
            except (ConnectionError, OSError):
                return False
        return False


def serve_forever(profile: str, port: int, options: dict, ready) -> None:
    """Run a simulator until the process is terminated; ``ready(url)`` is called once it listens."""

    async def main() -> None:
        simulator = Simulator(profile, options)
        url = await simulator.start("127.0.0.1", port)
        ready(url)
        await asyncio.Event().wait()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
