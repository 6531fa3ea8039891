"""bin/with_services.py: servers that answer are used as they are; otherwise the run starts its own and removes them."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
import redis

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "bin" / "with_services.py"

pytestmark = pytest.mark.slow

# Run by the wrapped command: proves both servers answer and reports what must be gone afterwards.
PROBE = """
import json, os, sys, time
from pathlib import Path
import psycopg, redis

with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
    connection.execute("CREATE TABLE answered (id integer)")
    data_dir = connection.execute("SELECT current_setting('data_directory')").fetchone()[0]
client = redis.Redis.from_url(os.environ["REDIS_URL"])
client.set("answered", "yes")
assert client.get("answered") == b"yes"
report = {
    "database_url": os.environ["DATABASE_URL"],
    "redis_url": os.environ["REDIS_URL"],
    "postgres_data_dir": data_dir,
    "postgres_pid": int(Path(data_dir, "postmaster.pid").read_text().split()[0]),
    "redis_dir": client.config_get("dir")["dir"],
    "redis_pid": client.info("server")["process_id"],
}
Path(sys.argv[1]).write_text(json.dumps(report))
if sys.argv[2] == "wait":
    time.sleep(120)
sys.exit(int(sys.argv[2]))
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def absent_defaults_env():
    """The environment of a machine where nothing answers on the default addresses."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env["SERVICES_DEFAULT_DATABASE_URL"] = f"postgres://postgres@127.0.0.1:{_closed_port()}/inference_atlas"
    env["SERVICES_DEFAULT_REDIS_URL"] = f"redis://127.0.0.1:{_closed_port()}/0"
    return env


@pytest.fixture
def probe(tmp_path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _assert_all_gone(report: dict, runner_pid: int) -> None:
    assert not _alive(report["postgres_pid"])
    assert not _alive(report["redis_pid"])
    assert not Path(report["postgres_data_dir"]).exists()
    assert not Path(report["redis_dir"]).exists()
    assert not (ROOT / "var" / "services" / str(runner_pid)).exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(report["database_url"], connect_timeout=2)
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(report["redis_url"], socket_connect_timeout=2).ping()


@pytest.mark.parametrize("exit_code", [0, 3])
def test_starts_its_own_servers_when_the_defaults_do_not_answer_and_removes_them(
    absent_defaults_env, probe, tmp_path, exit_code
):
    report_path = tmp_path / "report.json"
    runner = subprocess.run(
        [sys.executable, str(SCRIPT), "--", sys.executable, str(probe), str(report_path), str(exit_code)],
        cwd=ROOT, env=absent_defaults_env, capture_output=True, text=True, timeout=120,
    )
    assert runner.returncode == exit_code, runner.stderr
    assert "cannot be used (connection failed" in runner.stderr
    report = json.loads(report_path.read_text())
    assert report["database_url"].endswith("/inference_atlas")
    assert report["database_url"] != absent_defaults_env["SERVICES_DEFAULT_DATABASE_URL"]
    assert report["redis_url"] != absent_defaults_env["SERVICES_DEFAULT_REDIS_URL"]
    runner_pid = int(Path(report["redis_dir"]).parent.name)
    _assert_all_gone(report, runner_pid)


def test_ctrl_c_stops_the_command_and_removes_the_servers(absent_defaults_env, probe, tmp_path):
    report_path = tmp_path / "report.json"
    runner = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--", sys.executable, str(probe), str(report_path), "wait"],
        cwd=ROOT, env=absent_defaults_env, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not report_path.exists() and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.2)
        assert report_path.exists(), runner.stderr.read() if runner.poll() is not None else "no report"
        time.sleep(0.2)  # the report is written in one call; let it land whole
        # Ctrl-C in a terminal signals the whole foreground process group.
        os.killpg(runner.pid, signal.SIGINT)
        returncode = runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
    assert returncode == 128 + signal.SIGINT
    _assert_all_gone(json.loads(report_path.read_text()), runner.pid)


def test_uses_the_servers_in_the_environment_when_they_answer(tmp_path):
    env = dict(os.environ)  # the test settings put the suite's own DATABASE_URL and REDIS_URL here
    report = tmp_path / "urls.json"
    script = "import json, os, sys; json.dump([os.environ['DATABASE_URL'], os.environ['REDIS_URL']], open(sys.argv[1], 'w'))"
    runner = subprocess.run(
        [sys.executable, str(SCRIPT), "--", sys.executable, "-c", script, str(report)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert runner.returncode == 0, runner.stderr
    assert json.loads(report.read_text()) == [env["DATABASE_URL"], env["REDIS_URL"]]
    assert "started" not in runner.stderr
    assert runner.stderr.count("using the server at") == 2


def test_without_a_command_it_says_what_is_missing():
    runner = subprocess.run([sys.executable, str(SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert runner.returncode == 2
    assert "give the command to run after --" in runner.stderr
