"""`make run` for a new user: SQLite, the filesystem broker, gunicorn, a Celery worker and beat, all stopped together."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[int]:
    listing = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    return [int(child) for child in listing.stdout.split()]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def embedded_env(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "CELERY_BROKER_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.base"
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'atlas.sqlite3'}"
    for command in (["migrate", "--noinput"], ["load_catalog"]):
        subprocess.run(
            [sys.executable, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300
        )
    return env


def test_serve_starts_site_worker_and_beat_and_ctrl_c_stops_them_all(embedded_env, tmp_path):
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "bin/serve.py", "--port", str(port)],
            cwd=ROOT, env=embedded_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            page = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    page = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
                    break
                except httpx.TransportError:
                    time.sleep(0.5)
            assert page is not None, log_path.read_text()
            assert page.status_code == 200
            assert "llama.cpp" in page.text and "vLLM" in page.text

            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                output = log_path.read_text(errors="replace")
                if "ready." in output and "beat: Starting" in output:
                    break
                time.sleep(0.5)
            assert "ready." in output, output
            assert "beat: Starting" in output, output
            # gunicorn, the worker and beat, each leading a process group that holds its own children.
            groups = [server.pid, *_children(server.pid)]
            assert len(groups) == 4, groups
        finally:
            # Ctrl-C in a terminal signals the whole foreground process group.
            os.killpg(server.pid, signal.SIGINT)
            try:
                returncode = server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                raise
    output = log_path.read_text(errors="replace")
    # Non-zero would mean a process had to be killed or stopped with an error.
    assert returncode == 0, output
    assert "ERROR" not in output, output
    # gunicorn's workers and Celery's pool children stay in their parents' groups; none may outlive the runner.
    assert [group for group in groups if _group_alive(group)] == []
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=2)


def _service_pid(runner: int, name: str) -> int | None:
    for child in _children(runner):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except FileNotFoundError:
            continue
        if name.encode() in command:
            return child
    return None


def test_a_worker_or_beat_killed_by_the_os_is_started_again_and_the_site_stays_up(embedded_env, tmp_path):
    port = _free_port()
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "bin/serve.py", "--port", str(port)],
            cwd=ROOT, env=embedded_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and "ready." not in log_path.read_text(errors="replace"):
                time.sleep(0.5)
            for name, word in (("worker", "worker"), ("beat", "beat")):
                victim = _service_pid(server.pid, word)
                assert victim, log_path.read_text()
                os.killpg(victim, signal.SIGKILL)  # what the OS's out-of-memory killer does
                assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and _service_pid(server.pid, word) in (None, victim):
                    time.sleep(0.2)
                replacement = _service_pid(server.pid, word)
                assert replacement not in (None, victim), log_path.read_text()
                assert f"serve: {name} exited with -9; restarting in 1 s" in log_path.read_text()
                assert server.poll() is None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and log_path.read_text(errors="replace").count("ready.") < 2:
                time.sleep(0.5)
            assert log_path.read_text(errors="replace").count("ready.") >= 2  # the new worker took tasks again
            assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 200
        finally:
            os.killpg(server.pid, signal.SIGINT)
            returncode = server.wait(timeout=60)
    assert returncode == 0, log_path.read_text()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
