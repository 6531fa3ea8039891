"""Admin: targets editable with their key variable's name and state; runs and measurements read-only."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from probes.models import CompatOutcome, CompatStatus, MeasurementSummary, ProbeRun, ProbeTarget, RequestMeasurement
from tests.factories import (
    CompatOutcomeFactory,
    CompatStatusFactory,
    MeasurementSummaryFactory,
    ProbeRunFactory,
    ProbeTargetFactory,
    RequestMeasurementFactory,
)

pytestmark = pytest.mark.django_db

MODELS = (ProbeTarget, ProbeRun, RequestMeasurement, CompatOutcome, MeasurementSummary, CompatStatus)


def _url(model, action="changelist", *args):
    return reverse(f"admin:probes_{model._meta.model_name}_{action}", args=args)


@pytest.fixture
def probe_rows():
    run = ProbeRunFactory()
    RequestMeasurementFactory(run=run, index=0)
    CompatOutcomeFactory()
    MeasurementSummaryFactory(target=run.target)
    CompatStatusFactory(target=run.target)
    return run


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_probes_model_has_a_working_changelist(admin_client, probe_rows, model):
    response = admin_client.get(_url(model))
    assert response.status_code == 200


def test_measurements_cannot_be_added_or_edited(admin_client, probe_rows):
    for model in MODELS[1:]:
        assert admin_client.get(_url(model, "add")).status_code == 403
    run_page = admin_client.get(_url(ProbeRun, "change", probe_rows.pk))
    assert run_page.status_code == 200
    assert b'name="_save"' not in run_page.content


def test_target_page_shows_the_key_variable_name_and_whether_it_is_set(admin_client, monkeypatch):
    target = ProbeTargetFactory(api_key_env="ATLAS_ADMIN_API_KEY")
    monkeypatch.delenv("ATLAS_ADMIN_API_KEY", raising=False)
    page = admin_client.get(_url(ProbeTarget, "change", target.pk)).content.decode()
    assert "ATLAS_ADMIN_API_KEY is NOT set in this process" in page

    monkeypatch.setenv("ATLAS_ADMIN_API_KEY", "sk-admin-visible-value-0123456789")
    page = admin_client.get(_url(ProbeTarget, "change", target.pk)).content.decode()
    assert "ATLAS_ADMIN_API_KEY is set in this process" in page
    assert "sk-admin-visible-value-0123456789" not in page


def test_targets_are_editable_and_the_key_name_is_validated(admin_client):
    target = ProbeTargetFactory()
    data = {
        "slug": target.slug, "name": "Renamed", "tool": target.tool_id, "enabled": "on",
        "base_url": "https://api.example.com/v1", "model_id": "m", "api_key_env": "sk-not-a-name",
        "hardware": "", "quantization": "", "engine_version": "", "region": "", "notes": "",
    }
    response = admin_client.post(_url(ProbeTarget, "change", target.pk), data)
    assert response.status_code == 200
    assert "api_key_env: must be the NAME of an environment variable" in response.content.decode()
    assert "end with _API_KEY or _TOKEN" in response.content.decode()
    data["api_key_env"] = "EXAMPLE_API_KEY"
    response = admin_client.post(_url(ProbeTarget, "change", target.pk), data)
    assert response.status_code == 302
    target.refresh_from_db()
    assert (target.name, target.api_key_env) == ("Renamed", "EXAMPLE_API_KEY")


def test_enqueue_action_queues_runs(admin_client, published, django_capture_on_commit_callbacks):
    target = ProbeTargetFactory()
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            _url(ProbeTarget), {"action": "enqueue_probe_runs", "_selected_action": [target.pk]}, follow=True
        )
    assert response.status_code == 200
    assert ProbeRun.objects.filter(target=target, status="queued").count() == len(published) > 0


@pytest.mark.parametrize("model", [ProbeRun, ProbeTarget, RequestMeasurement], ids=lambda m: m.__name__)
def test_changelist_query_count_does_not_grow_with_rows(admin_client, model):
    factory = {
        ProbeRun: ProbeRunFactory, ProbeTarget: ProbeTargetFactory, RequestMeasurement: RequestMeasurementFactory
    }[model]
    counts = []
    for rows in (1, 6):
        factory.create_batch(rows)
        admin_client.get(_url(model))  # warm the session and content types
        with CaptureQueriesContext(connection) as queries:
            assert admin_client.get(_url(model)).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]
