import datetime

import pytest

from catalog.models import PriceItem, Source, Tool
from core.models import AuditEntry
from probes.models import ProbeRun, ProbeTarget
from tests.factories import LicenceFactory, PriceItemFactory, ProbeTargetFactory, SourceFactory, ToolFactory

pytestmark = pytest.mark.django_db

NEW_TOOL = {"slug": "new-engine", "name": "New Engine", "kind": "engine", "licence": "Apache-2.0"}


@pytest.fixture
def seed():
    LicenceFactory()
    source = SourceFactory(key="seed-002")
    tool = ToolFactory(slug="vllm", name="vLLM", last_verified=datetime.date(2026, 10, 19))
    return {"source": source, "tool": tool}


WRITES = [
    ("post", "/api/v1/tools/", NEW_TOOL),
    ("patch", "/api/v1/tools/vllm/", {"verdict": "Changed."}),
    ("post", "/api/v1/sources/", {"key": "new-source", "title": "New"}),
    ("patch", "/api/v1/sources/seed-002/", {"title": "Changed"}),
    ("post", "/api/v1/prices/", {"tool": "vllm", "item": "x", "unit": "per_hour", "amount_usd": "2.5",
                                 "source": "seed-002"}),
    ("post", "/api/v1/probes/targets/", {"slug": "t", "name": "T", "tool": "vllm", "base_url": "https://a.example/v1",
                                         "model_id": "m"}),
    ("post", "/api/v1/probes/targets/t0/run/", {}),
]


