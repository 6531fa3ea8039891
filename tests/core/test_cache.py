"""The one read cache (core.cache) behind the catalog pages and the API: a repeat read costs one query,
and no write of any kind, by any connection, leaves a page or an API result stale; a rollback leaves
nothing behind."""
import datetime as dt
import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import PriceItem, Tool
from core.cache import data_fingerprint
from probes.models import ProbeRun
from probes.services.summaries import probe_summaries_refresh
from tests.factories import (
    MeasurementSummaryFactory,
    PriceItemFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
    RequestMeasurementFactory,
    SourceFactory,
    ToolFactory,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


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
@pytest.mark.parametrize("path", ["/", "/tools/tool-0/", "/api/v1/tools/", "/api/v1/tools/tool-0/"])
def test_a_repeat_read_costs_one_query_whatever_the_size(client, path, rows):
    for number in range(rows):
        PriceItemFactory(tool=ToolFactory(slug=f"tool-{number}"))
    first = client.get(path)
    with CaptureQueriesContext(connection) as queries:
        again = client.get(path)
    assert len(queries) == 1 and "FROM atlas_table_write" in queries[0]["sql"]  # the data fingerprint alone
    assert again.content == first.content


def test_an_orm_edit_shows_on_the_next_page_and_api_read(client):
    tool = ToolFactory(slug="vllm", verdict="Before the edit.")
    assert "Before the edit." in _page(client, "vllm")[1]
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Before the edit."
    assert _page(client, "vllm")[0] == "hit"
    tool.verdict = "After the edit."
    tool.save()
    state, html = _page(client, "vllm")
    assert state == "miss" and "After the edit." in html and "Before the edit." not in html
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "After the edit."


def test_writes_that_bypass_model_signals_show_at_once(client):
    tool = ToolFactory(slug="vllm", verdict="Before the update.")
    _page(client, "vllm")
    assert _api(client, "/api/v1/prices/?tool=vllm")["count"] == 0
    Tool.objects.filter(pk=tool.pk).update(verdict="Set by QuerySet.update.")
    PriceItem.objects.bulk_create([PriceItem(tool=tool, item="bulk-created-model", position=1, source=SourceFactory())])
    state, html = _page(client, "vllm")
    assert state == "miss" and "Set by QuerySet.update." in html and "bulk-created-model" in html
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Set by QuerySet.update."
    assert _api(client, "/api/v1/prices/?tool=vllm")["count"] == 1


def test_many_to_many_changes_show(client):
    tool = ToolFactory(slug="vllm")
    assert _api(client, "/api/v1/tools/vllm/")["sources"] == []
    tool.sources.add(SourceFactory(key="seed-002", title="A linked seed document"))
    assert [source["key"] for source in _api(client, "/api/v1/tools/vllm/")["sources"]] == ["seed-002"]
    assert "A linked seed document" in _page(client, "vllm")[1]


def test_a_rolled_back_write_leaves_no_stale_page_or_result(client):
    tool = ToolFactory(slug="vllm", verdict="The committed verdict.")
    _page(client, "vllm")
    _api(client, "/api/v1/tools/vllm/")
    with pytest.raises(Abandoned), transaction.atomic():
        Tool.objects.filter(pk=tool.pk).update(verdict="An abandoned verdict.")
        PriceItemFactory(tool=tool, item="abandoned-model")
        # The writer's own reads see its change, and are cached under that uncommitted state.
        assert "An abandoned verdict." in _page(client, "vllm")[1]
        assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "An abandoned verdict."
        raise Abandoned
    html = _page(client, "vllm")[1]
    assert "The committed verdict." in html
    assert "An abandoned verdict." not in html and "abandoned-model" not in html
    body = _api(client, "/api/v1/tools/vllm/")
    assert body["verdict"] == "The committed verdict."
    assert [price["item"] for price in body["prices"]] == []


@pytest.mark.django_db(transaction=True)
def test_commits_and_rollbacks_by_other_connections(client):
    """What a second gunicorn or Celery process does: its commit shows on the next read here, its
    rollback never does (no per-process memory, no signal needed in the reading process)."""
    ToolFactory(slug="vllm", verdict="First verdict.")
    _page(client, "vllm")
    _api(client, "/api/v1/tools/vllm/")

    def write_elsewhere(verdict: str, *, commit: bool) -> None:
        try:
            with transaction.atomic():
                Tool.objects.filter(slug="vllm").update(verdict=verdict)
                if not commit:
                    raise Abandoned
        except Abandoned:
            pass
        finally:
            connection.close()

    for verdict, commit in (("Rolled back elsewhere.", False), ("Committed elsewhere.", True)):
        worker = threading.Thread(target=write_elsewhere, args=(verdict,), kwargs={"commit": commit})
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive()
    assert "Committed elsewhere." in _page(client, "vllm")[1]
    assert _api(client, "/api/v1/tools/vllm/")["verdict"] == "Committed elsewhere."


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
    assert _api(client, f"/api/v1/tools/{slug}/")["measurement_summaries"] == []
    assert _page(client, slug)[0] == "hit"

    probe_summaries_refresh(target=target, now=now)

    state, after = _page(client, slug)
    assert state == "miss" and after != before
    assert "222" in after  # the median time to first token of the three requests
    summaries = _api(client, "/api/v1/probes/summaries/")["results"]
    assert [(row["last_run"], row["samples"]) for row in summaries] == [(run.pk, 3)]
    assert len(_api(client, f"/api/v1/tools/{slug}/")["measurement_summaries"]) == 1


def test_the_runs_list_is_never_cached(client):
    target = ProbeTargetFactory(slug="t")
    ProbeRunFactory(target=target)
    assert len(_api(client, "/api/v1/probes/runs/")["results"]) == 1
    ProbeRun.objects.bulk_create([ProbeRun(target=target, suite="speed")])
    assert len(_api(client, "/api/v1/probes/runs/")["results"]) == 2


def test_the_fingerprint_follows_every_kind_of_write_within_its_scopes():
    tool = ToolFactory(slug="watched")
    target = ProbeTargetFactory(tool=tool)
    seen = [data_fingerprint(["catalog"])]

    def changed() -> bool:
        seen.append(data_fingerprint(["catalog"]))
        return seen[-1] != seen[-2]

    price = PriceItemFactory(tool=tool)
    assert changed()
    price.notes = "saved"
    price.save()
    assert changed()
    PriceItem.objects.filter(pk=price.pk).update(notes="updated in bulk")
    assert changed()
    PriceItem.objects.bulk_create([PriceItem(tool=tool, item="bulk", position=9, source=price.source)])
    assert changed()
    price.delete()
    assert changed()
    tool.sources.add(SourceFactory())
    assert changed()
    tool.sources.clear()
    assert changed()

    with transaction.atomic():
        savepoint = transaction.savepoint()
        PriceItemFactory(tool=tool)
        assert changed()
        transaction.savepoint_rollback(savepoint)
    assert data_fingerprint(["catalog"]) == seen[-2]  # back to the state before the savepoint

    probes_before = data_fingerprint(["probes"])
    MeasurementSummaryFactory(target=target)
    assert data_fingerprint(["catalog"]) == seen[-2]
    assert data_fingerprint(["probes"]) != probes_before
    probes_before = data_fingerprint(["catalog", "probes"])
    ProbeRunFactory(target=target)  # runs feed no cached read
    assert data_fingerprint(["catalog", "probes"]) == probes_before


def test_caching_can_be_turned_off(client, settings):
    ToolFactory(slug="vllm")
    settings.READ_CACHE_SECONDS = 0
    client.get("/api/v1/tools/")
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/v1/tools/")
    assert len(queries) > 1 and not any("atlas_table_write" in query["sql"] for query in queries)
    assert "X-Page-Cache" not in client.get(reverse("catalog:tool_detail", args=["vllm"]))


@pytest.mark.django_db(transaction=True)
def test_a_lost_prepared_fingerprint_costs_speed_not_the_page(client):
    ToolFactory(slug="survivor", name="Survivor")
    assert client.get(reverse("catalog:index")).status_code == 200
    # What a connection pooler's DISCARD ALL does to the prepared fingerprint statement.
    connection.connection.execute("DEALLOCATE ALL")

    degraded = client.get(reverse("catalog:index"))
    again = client.get(reverse("catalog:index"))

    assert degraded.status_code == 200 and "Survivor" in degraded.content.decode()
    assert again.status_code == 200 and "Survivor" in again.content.decode()
