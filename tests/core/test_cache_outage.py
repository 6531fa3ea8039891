"""A Redis that dies or hangs under a running site costs speed, not answers. Killed (SIGKILL): pages, API reads and
staff writes keep answering 200 while it is down (computed; the outage logged once per process, not per request),
and the page cache is used again once it is back. Hung (SIGSTOP): each worker notices it once and skips it for a
few seconds (core.breakers), so the site keeps at least half its throughput. Real gunicorn, real redis-server on
loopback."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from redis import Redis
from rest_framework.authtoken.models import Token

from core.breakers import BREAKER_SECONDS
from core.cache import OUTAGE_SECONDS
from tests.workers import ThrowawayRedis, free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


READS = ["/", "/tools/vllm/", "/providers/", "/api/v1/tools/", "/api/v1/tools/vllm/", "/api/v1/probes/runs/"]


def _serve(redis: ThrowawayRedis, log_lines: list[str], *, workers: int) -> tuple[subprocess.Popen, str]:
    """gunicorn on the test database and `redis`, its output collected in `log_lines`; (process, base URL)."""
    web_port = free_port()
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "REDIS_URL": redis.url,
        "API_THROTTLE_ANON": "1000000/min",
        "PAGE_THROTTLE": "1000000/min",
    }
    web = subprocess.Popen([str(BIN / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{web_port}",
                            "--workers", str(workers)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: log_lines.extend(web.stdout), daemon=True).start()
    base = f"http://127.0.0.1:{web_port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{base}/api/v1/tools/", timeout=5)
            return web, base
        except httpx.TransportError:
            time.sleep(0.3)
    pytest.fail("gunicorn did not answer")


def test_killing_redis_under_the_site_costs_speed_not_answers(tmp_path):
    call_command("load_catalog", verbosity=0)
    token = Token.objects.create(user=get_user_model().objects.create_user("editor", is_staff=True)).key
    redis = ThrowawayRedis().start()
    log_lines: list[str] = []
    web, base = _serve(redis, log_lines, workers=2)
    reads = READS
    try:
        with httpx.Client(base_url=base, timeout=15, headers={"Connection": "close"}) as client:
            for path in reads * 2:
                assert client.get(path).status_code == 200, path
            assert client.get("/tools/vllm/").headers["X-Page-Cache"] == "hit"

            redis.kill()
            down = [client.get(path) for path in reads * 5]
            assert [response.status_code for response in down] == [200] * len(down)
            edit = client.patch("/api/v1/tools/vllm/", json={"verdict": "Written while Redis was down."},
                                headers={"Authorization": f"Token {token}"})
            assert edit.status_code == 200, edit.text
            time.sleep(OUTAGE_SECONDS)  # the other worker keeps what it rendered in its memory that long
            assert "Written while Redis was down." in client.get("/tools/vllm/").text

            redis.start()
            time.sleep(BREAKER_SECONDS + 0.5)  # each worker tries the cache again once its breaker has waited
            for _ in range(4):
                back = client.get("/tools/vllm/")
            assert back.status_code == 200 and back.headers["X-Page-Cache"] == "hit"
            assert "Written while Redis was down." in back.text
            assert Redis.from_url(redis.url).keys("*page:*"), "the pages read after the outage are in Redis again"
    finally:
        web.terminate()
        web.wait(timeout=30)
        redis.kill()
    outage_lines = [line for line in log_lines if "the cache unavailable" in line]
    assert 1 <= len(outage_lines) <= 2, "".join(log_lines[-40:])  # once per gunicorn worker, not per request
    assert any("the cache answers again" in line for line in log_lines)


def _answers_in(base: str, seconds: float, *, clients: int) -> list[int]:
    """The statuses of what `clients` clients got answered in `seconds`, a new connection per request."""
    deadline = time.monotonic() + seconds

    def client(offset: int) -> list[int]:
        statuses = []
        with httpx.Client(base_url=base, timeout=30, headers={"Connection": "close"}) as http:
            for index in range(offset, 10**9):
                if time.monotonic() >= deadline:
                    return statuses
                statuses.append(http.get(READS[index % len(READS)]).status_code)
        return statuses

    with ThreadPoolExecutor(clients) as pool:
        return [status for statuses in pool.map(client, range(clients)) for status in statuses]


def test_a_hung_redis_is_noticed_once_and_keeps_half_the_throughput():
    call_command("load_catalog", verbosity=0)
    redis = ThrowawayRedis().start()
    log_lines: list[str] = []
    web, base = _serve(redis, log_lines, workers=3)
    try:
        _answers_in(base, 2, clients=4)  # every page in the cache
        normal = _answers_in(base, 8, clients=10)
        redis.pause()
        try:
            hung = _answers_in(base, 8, clients=10)
        finally:
            redis.resume()
    finally:
        web.terminate()
        web.wait(timeout=30)
        redis.kill()
    print(f"\nanswers in 8 s, 10 clients: {len(normal)} with Redis answering, {len(hung)} with Redis hung")
    assert set(normal) == set(hung) == {200}
    assert len(hung) >= 0.5 * len(normal), f"{len(hung)} answers with Redis hung, {len(normal)} without"
    noticed = [line for line in log_lines if "the cache unavailable" in line]
    assert 1 <= len(noticed) <= 3, "".join(log_lines[-40:])  # once per worker, not per request