def _snapshot():
    return (
        list(Tool.objects.values_list("slug", "verdict")),
        list(Source.objects.values_list("key", "title")),
        PriceItem.objects.count(),
        ProbeTarget.objects.count(),
        ProbeRun.objects.count(),
    )


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_anonymous_cannot_write(api_client, seed, method, path, body):
    ProbeTargetFactory(slug="t0", tool=seed["tool"])
    before = _snapshot()
    response = getattr(api_client, method)(path, body, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["error"]["code"] == "not_authenticated"
    assert _snapshot() == before
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_non_staff_token_cannot_write(user_client, seed, method, path, body):
    ProbeTargetFactory(slug="t0", tool=seed["tool"])
    before = _snapshot()
    response = getattr(user_client, method)(path, body, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert _snapshot() == before
    assert not AuditEntry.objects.exists()


def test_bad_token_is_a_401_even_for_reads(api_client, seed):
    api_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = api_client.get("/api/v1/tools/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "authentication_failed"


def test_staff_creates_a_tool_and_the_write_is_audited(staff_client, staff_user, seed):
    body = {**NEW_TOOL, "rating": "4.1", "rating_source": "seed-002", "sources": ["seed-002"]}
    response = staff_client.post("/api/v1/tools/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["slug"] == "new-engine"
    assert response.json()["sources"][0]["key"] == "seed-002"
    entry = AuditEntry.objects.get()
    assert (entry.user, entry.username, entry.action) == (staff_user, "editor", "create")
    assert (entry.object_type, entry.object_id) == ("catalog.tool", str(Tool.objects.get(slug="new-engine").pk))
    assert entry.changes["rating"] == {"old": None, "new": "4.1"}
    assert entry.changes["sources"] == {"old": None, "new": ["seed-002"]}


def test_update_records_old_and_new_and_leaves_last_verified_alone(staff_client, seed):
    response = staff_client.patch("/api/v1/tools/vllm/", {"verdict": "The multi-user server."}, format="json")
    assert response.status_code == 200, response.content
    tool = Tool.objects.get(slug="vllm")
    assert tool.verdict == "The multi-user server."
    assert tool.last_verified == datetime.date(2026, 10, 19)
    entry = AuditEntry.objects.get()
    assert entry.action == "update"
    assert entry.changes == {"verdict": {"old": "A verdict written for the test.", "new": "The multi-user server."}}


def test_last_verified_moves_when_the_request_says_so(staff_client, seed):
    staff_client.patch("/api/v1/tools/vllm/", {"last_verified": "2026-11-28"}, format="json")
    assert Tool.objects.get(slug="vllm").last_verified == datetime.date(2026, 11, 28)
    assert AuditEntry.objects.get().changes == {"last_verified": {"old": "2026-10-19", "new": "2026-11-28"}}


def test_an_update_that_changes_nothing_is_not_audited(staff_client, seed):
    assert staff_client.patch("/api/v1/tools/vllm/", {"name": "vLLM"}, format="json").status_code == 200
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/tools/", {**NEW_TOOL, "slug": "vllm"}, "slug"),
        ("/api/v1/tools/", {**NEW_TOOL, "kind": "robot"}, "kind"),
        ("/api/v1/tools/", {**NEW_TOOL, "rating": "4.5"}, "rating_source"),
        ("/api/v1/tools/", {**NEW_TOOL, "rating": "7"}, "rating"),
        ("/api/v1/tools/", {**NEW_TOOL, "licence": "WTFPL"}, "licence"),
        ("/api/v1/tools/", {**NEW_TOOL, "sources": ["nope"]}, "sources"),
        ("/api/v1/tools/", {"name": "No slug", "kind": "engine"}, "slug"),
        ("/api/v1/prices/", {"tool": "vllm", "item": "m", "unit": "per_mtok", "source": "seed-002"},
         "output_usd_per_mtok"),
        ("/api/v1/prices/", {"tool": "vllm", "item": "m", "unit": "per_hour", "source": "seed-002"}, "amount_usd"),
        ("/api/v1/prices/", {"tool": "vllm", "item": "m", "unit": "per_hour", "amount_usd": "-1",
                             "source": "seed-002"}, "amount_usd"),
        ("/api/v1/sources/", {"key": "seed-002", "title": "dup"}, "key"),
        ("/api/v1/sources/", {"key": "x", "title": "t", "url": "not a url"}, "url"),
        ("/api/v1/probes/targets/", {"slug": "t", "name": "T", "tool": "vllm", "model_id": "m",
                                     "base_url": "https://user:sk-secret@a.example/v1"}, "base_url"),
        ("/api/v1/probes/targets/", {"slug": "t", "name": "T", "tool": "vllm", "model_id": "m",
                                     "base_url": "https://a.example/v1?key=sk-secret"}, "base_url"),
        ("/api/v1/probes/targets/", {"slug": "t", "name": "T", "tool": "vllm", "model_id": "m",
                                     "base_url": "https://a.example/v1", "api_key_env": "sk-live-123"}, "api_key_env"),
    ],
)
def test_invalid_writes_are_400s_naming_the_field_and_change_nothing(staff_client, seed, path, body, field):
    before = _snapshot()
    response = staff_client.post(path, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert _snapshot() == before
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "GROQ_KEY"])
def test_a_target_cannot_name_another_secret_as_its_key(staff_client, seed, name):
    # Otherwise a staff token could point a target at its own server and have the worker send that secret.
    body = {"slug": "evil", "name": "Evil", "tool": "vllm", "model_id": "m", "base_url": "https://evil.example/v1",
            "api_key_env": name}
    created = staff_client.post("/api/v1/probes/targets/", body, format="json")
    assert created.status_code == 400, created.content
    [message] = created.json()["error"]["fields"]["api_key_env"]
    assert message.startswith("api_key_env:") and "_API_KEY or _TOKEN" in message and "DJANGO_" in message
    ProbeTargetFactory(slug="good", tool=seed["tool"], api_key_env="GOOD_API_KEY")
    patched = staff_client.patch("/api/v1/probes/targets/good/", {"api_key_env": name}, format="json")
    assert patched.status_code == 400, patched.content
    assert "api_key_env" in patched.json()["error"]["fields"]
    assert ProbeTarget.objects.get(slug="good").api_key_env == "GOOD_API_KEY"
    assert not ProbeTarget.objects.filter(slug="evil").exists()


def test_rejected_key_is_not_echoed_back(staff_client, seed):
    response = staff_client.post(
        "/api/v1/probes/targets/",
        {"slug": "t", "name": "T", "tool": "vllm", "model_id": "m", "base_url": "https://a.example/v1",
         "api_key_env": "sk-live-123"},
        format="json",
    )
    assert "sk-live-123" not in response.content.decode()


def test_staff_creates_and_updates_prices_sources_and_targets(staff_client, seed):
    price = staff_client.post(
        "/api/v1/prices/",
        {"tool": "vllm", "item": "H100 80GB", "unit": "per_hour", "tier": "on_demand", "amount_usd": "2.49",
         "source": "seed-002", "verified_on": "2026-11-01"},
        format="json",
    )
    assert price.status_code == 201, price.content
    price_id = price.json()["id"]
    patched = staff_client.patch(f"/api/v1/prices/{price_id}/", {"amount_usd": "2.29"}, format="json").json()
    assert (patched["amount_usd"], patched["verified_on"]) == ("2.2900", "2026-11-01")

    assert staff_client.post("/api/v1/sources/", {"key": "groq-pricing", "title": "Groq pricing"},
                             format="json").status_code == 201
    assert staff_client.patch("/api/v1/sources/groq-pricing/", {"verified_on": "2026-11-20"},
                              format="json").json()["verified_on"] == "2026-11-20"

    target = staff_client.post(
        "/api/v1/probes/targets/",
        {"slug": "vllm-local", "name": "vLLM local", "tool": "vllm", "base_url": "http://127.0.0.1:8000/v1",
         "model_id": "qwen", "api_key_env": "VLLM_API_KEY"},
        format="json",
    )
    assert target.status_code == 201, target.content
    assert target.json()["api_key_env"] == "VLLM_API_KEY"
    assert staff_client.patch("/api/v1/probes/targets/vllm-local/", {"enabled": True},
                              format="json").json()["enabled"] is True
    actions = list(AuditEntry.objects.order_by("id").values_list("object_type", "action"))
    assert actions == [
        ("catalog.priceitem", "create"), ("catalog.priceitem", "update"), ("catalog.source", "create"),
        ("catalog.source", "update"), ("probes.probetarget", "create"), ("probes.probetarget", "update"),
    ]


def test_duplicate_price_is_a_400_not_a_500(staff_client, seed):
    PriceItemFactory(tool=seed["tool"], item="H100", unit="per_hour", amount_usd="2", source=seed["source"])
    response = staff_client.post(
        "/api/v1/prices/",
        {"tool": "vllm", "item": "H100", "unit": "per_hour", "amount_usd": "3", "source": "seed-002"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]


def test_run_now_answers_202_with_run_ids_and_enqueues_after_commit(
    staff_client, seed, django_capture_on_commit_callbacks
):
    ProbeTargetFactory(slug="t0", tool=seed["tool"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_client.post(
            "/api/v1/probes/targets/t0/run/", {"suites": ["speed"], "workloads": ["in-100", "in-1k"]}, format="json"
        )
    assert response.status_code == 202, response.content
    runs = response.json()["runs"]
    assert [(run["suite"], run["workload"], run["status"]) for run in runs] == [
        ("speed", "in-100", "queued"), ("speed", "in-1k", "queued")
    ]
    assert set(ProbeRun.objects.values_list("id", flat=True)) == {run["id"] for run in runs}
    assert len(callbacks) == 2  # the send and the page cache's generation, once the transaction commits
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.object_type) == ("trigger", "probes.probetarget")
    assert entry.changes["runs"]["new"] == [run["id"] for run in runs]


def test_run_now_with_an_unknown_workload_names_the_field(staff_client, seed):
    ProbeTargetFactory(slug="t0", tool=seed["tool"])
    response = staff_client.post("/api/v1/probes/targets/t0/run/", {"workloads": ["in-1m"]}, format="json")
    assert response.status_code == 400
    assert "workloads" in response.json()["error"]["fields"]
    assert not ProbeRun.objects.exists()
