"""A local HTTP simulator of hosted OpenAI-compatible providers — the only stand-in allowed in this project.

It is a real HTTP/1.1 server (asyncio streams, stdlib only) in a **separate process** on 127.0.0.1 and a free
port, so the probe client's timings are real network timings and the two never share a GIL.

    from tests.simulator import start_simulator

    with start_simulator("groq", schedule={"ttft_ms": 80, "itl_ms": 10, "tokens": 50}) as sim:
        sim.base_url        # "http://127.0.0.1:<port>/openai/v1" (the profile's documented base path)
        sim.model           # a model id the profile accepts (gpt-oss-120b in the provider's own naming)
        ...                 # point EndpointConfig(base_url=sim.base_url, model=sim.model) at it
        sim.requests        # every request received: method, path, headers, JSON body, recv_ns, timeline
        sim.reset()         # forget recorded requests and the fault counter
    # or: sim = start_simulator(...); ...; sim.stop()

Command line: ``python -m tests.simulator --profile groq --port 0`` prints ``SIMULATOR_URL <url>``.

Profiles (``tests/simulator/profiles.py``; each quirk cites a key from
the Sources section of docs/probes-measurement.md): ``openai`` (baseline),
``groq``, ``cerebras``, ``together``, ``fireworks``. Endpoints: ``POST <base>/chat/completions``,
``GET <base>/models``, ``GET /version`` (vLLM's, with the ``engine_version`` option), ``GET /metrics`` (with the
``engine`` option), plus ``GET /_simulator/requests`` and ``POST /_simulator/reset`` for tests.

Options (keyword arguments of ``start_simulator``, or per request as a JSON object in the
``x-simulator-options`` header, which overrides them — handy via ``EndpointConfig.extra_headers``):

- ``schedule``: the timeline of a stream, in ms after the request body was read: ``headers_delay_ms``,
  ``role_chunk`` (role-only first chunk, default true), ``ttft_ms`` (first token-bearing chunk),
  ``itl_ms`` (between token chunks; 0 holds every chunk back and releases them in one write, like a buffering
  proxy), ``tokens_per_chunk``, ``precise`` (default true: the last 2 ms before each event are slept
  precisely, blocking the simulator's loop; turn off for many concurrent streams), ``reasoning_tokens`` (default 3 on reasoning
  models), ``tokens`` (answer tokens; default: until max_tokens, or 24 for short prompts), ``usage_delay_ms``
  (delay of a separate usage chunk), ``events_per_write`` (token events written so many at a time in one write, so
  that one read delivers them under one kernel stamp, as a client that reads late sees them). Every token is five characters (" word"), so character shares are exact
  token shares. ``timeline`` in each recorded request holds the actual perf_counter_ns stamps of
  ``headers_ns``, ``first_token_ns``, ``first_answer_ns``, ``last_token_ns``, ``usage_ns``, ``end_ns``
  (CLOCK_MONOTONIC, comparable with the client process on Linux).
- ``fault`` (applied to the first ``fault_requests`` requests, default all): ``stall_before_headers``,
  ``stall_mid_stream``, ``reset_mid_stream`` (RST after ``fault_after_events`` events, default 3),
  ``malformed_sse``, ``invalid_json``, ``stream_error_event`` (Groq's ``event: error``),
  ``stream_error_object`` (``data: {"error": ...}``), ``html_502``, ``text_400``, ``rate_limited`` (429 with
  ``retry_after``, default "1"; ``omit_retry_after``), ``http_500``, ``overloaded_503``, ``too_large``
  (``too_large_bytes``), ``too_large_content_length``, ``slow_drip`` (one byte every ``drip_interval_ms``),
  ``no_done_hang`` (finish chunk, then silence), ``no_done_close`` (finish chunk, clean close, no [DONE]),
  ``close_without_finish``, ``redirect``, ``unauthorized_401``, ``echo_auth_500`` (a 500 whose body echoes
  the request's Authorization header, to prove the client redacts it), ``echo_key_401`` (a 401 whose error
  JSON holds the key sent, in full and masked as providers mask it: ``sk-ab...yz12``, ``***``, ``…``).
- ``echo_key``: every answer to a chat request carries the key sent in headers a run stores (the request id,
  rate-limit headers), in full and masked.
- ``engine``: a self-hosted engine's load behaviour for sweep tests (``tests/simulator/engine_model.py``):
  ``slots`` (streams served at once; more wait), ``prefill_ms_per_token``, ``itl_ms_per_active`` (decode steps
  slow down as more streams decode together), ``prefix_cache`` with ``cache_block_tokens`` (cached tokens in
  ``usage.prompt_tokens_details`` and vLLM's counters at ``GET /metrics``; ``report_cached_tokens: false``
  leaves only the counters), ``grammar_ms``/``grammar_itl_ms`` (constrained-decoding cost). The timeline then
  also records ``queued_ms``, ``prompt_tokens`` and ``cached_tokens``.
- ``reject_stream_options`` / ``reject_max_completion_tokens``: answer 400 when those fields are sent.
- ``redact_headers``: header names recorded as "[redacted]".
- ``tls``: ``{"cert": path, "key": path}`` serves HTTPS (the client then needs ``EndpointConfig.ca_bundle``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .profiles import PROFILES

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODELS = {
    "openai": "gpt-oss-120b",
    "groq": "openai/gpt-oss-120b",
    "cerebras": "gpt-oss-120b",
    "together": "openai/gpt-oss-120b",
    "fireworks": "accounts/fireworks/models/gpt-oss-120b",
}


class SimulatorHandle:
    def __init__(self, process: subprocess.Popen, base_url: str, profile: str) -> None:
        self.process = process
        self.base_url = base_url
        self.profile = profile
        self.model = DEFAULT_MODELS[profile]
        self.root_url = base_url.split("/", 3)[0] + "//" + base_url.split("/", 3)[2]

    def _control(self, method: str, path: str, body: dict | None = None):
        import httpx

        response = httpx.request(method, self.root_url + path, json=body, timeout=10.0, trust_env=False, verify=False)
        response.raise_for_status()
        return response.json()

    @property
    def requests(self) -> list[dict]:
        return self._control("GET", "/_simulator/requests")["requests"]

    @property
    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def reset(self) -> None:
        self._control("POST", "/_simulator/reset")

    def set_options(self, **options) -> None:
        """Change how the simulator behaves from the next request on (top-level options are replaced whole)."""
        self._control("POST", "/_simulator/options", options)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        if self.process.stdout:
            self.process.stdout.close()

    def __enter__(self) -> SimulatorHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_simulator(profile: str = "openai", *, startup_timeout_s: float = 15.0, **options) -> SimulatorHandle:
    """Start a simulator process on 127.0.0.1 and a free port; returns once it is listening."""
    if profile not in PROFILES:
        raise ValueError(f"profile: unknown {profile!r}; known: {sorted(PROFILES)}")
    command = [
        sys.executable,
        "-m",
        "tests.simulator",
        "--profile",
        profile,
        "--port",
        "0",
        "--options",
        json.dumps(options),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    )
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        if not selector.select(timeout=startup_timeout_s):
            process.kill()
            raise RuntimeError("simulator did not start in time")
        line = process.stdout.readline().strip()
    finally:
        selector.close()
    if not line.startswith("SIMULATOR_URL "):
        process.kill()
        raise RuntimeError(f"simulator failed to start: {line!r}")
    return SimulatorHandle(process, line.split(" ", 1)[1], profile)
