"""A Redis that dies under a running site costs speed, not answers: pages, API reads and staff writes keep
answering 200 while it is down (from a process's own copy of an entry, or computed; the outage logged once per
process, not per request), and the page cache is used again once it is back. Real gunicorn, real redis-server on
loopback, killed with SIGKILL."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from redis import Redis
from rest_framework.authtoken.models import Token

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _redis(port: int) -> subprocess.Popen:
    process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.1)
    pytest.fail("redis-server did not start")


def test_killing_redis_under_the_site_costs_speed_not_answers(tmp_path):
    call_command("load_catalog", verbosity=0)
    token = Token.objects.create(user=get_user_model().objects.create_user("editor", is_staff=True)).key
    redis_port, web_port = _free_port(), _free_port()
    redis = _redis(redis_port)
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "READ_CACHE_WARM": "false",
    }
    log_lines: list[str] = []
    web = subprocess.Popen([str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{web_port}",
                            "--workers", "2"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: log_lines.extend(web.stdout), daemon=True).start()
    base = f"http://127.0.0.1:{web_port}"
    reads = ["/", "/tools/vllm/", "/providers/", "/api/v1/tools/", "/api/v1/tools/vllm/", "/api/v1/probes/runs/"]
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/api/v1/tools/", timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        with httpx.Client(base_url=base, timeout=15, headers={"Connection": "close"}) as client:
            for path in reads * 2:
                assert client.get(path).status_code == 200, path
            assert client.get("/tools/vllm/").headers["X-Page-Cache"] == "hit"

            redis.send_signal(signal.SIGKILL)
            redis.wait()
            down = [client.get(path) for path in reads * 5]
            assert [response.status_code for response in down] == [200] * len(down)
            edit = client.patch("/api/v1/tools/vllm/", json={"verdict": "Written while Redis was down."},
                                headers={"Authorization": f"Token {token}"})
            assert edit.status_code == 200, edit.text
            assert "Written while Redis was down." in client.get("/tools/vllm/").text

            redis = _redis(redis_port)
            for _ in range(4):
                back = client.get("/tools/vllm/")
            assert back.status_code == 200 and back.headers["X-Page-Cache"] == "hit"
            assert "Written while Redis was down." in back.text
            assert Redis(host="127.0.0.1", port=redis_port).keys("*page:*"), "the pages read after the outage are in Redis again"
    finally:
        web.terminate()
        web.wait(timeout=30)
        redis.kill()
        redis.wait()
    outage_lines = [line for line in log_lines if "cache unavailable" in line]
    assert 1 <= len(outage_lines) <= 2, "".join(log_lines[-40:])  # once per gunicorn worker, not per request
    assert any("cache answers again" in line for line in log_lines)
