"""The page cache (core.cache): pages and API reads kept under their URL and the generation, a number in the cache
that every service writing what they show moves. A repeat read asks the cache only, never the database; a
committed write shows on every process's next read; a cache outage costs speed only."""
import datetime as dt
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import Tool
from catalog.services import tool_update
from core.cache import PerGeneration, generation, generation_bump
from core.leases import lease_claim
from probes.models import ProbeRun
from probes.services.summaries import probe_summaries_refresh
from tests.factories import (
    PriceItemFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
    RequestMeasurementFactory,
    ToolFactory,
    build_runs,
)

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


class Abandoned(Exception):
    pass


def _page(client, slug: str) -> tuple[str, str]:
    response = client.get(reverse("catalog:tool_detail", args=[slug]))
    assert response.status_code == 200
    return response["X-Page-Cache"], response.content.decode()


def _api(client, path: str):
    response = client.get(path)
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.mark.parametrize("rows", [1, 30])
@pytest.mark.parametrize("path", ["/", "/tools/tool-0/", "/providers/", "/api/v1/tools/", "/api/v1/tools/tool-0/"])
def test_a_repeat_read_asks_the_cache_only_never_the_database(client, path, rows):
    for number in range(rows):
        PriceItemFactory(tool=ToolFactory(slug=f"tool-{number}"))
    first = client.get(path)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(path)
    assert len(queries) == 0 and again["X-Page-Cache"] == "hit"
    assert again.content == first.content


def test_api_answers_are_kept_rendered_one_per_representation(client):
    ToolFactory(slug="vllm")
    for _ in range(2):
        as_json = client.get("/api/v1/tools/")
        as_csv = client.get("/api/v1/tools/", HTTP_ACCEPT="text/csv")
    assert as_json["Content-Type"] == "application/json" and as_json.json()["count"] == 1
    assert as_csv["Content-Type"].startswith("text/csv") and ".csv" in as_csv["Content-Disposition"]
    assert as_csv.content.decode().splitlines()[1].startswith("vllm,")
    build_runs(ProbeTargetFactory(), 3)
    pages = [client.get("/api/v1/probes/runs/?page_size=2") for _ in range(2)]
    assert pages[1].content == pages[0].content and pages[1]["Link"] == pages[0]["Link"]
    assert 'rel="next"' in pages[1]["Link"]


@pytest.mark.django_db(transaction=True)
def test_a_committed_edit_shows_on_the_next_page_and_api_read(client):
    tool = ToolFactory(slug="vllm", verdict="Before the edit.")
    assert "Before the edit." in _page(client, "vllm")[1]
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Before the edit."
    assert _page(client, "vllm")[0] == "hit"
    tool_update(actor=None, tool=tool, data={"verdict": "After the edit."})
    state, html = _page(client, "vllm")
    assert state == "miss" and "After the edit." in html and "Before the edit." not in html
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "After the edit."


WRITE_ELSEWHERE = """
import sys, time
from catalog.models import Tool
from catalog.services import tool_update
tool_update(actor=None, tool=Tool.objects.get(slug="vllm"), data={"verdict": "Written by another process."})
print(time.time(), flush=True)
time.sleep(1)
"""


@pytest.mark.django_db(transaction=True)
def test_a_write_in_another_process_shows_on_this_process_next_read_within_a_second(client):
    """What a second gunicorn worker or a Celery worker does: a service writes there, a page is read here."""
    ToolFactory(slug="vllm", verdict="First verdict.")
    assert "First verdict." in _page(client, "vllm")[1]
    assert _page(client, "vllm")[0] == "hit"
    database = django_settings.DATABASES["default"]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test",
           "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/{database['NAME']}"}
    elsewhere = subprocess.Popen([sys.executable, "manage.py", "shell", "-v", "0", "-c", WRITE_ELSEWHERE], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, text=True)
    try:
        written_at = float(elsewhere.stdout.readline())
        state, html = _page(client, "vllm")
        read_at = time.time()
    finally:
        assert elsewhere.wait(timeout=120) == 0
    assert state == "miss" and "Written by another process." in html
    assert read_at - written_at < 1
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Written by another process."


