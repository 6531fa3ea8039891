"""A Redis that dies or hangs under a running site costs speed, not answers. Killed (SIGKILL): pages, API reads and
staff writes keep answering 200 while it is down (computed; the outage logged once per process, not per request),
and the page cache is used again once it is back. Hung (SIGSTOP): each worker notices it once and skips it for a
few seconds (core.breakers), so the site keeps at least half its throughput. Real gunicorn, real redis-server on
loopback."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from redis import Redis
from rest_framework.authtoken.models import Token

from core.breakers import BREAKER_SECONDS
from core.cache import OUTAGE_SECONDS
from tests.workers import ThrowawayRedis, serve_site

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

READS = ["/", "/tools/vllm/", "/providers/", "/api/v1/tools/", "/api/v1/tools/vllm/", "/api/v1/probes/runs/"]


def test_killing_redis_under_the_site_costs_speed_not_answers(tmp_path):
    call_command("load_catalog", verbosity=0)
    token = Token.objects.create(user=get_user_model().objects.create_user("editor", is_staff=True)).key
    redis = ThrowawayRedis().start()
    log_lines: list[str] = []
    web, base = serve_site(log_lines, redis_url=redis.url, workers=2)
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
    web, base = serve_site(log_lines, redis_url=redis.url, workers=3)
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
