"""A database that hangs under a running site costs each request at most its connect timeout, and never the static
files or the cached pages: the first request of a worker waits the timeout out, the worker's next ones fail at once
for a few seconds (core.postgresql's breaker), and nothing that is served without the database waits behind them.
Real gunicorn (3 sync workers, as in production), real PostgreSQL behind a loopback proxy that hangs as a stopped
server does, real redis-server."""
from __future__ import annotations

import itertools
import statistics
import threading
import time

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command

from core.breakers import BREAKER_SECONDS
from tests.workers import HangingProxy, ThrowawayRedis, serve_site, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONNECT_TIMEOUT_SECONDS = 2
KINDS = {
    "static file": ["/static/css/site.css"],
    "cached page": ["/", "/tools/vllm/", "/providers/"],
    "cached API read": ["/api/v1/tools/", "/api/v1/tools/vllm/"],
    "page needing the database": ["/tools/vllm/?cold={n}"],
}
_UNCACHED = itertools.count()  # a query string no earlier request had: never in the page cache


def _requests_for(base: str, seconds: float, *, clients: int) -> dict[str, list[tuple[int, float]]]:
    """(status, seconds) per kind of request from `clients` clients for `seconds`, a new connection per request;
    status 0 when the client gave up (30 s)."""
    results: dict[str, list[tuple[int, float]]] = {kind: [] for kind in KINDS}
    order = [(kind, path) for kind, paths in KINDS.items() for path in paths]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(offset: int) -> None:
        with httpx.Client(base_url=base, timeout=30, headers={"Connection": "close"}) as http:
            for index in itertools.count(offset):
                if time.monotonic() >= deadline:
                    return
                kind, path = order[index % len(order)]
                started = time.monotonic()
                try:
                    status = http.get(path.format(n=next(_UNCACHED))).status_code
                except httpx.TransportError:
                    status = 0
                with lock:
                    results[kind].append((status, time.monotonic() - started))

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _p95(rows: list[tuple[int, float]]) -> float:
    return statistics.quantiles([elapsed for _, elapsed in rows], n=20)[-1]


def test_a_hung_database_costs_a_request_its_timeout_and_spares_static_files_and_cached_pages():
    call_command("load_catalog", verbosity=0)
    database = settings.DATABASES["default"]
    proxy = HangingProxy((database["HOST"], int(database["PORT"])))
    redis = ThrowawayRedis().start()
    log_lines: list[str] = []
    web, base = serve_site(
        log_lines, redis_url=redis.url, workers=3,
        database_url=f"postgres://{database['USER']}@127.0.0.1:{proxy.port}/{database['NAME']}",
        DATABASE_CONNECT_TIMEOUT_SECONDS=str(CONNECT_TIMEOUT_SECONDS),
    )
    try:
        with httpx.Client(base_url=base, timeout=30) as client:
            for kind in ("cached page", "cached API read"):
                for path in KINDS[kind] * 2:
                    assert client.get(path).status_code == 200, path
            normal = _requests_for(base, 5, clients=10)
            proxy.hang()
            hung = _requests_for(base, 10, clients=10)
            proxy.resume()
            time.sleep(BREAKER_SECONDS + 0.5)
            wait_for(lambda: client.get("/tools/vllm/?after=1").status_code == 200, timeout=15,
                     what="the database page once the database answers again")
    finally:
        proxy.resume()
        web.terminate()
        web.wait(timeout=30)
        redis.kill()
        proxy.close()

    summary = {kind: (sorted({status for status, _ in rows}), len(rows), round(_p95(rows), 2))
               for kind, rows in hung.items()}
    served_without_database = ("static file", "cached page", "cached API read")
    per_second = {"answering": sum(len(normal[kind]) for kind in served_without_database) / 5,
                  "hung": sum(len(hung[kind]) for kind in served_without_database) / 10}
    print(f"\nwith the database hung, 10 clients, 10 s: {summary}; answers per second of what needs no database: {per_second}")
    for kind in served_without_database:
        assert {status for status, _ in hung[kind]} == {200}, (kind, summary)
        # Not queued behind the requests that wait on the database.
        assert _p95(hung[kind]) < 1, (kind, summary)
    # Each worker waits the timeout out about once per breaker period, not once per request, so what does not need
    # the database is served at least as fast as when database pages were being rendered beside it.
    assert per_second["hung"] >= per_second["answering"], per_second
    database_pages = hung["page needing the database"]
    assert {status for status, _ in database_pages} == {500}, summary
    assert _p95(database_pages) <= CONNECT_TIMEOUT_SECONDS + 2, summary
    assert any("the database unavailable" in line for line in log_lines), "".join(log_lines[-40:])
