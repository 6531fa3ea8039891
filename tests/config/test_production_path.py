"""The production path as docker-compose.yml runs it: the web service's own command (migrate, collectstatic with
the manifest storage, load the catalog, gunicorn) under config.settings.production against a fresh PostgreSQL
database and Redis, then the worker's and beat's commands. Pages, static files and the error pages are served
from the manifest; a database that stops answering gives the project's error page within seconds."""
from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
import yaml
from django.conf import settings

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
# Behind the TLS proxy production runs behind, every request arrives with this header.
PROXIED = {"X-Forwarded-Proto": "https", "Host": "atlas.example.org"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _command(service: str, **replace: str) -> list[str]:
    """The service's command from docker-compose.yml, run with this virtualenv's programs."""
    command = COMPOSE["services"][service]["command"]
    for old, new in replace.items():
        assert old in command, f"{service}'s command no longer contains {old!r}"
        command = command.replace(old, new)
    words = shlex.split(command)
    if words[:2] == ["sh", "-c"]:
        return ["sh", "-c", words[2]]
    return words


@pytest.fixture
def production_env(tmp_path) -> Iterator[dict[str, str]]:
    database = settings.DATABASES["default"]
    admin = f"host={database['HOST']} port={database['PORT']} user={database['USER']} dbname=postgres"
    name = f"{database['NAME']}_production_path"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    redis_url = settings.CACHES["default"]["LOCATION"]
    env = {
        **os.environ,
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "DJANGO_SETTINGS_MODULE": COMPOSE["x-app"]["environment"]["DJANGO_SETTINGS_MODULE"],
        "DJANGO_SECRET_KEY": "production-path-test-" + "k" * 40,
        "DJANGO_ALLOWED_HOSTS": "atlas.example.org",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{name}",
        "REDIS_URL": redis_url,
        "DJANGO_CACHE_PREFIX": f"production-path-{os.getpid()}",
        "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
        "SITE_URL": "https://atlas.example.org",
    }
    env.pop("READ_CACHE_WARM", None)
    try:
        yield env
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Service:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.output: list[str] = []
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)

    def wait_for(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(re.search(pattern, line) for line in self.output):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        pytest.fail(f"never saw {pattern!r}:\n{''.join(self.output[-60:])}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()


def _serve(env: dict[str, str]) -> tuple[Service, str]:
    port = _free_port()
    web = Service(_command("web", **{"0.0.0.0:8000": f"127.0.0.1:{port}"}), env)
    web.wait_for(r"Listening at: http://127\.0\.0\.1", timeout=240)
    return web, f"http://127.0.0.1:{port}"


def test_the_compose_web_worker_and_beat_commands_serve_the_site(production_env):
    web, base = _serve(production_env)
    try:
        with httpx.Client(base_url=base, headers=PROXIED, timeout=20) as client:
            home = client.get("/")
            assert home.status_code == 200, home.text[:500]
            assert "vLLM" in home.text and "Content-Security-Policy" in home.headers
            stylesheet = re.search(r'href="(/static/css/site\.[0-9a-f]{12}\.css)"', home.text)
            assert stylesheet, "pages link the hashed names of the manifest"
            css = client.get(stylesheet.group(1))
            assert css.status_code == 200 and "max-age=315360000" in css.headers["cache-control"]
            chart = re.search(r'src="(/static/vendor/chartjs/chart\.umd\.min\.[0-9a-f]{12}\.js)"',
                              client.get("/providers/").text)
            assert chart and client.get(chart.group(1)).status_code == 200
            missing = client.get("/no-such-page/")
            assert missing.status_code == 404 and "There is no page at" in missing.text
            assert client.get("/api/v1/tools/vllm/").json()["slug"] == "vllm"
            plain = client.get("/", headers={"X-Forwarded-Proto": "http"})
            assert plain.status_code == 301 and plain.headers["location"].startswith("https://")
        for service, ready in (("worker", r"celery@\S+ ready"), ("beat", r"beat: Starting")):
            process = Service(_command(service), production_env)
            try:
                process.wait_for(ready, timeout=90)
            finally:
                process.stop()
    finally:
        web.stop()


def test_a_database_waiting_on_a_lock_gives_the_error_page_within_seconds(production_env):
    web, base = _serve(production_env)
    database = settings.DATABASES["default"]
    name = production_env["DATABASE_URL"].rsplit("/", 1)[1]
    try:
        with psycopg.connect(f"host={database['HOST']} port={database['PORT']} user={database['USER']} "
                             f"dbname={name}") as blocker:
            blocker.execute("LOCK TABLE catalog_tool IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            response = httpx.get(f"{base}/tools/vllm/?uncached=1", headers=PROXIED, timeout=60)
            elapsed = time.monotonic() - started
            blocker.rollback()
        assert response.status_code == 500 and "Something went wrong" in response.text
        assert elapsed < settings.DATABASE_STATEMENT_TIMEOUT_MS / 1000 + 5
        recovered = httpx.get(f"{base}/tools/vllm/?uncached=2", headers=PROXIED, timeout=30)
        assert recovered.status_code == 200
    finally:
        web.stop()


def test_a_database_that_accepts_and_never_answers_gives_the_error_page_within_seconds(production_env):
    """A frozen server: the connection is accepted and nothing ever comes back."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    accepted = []
    threading.Thread(target=lambda: accepted.extend(silent.accept() for _ in iter(int, 1)), daemon=True).start()
    port = _free_port()
    env = {**production_env, "DATABASE_URL": f"postgres://atlas@127.0.0.1:{silent.getsockname()[1]}/atlas"}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    gunicorn = Service([str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                        "--workers", "1"], env)
    try:
        gunicorn.wait_for(r"Listening at", timeout=60)
        started = time.monotonic()
        response = httpx.get(f"http://127.0.0.1:{port}/", headers=PROXIED, timeout=60)
        elapsed = time.monotonic() - started
        assert response.status_code == 500 and "Something went wrong" in response.text
        assert elapsed < settings.DATABASE_CONNECT_TIMEOUT_SECONDS + 5
    finally:
        gunicorn.stop()
        silent.close()


def test_a_database_that_is_down_gives_the_error_page_at_once(production_env):
    """Nothing listens on the database's port: every connection is refused."""
    closed = _free_port()
    port = _free_port()
    env = {**production_env, "DATABASE_URL": f"postgres://atlas@127.0.0.1:{closed}/atlas"}
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    gunicorn = Service([str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
                        "--workers", "1"], env)
    try:
        gunicorn.wait_for(r"Listening at", timeout=60)
        started = time.monotonic()
        pages = [httpx.get(f"http://127.0.0.1:{port}{path}", headers=PROXIED, timeout=60)
                 for path in ("/", "/api/v1/tools/")]
        elapsed = time.monotonic() - started
        assert [page.status_code for page in pages] == [500, 500]
        assert "Something went wrong" in pages[0].text and pages[1].json()["error"]["code"] == "server_error"
        assert elapsed < 5
    finally:
        gunicorn.stop()
