"""The read cache on SQLite, the database `make run` uses by default: repeat reads are served from the
cache, and every kind of write (ORM save, QuerySet.update, raw SQL, a many-to-many link, a delete)
shows on the next read, while a rolled-back write leaves nothing behind.

The test suite runs on PostgreSQL, so this runs a real SQLite project database in a child process:
migrate (which installs the triggers), load the catalog, then read and write through the test client.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

SCRIPT = r"""
import json
import django
django.setup()
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from catalog.models import Source, Tool

client = Client(HTTP_HOST="127.0.0.1")
out = {}

def page(path="/tools/vllm/"):
    response = client.get(path)
    return response["X-Page-Cache"], response.content.decode()

out["first"] = page()[0]
out["repeat"] = page()[0]
with CaptureQueriesContext(connection) as queries:
    page()
out["repeat_queries"] = len(queries.captured_queries)

tool = Tool.objects.get(slug="vllm")
tool.verdict = "Saved through the ORM."
tool.save()
out["after_save"] = page()[0], "Saved through the ORM." in page()[1]

Tool.objects.filter(slug="vllm").update(verdict="Changed by an update.")
out["after_update"] = "Changed by an update." in page()[1]

with connection.cursor() as cursor:
    cursor.execute("UPDATE catalog_tool SET verdict = 'Changed by raw SQL.' WHERE slug = 'vllm'")
out["after_raw_sql"] = "Changed by raw SQL." in page()[1]

source = Source.objects.create(key="sqlite-cache-test", title="A source linked in this test", url="https://example.org/")
tool.sources.add(source)
out["after_link"] = "A source linked in this test" in page()[1]

tool.caveats.all().delete()
out["after_delete"] = 'id="caveats-heading"' in page()[1]

class Abandon(Exception):
    pass

before = page()[1]
try:
    with transaction.atomic():
        Tool.objects.filter(slug="vllm").update(verdict="Rolled back.")
        out["inside_transaction"] = "Rolled back." in page()[1]
        raise Abandon
except Abandon:
    pass
after = page()
out["after_rollback"] = "Rolled back." in after[1], after[1] == before

api = client.get("/api/v1/tools/vllm/")
Tool.objects.filter(slug="vllm").update(verdict="Seen by the API.")
out["api_after_update"] = client.get("/api/v1/tools/vllm/").json()["verdict"]
# The page cached inside the rolled-back transaction stays unreachable after a different write.
out["page_after_rollback_and_update"] = "Seen by the API." in page()[1] and "Rolled back." not in page()[1]

# The per-tool pieces: an edit moves the edited tool's counter only, and shows on the catalog page.
from catalog.models import Caveat
from core.cache import owner_fingerprints
from probes.models import ProbeTarget
other = Tool.objects.exclude(slug="vllm").order_by("pk").first()
vllm = Tool.objects.get(slug="vllm")
owners = [vllm.pk, other.pk]
client.get("/")
_, before = owner_fingerprints(["catalog", "probes"], owners)
Caveat.objects.filter(tool=other).update(title="Changed on SQLite")
Tool.objects.filter(pk=other.pk).update(ideal_for="Seen on the catalog page.")
_, after = owner_fingerprints(["catalog", "probes"], owners)
out["owner_prints"] = [before[vllm.pk] == after[vllm.pk], before[other.pk] != after[other.pk]]
out["catalog_after_update"] = "Seen on the catalog page." in client.get("/").content.decode()
target = ProbeTarget.objects.order_by("pk").first()
_, before = owner_fingerprints(["catalog", "probes"], [target.tool_id])
ProbeTarget.objects.filter(pk=target.pk).update(name="Renamed on SQLite")
_, after = owner_fingerprints(["catalog", "probes"], [target.tool_id])
out["probe_target_moves_its_tool"] = before != after
print(json.dumps(out))
"""


@pytest.fixture
def sqlite_project(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "REDIS_URL": "",
        "READ_CACHE_SECONDS": "300",
        "DJANGO_DEBUG": "false",
    }
    for command in (["migrate", "--noinput", "-v0"], ["load_catalog", "-v0"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=settings.BASE_DIR, env=env, check=True)
    return env


def test_the_read_cache_works_on_sqlite_and_every_write_shows(sqlite_project):
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=settings.BASE_DIR, env=sqlite_project,
        check=True, capture_output=True, text=True,
    )
    result = json.loads(completed.stdout.strip().splitlines()[-1])

    assert result["first"] == "miss"
    assert result["repeat"] == "hit"
    assert result["repeat_queries"] == 1
    assert result["after_save"] == ["miss", True]
    assert result["after_update"] is True
    assert result["after_raw_sql"] is True
    assert result["after_link"] is True
    assert result["after_delete"] is False
    assert result["inside_transaction"] is True
    assert result["after_rollback"] == [False, True]
    assert result["api_after_update"] == "Seen by the API."
    assert result["page_after_rollback_and_update"] is True
    assert result["owner_prints"] == [True, True]
    assert result["catalog_after_update"] is True
    assert result["probe_target_moves_its_tool"] is True
