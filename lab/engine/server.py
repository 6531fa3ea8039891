"""Start, wait for and stop a `llama-cpp-python[server]` process serving a GGUF model on the loopback."""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Iterator

import httpx

LOOPBACK = "127.0.0.1"
DEFAULT_CONTEXT = 4096
DEFAULT_STARTUP_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
# The free port is found before the server binds it; another process may take it in between.
PORT_ATTEMPTS = 3

# The server reads its settings from the environment as well as from its arguments (pydantic
# BaseSettings: MODEL, PORT, API_KEY, CONFIG_FILE, ...), so it gets only what a process needs.
_INHERITED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT")
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if the process that started it dies without stopping it."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EngineStartError(RuntimeError):
    """The engine exited or did not answer in time; the message carries the end of its log."""


@dataclass
class EngineSettings:
    model_path: Path
    model_alias: str
    context_length: int = DEFAULT_CONTEXT
    threads: int = 1
    batch_threads: int = 1
    seed: int = 1
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    extra_args: list[str] = field(default_factory=list)


@dataclass
class RunningEngine:
    host: str
    port: int
    model: str
    model_path: Path
    process: subprocess.Popen
    log_path: Path
    context_length: int

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def log_tail(self, max_chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-max_chars:]
        except OSError:
            return ""


def engine_version() -> str:
    return f"llama-cpp-python {version('llama_cpp_python')}"


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def server_command(settings: EngineSettings, *, port: int) -> list[str]:
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(settings.model_path),
        "--model_alias", settings.model_alias,
        "--host", LOOPBACK,
        "--port", str(port),
        "--n_ctx", str(settings.context_length),
        "--n_threads", str(settings.threads),
        "--n_threads_batch", str(settings.batch_threads),
        "--seed", str(settings.seed),
        # By default a new request cuts the stream being generated short; a probe with concurrent
        # requests must see them queue the way they do on a real deployment of this server.
        "--interrupt_requests", "false",
        *settings.extra_args,
    ]


def start_engine(settings: EngineSettings, *, log_path: Path | None = None) -> RunningEngine:
    """Start the server on a free loopback port and return once `/v1/models` lists the model."""
    if not Path(settings.model_path).is_file():
        raise EngineStartError(f"model file not found: {settings.model_path}")
    if log_path is None:
        handle, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(handle)
        log_path = Path(name)
    attempt = 0
    while True:
        attempt += 1
        engine = _launch(settings, log_path=log_path)
        try:
            _wait_until_ready(engine, timeout_s=settings.startup_timeout_s)
            return engine
        except EngineStartError:
            stop_engine(engine)
            if attempt < PORT_ATTEMPTS and "address already in use" in engine.log_tail().lower():
                continue
            raise
        except BaseException:
            stop_engine(engine)
            raise


def _launch(settings: EngineSettings, *, log_path: Path) -> RunningEngine:
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    env["PYTHONUNBUFFERED"] = "1"
    port = free_loopback_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            server_command(settings, port=port),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            # Its own session: a Ctrl-C meant for the caller does not kill it before the caller stops it.
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    return RunningEngine(
        host=LOOPBACK, port=port, model=settings.model_alias, model_path=Path(settings.model_path),
        process=process, log_path=log_path, context_length=settings.context_length,
    )


def _wait_until_ready(engine: RunningEngine, *, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last_problem = "no answer yet"
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if engine.process.poll() is not None:
                raise EngineStartError(
                    f"llama-cpp server exited with code {engine.process.returncode} before answering.\n"
                    f"--- server log ---\n{engine.log_tail()}"
                )
            try:
                response = client.get(f"{engine.base_url}/models")
                if response.status_code == 200 and any(
                    item.get("id") == engine.model for item in response.json().get("data", [])
                ):
                    return
                last_problem = f"HTTP {response.status_code}: {response.text[:200]}"
            except httpx.HTTPError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
            time.sleep(0.1)
    raise EngineStartError(
        f"llama-cpp server did not list model {engine.model!r} within {timeout_s:.0f} s ({last_problem}).\n"
        f"--- server log ---\n{engine.log_tail()}"
    )


def stop_engine(engine: RunningEngine) -> None:
    """SIGTERM the server's process group, then SIGKILL it if it has not exited within the grace period."""
    process = engine.process
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_GRACE_S)


@contextlib.contextmanager
def running_engine(settings: EngineSettings, *, log_path: Path | None = None) -> Iterator[RunningEngine]:
    engine = start_engine(settings, log_path=log_path)
    try:
        yield engine
    finally:
        stop_engine(engine)


@dataclass(frozen=True)
class EnginePerfReport:
    """What llama.cpp itself reports after one generation (its `llama_perf_context_print` lines)."""

    prompt_eval_ms: float
    prompt_tokens: int
    eval_ms: float
    eval_runs: int
    total_ms: float

    @property
    def generated_tokens(self) -> int:
        # The first token is sampled from the prompt evaluation; each later one costs one eval run.
        return self.eval_runs + 1


_PERF_LINE = re.compile(
    r"llama_perf_context_print:\s+(?P<what>load|prompt eval|eval|total) time =\s+(?P<ms>[\d.]+) ms"
    r"(?:\s*/\s*(?P<count>\d+) (?:tokens|runs))?"
)


def parse_perf_reports(log_text: str) -> list[EnginePerfReport]:
    """Every complete perf report in a server log, in the order the engine printed them."""
    reports: list[EnginePerfReport] = []
    current: dict[str, tuple[float, int]] = {}
    for match in _PERF_LINE.finditer(log_text):
        what = match["what"]
        if what == "load":
            current = {}
            continue
        current[what] = (float(match["ms"]), int(match["count"] or 0))
        if what == "total" and {"prompt eval", "eval"} <= current.keys():
            reports.append(
                EnginePerfReport(
                    prompt_eval_ms=current["prompt eval"][0],
                    prompt_tokens=current["prompt eval"][1],
                    eval_ms=current["eval"][0],
                    eval_runs=current["eval"][1],
                    total_ms=current["total"][0],
                )
            )
            current = {}
    return reports