@pytest.mark.django_db(transaction=True)
def test_writes_of_other_connections_show_once_committed(client):
    """What a second gunicorn or Celery process does: its commit shows on the next read here, its rollback never
    does, and nothing it has not committed yet is cached as current."""
    ToolFactory(slug="vllm", verdict="First verdict.")
    _page(client, "vllm")
    _api(client, "/api/v1/tools/vllm/")
    committed = threading.Event()
    read_in_between = threading.Event()

    def write_elsewhere(verdict: str, *, commit: bool) -> None:
        try:
            with transaction.atomic():
                tool_update(actor=None, tool=Tool.objects.get(slug="vllm"), data={"verdict": verdict})
                if commit:
                    read_in_between.wait(timeout=30)
                else:
                    raise Abandoned
        except Abandoned:
            pass
        finally:
            committed.set()
            connection.close()

    worker = threading.Thread(target=write_elsewhere, args=("Rolled back elsewhere.",), kwargs={"commit": False})
    worker.start()
    worker.join(timeout=30)
    assert "First verdict." in _page(client, "vllm")[1]
    committed.clear()
    worker = threading.Thread(target=write_elsewhere, args=("Committed elsewhere.",), kwargs={"commit": True})
    worker.start()
    assert "First verdict." in _page(client, "vllm")[1]  # the writer has not committed yet
    read_in_between.set()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert "Committed elsewhere." in _page(client, "vllm")[1]
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Committed elsewhere."


