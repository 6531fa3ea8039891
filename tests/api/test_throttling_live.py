"""The rate limit holds across gunicorn worker processes, through real sockets, against forged headers."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = str(Path(sys.executable).parent / "gunicorn")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def live_server_with_two_workers():
    database = settings.DATABASES["default"]
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}",
        "REDIS_URL": settings.CACHES["default"]["LOCATION"],
        "DJANGO_CACHE_PREFIX": settings.CACHES["default"]["KEY_PREFIX"],
        "API_THROTTLE_ANON": "5/min",
        "API_NUM_PROXIES": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    server = subprocess.Popen(
        [GUNICORN, "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--log-level", "warning"],
        cwd=ROOT, env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{base}/api/v1/schema/?format=json", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("gunicorn did not start")
        from django.core.cache import cache

        cache.clear()  # the readiness probe above counted against the limit
        yield base
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_rotating_x_forwarded_for_across_workers_is_still_throttled(live_server_with_two_workers):
    statuses, retry_after = [], None
    for attempt in range(8):
        # A new connection each time, so gunicorn spreads the requests over both workers.
        response = httpx.get(
            f"{live_server_with_two_workers}/api/v1/probes/compat/",
            headers={"X-Forwarded-For": f"198.51.100.{attempt}", "Connection": "close"},
            timeout=10,
        )
        statuses.append(response.status_code)
        if response.status_code == 429:
            retry_after = response.headers["Retry-After"]
            assert response.json()["error"]["code"] == "throttled"
    assert statuses == [200] * 5 + [429] * 3
    assert 1 <= int(retry_after) <= 60
