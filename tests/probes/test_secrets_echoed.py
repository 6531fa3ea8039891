"""A provider that echoes the key it was sent, in full and masked the ways providers mask it (``sk-atl...9f3a1c``,
``***``, ``…``), in the response headers a run keeps and in its error JSON: nothing of the key reaches the
database, the API (JSON and CSV), the pages or the admin, for probe runs and lab sweeps alike."""
import subprocess

import pytest
from django.db import connection
from django.urls import reverse

from lab.services.run import sweep_run_create, sweep_run_execute
from probes.models import ProbeRun
from probes.services.runs.execute import probe_target_run_now
from tests.factories import ProbeTargetFactory
from tests.simulator import start_simulator
from tests.simulator.server import masked_keys

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MASKS = ("...", "***", "…")


def _database_dump() -> str:
    db = connection.settings_dict
    result = subprocess.run(
        ["pg_dump", "--data-only", "-h", db["HOST"], "-p", str(db["PORT"]), "-U", db["USER"], db["NAME"]],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout


def _traces(key: str) -> list[str]:
    """What must appear nowhere: the key, a long bare start or end of it, and each masked form's visible parts
    next to their mask (the bare 6-character parts alone could match unrelated hex by chance)."""
    head, tail = key[:6], key[-6:]
    return [key, key[:12], key[-12:], *masked_keys(key), *(f"{head}{mask}" for mask in MASKS),
            *(f"{mask}{tail}" for mask in MASKS), f"{head}\\u2026", f"\\u2026{tail}"]


def test_a_key_echoed_in_full_and_masked_reaches_no_storage_api_page_or_csv(api_key, admin_client, client):
    schedule = {"ttft_ms": 5, "itl_ms": 1, "tokens": 8}
    with start_simulator("openai", schedule=schedule, echo_key=True) as echoing, \
            start_simulator("openai", fault="echo_key_401") as refusing:
        good = ProbeTargetFactory(base_url=echoing.base_url, model_id=echoing.model, enabled=True)
        bad = ProbeTargetFactory(base_url=refusing.base_url, model_id=refusing.model, enabled=True)
        probe_target_run_now(target=good, suites=("speed",), workloads=["in-100"], requests=2, max_tokens=8)
        probe_target_run_now(target=bad, suites=("speed",), workloads=["in-100"], requests=1, max_tokens=8)
        sweep = sweep_run_create(target=good, workload={"name": "short", "input": 40, "output": 8},
                                 plan={"levels": [1], "requests_per_level": 2})
        assert sweep_run_execute(run_id=sweep.pk, worker="test") == "finished"

        # The providers really echoed the key: in the headers of every answer, and in the refusal's body.
        assert {r["headers"]["authorization"] for r in echoing.chat_requests + refusing.chat_requests} == {
            f"Bearer {api_key}"
        }

    good_run = ProbeRun.objects.get(target=good)
    bad_run = ProbeRun.objects.get(target=bad)
    assert good_run.status == "succeeded" and bad_run.status == "failed" and bad_run.error_message
    assert "[REDACTED]" in bad_run.error_message  # the echo was there to remove
    assert good_run.measurements.exclude(request_id="").exists()  # the echoed request ids were kept, scrubbed

    api = [
        "/api/v1/probes/runs/", f"/api/v1/probes/runs/{good_run.pk}/", f"/api/v1/probes/runs/{bad_run.pk}/",
        "/api/v1/probes/runs/?format=csv", "/api/v1/probes/targets/?format=csv", "/api/v1/probes/summaries/?format=csv",
        f"/api/v1/probes/sweeps/{sweep.pk}/", f"/api/v1/probes/sweeps/{sweep.pk}/levels/?format=csv",
    ]
    pages = ["/providers/", "/engines/", reverse("lab:sweep-detail", args=[sweep.pk])]
    admin = [
        reverse("admin:probes_proberun_change", args=[good_run.pk]),
        reverse("admin:probes_proberun_change", args=[bad_run.pk]),
        reverse("admin:probes_requestmeasurement_changelist"),
        reverse("admin:lab_sweeprun_change", args=[sweep.pk]),
    ]
    places = {"database": _database_dump()}
    for url in api + pages:
        response = client.get(url)
        assert response.status_code == 200, url
        places[url] = response.content.decode()
    for url in admin:
        response = admin_client.get(url)
        assert response.status_code == 200, url
        places[url] = response.content.decode()

    for place, text in places.items():
        for trace in _traces(api_key):
            assert trace not in text, f"{trace!r} reached {place}"