@pytest.mark.django_db(transaction=True)
def test_the_staff_api_the_admin_and_the_loader_move_the_generation(client, admin_client):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    call_command("load_catalog", verbosity=0)
    assert _page(client, "vllm")[0] == "miss"
    staff = get_user_model().objects.create_user("editor", password="x", is_staff=True)
    token = Token.objects.create(user=staff).key
    response = client.patch("/api/v1/tools/vllm/", {"verdict": "Edited through the API."},
                            content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200, response.content
    assert "Edited through the API." in _page(client, "vllm")[1]

    source = Tool.objects.get(slug="vllm").sources.order_by("key").first()
    assert _page(client, "vllm")[0] == "hit"
    response = admin_client.post(reverse("admin:catalog_source_change", args=[source.pk]), {
        "key": source.key, "title": "A title edited in the admin", "url": source.url, "publisher": source.publisher,
        "verified_on": source.verified_on.isoformat() if source.verified_on else "", "notes": source.notes,
    })
    assert response.status_code == 302, response.content[:500]
    assert "A title edited in the admin" in _page(client, "vllm")[1]

    call_command("load_catalog", verbosity=0)  # restores the fixture's verdict and title
    html = _page(client, "vllm")[1]
    assert "Edited through the API." not in html and "A title edited in the admin" not in html


@pytest.mark.django_db(transaction=True)
def test_a_probe_summary_refresh_shows_on_the_tool_page_and_the_api(client):
    now = dt.datetime.now(dt.UTC)
    target = ProbeTargetFactory(slug="groq-120b", name="Groq gpt-oss-120b")
    slug = target.tool.slug
    run = ProbeRunFactory(
        target=target, workload="in-100", concurrency=1, status=ProbeRun.Status.SUCCEEDED,
        started_at=now - dt.timedelta(minutes=5), finished_at=now - dt.timedelta(minutes=4),
    )
    for ttft in (111.0, 222.0, 333.0):
        RequestMeasurementFactory(run=run, started_at=now - dt.timedelta(minutes=5), ttft_ms=ttft, ttfat_ms=ttft)
    before = _page(client, slug)[1]
    assert _api(client, "/api/v1/probes/summaries/")["count"] == 0
    assert _page(client, slug)[0] == "hit"

    probe_summaries_refresh(target=target, now=now)

    state, after = _page(client, slug)
    assert state == "miss" and after != before
    assert "222" in after  # the median time to first token of the three requests
    summaries = _api(client, "/api/v1/probes/summaries/")["results"]
    assert [(row["last_run"], row["samples"]) for row in summaries] == [(run.pk, 3)]


def test_the_runs_list_shows_a_new_run_and_a_leased_status_on_the_next_read(client):
    target = ProbeTargetFactory(slug="t")
    run = ProbeRunFactory(target=target, status=ProbeRun.Status.QUEUED)
    assert [row["status"] for row in _api(client, "/api/v1/probes/runs/")["results"]] == ["queued"]
    ProbeRunFactory(target=target, status=ProbeRun.Status.SUCCEEDED)
    assert len(_api(client, "/api/v1/probes/runs/")["results"]) == 2
    assert lease_claim(ProbeRun, pk=run.pk, worker="w").outcome is None
    assert [row["status"] for row in _api(client, "/api/v1/probes/runs/")["results"]] == ["succeeded", "running"]


def test_api_reads_answer_conditional_gets_with_304(client):
    ToolFactory(slug="vllm")
    first = client.get("/api/v1/tools/vllm/")
    assert first.status_code == 200 and first["ETag"] and first["Last-Modified"]
    again = client.get("/api/v1/tools/vllm/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""


def test_answers_are_kept_per_host(client):
    ToolFactory(slug="vllm")
    local = _api(client, "/api/v1/tools/")["results"][0]["url"]
    other = client.get("/api/v1/tools/", HTTP_HOST="localhost").json()["results"][0]["url"]
    assert local.startswith("http://testserver/") and other.startswith("http://localhost/")


def test_dashboards_vary_with_the_key_variables_this_process_has(client, monkeypatch):
    ProbeTargetFactory(slug="groq-120b", api_key_env="GROQ_API_KEY", enabled=True)
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    without = client.get("/providers/")
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-value")
    with_key = client.get("/providers/")
    assert without["X-Page-Cache"] == "miss" and with_key["X-Page-Cache"] == "miss"
    assert client.get("/providers/")["X-Page-Cache"] == "hit"


def test_caching_can_be_turned_off(client, settings):
    ToolFactory(slug="vllm")
    settings.READ_CACHE_SECONDS = 0
    client.get("/api/v1/tools/")
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/api/v1/tools/")
    assert len(queries) >= 1 and "X-Page-Cache" not in again
    assert "X-Page-Cache" not in client.get(reverse("catalog:tool_detail", args=["vllm"]))


def test_pages_and_api_answer_when_the_cache_server_is_down(client, settings):
    ToolFactory(slug="survivor", name="Survivor")
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    for path in ("/", "/tools/survivor/", "/api/v1/tools/"):
        response = client.get(path)
        assert response.status_code == 200 and "Survivor" in response.content.decode(), path


@pytest.mark.django_db(transaction=True)
def test_a_per_generation_value_is_built_once_per_generation():
    builds = []
    snapshot = PerGeneration(lambda: builds.append(Tool.objects.count()) or len(builds))
    assert snapshot.get() == snapshot.get() == 1
    ToolFactory()
    assert snapshot.get() == 2 and builds == [0, 1]


@pytest.mark.django_db(transaction=True)
def test_a_write_moves_the_generation_at_once_and_again_at_its_commit():
    before = generation()
    with transaction.atomic():
        generation_bump()
        assert generation() == before + 1  # the writer's own next read is fresh
    assert generation() == before + 2  # a page read from the data before the commit is not reached again
    with pytest.raises(Abandoned), transaction.atomic():
        generation_bump()
        raise Abandoned
    assert generation() == before + 3


def test_migrations_leave_no_write_log_trigger():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'atlas_log_%'")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT to_regclass('atlas_table_write'), to_regclass('atlas_owner_write')")
        assert cursor.fetchone() == (None, None)
