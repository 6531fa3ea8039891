"""A probe with a real-looking key set: the key reaches the provider's Authorization header and nowhere else —
not the database, task messages, worker or client logs, CLI output, stored errors or admin pages."""
import io
import json
import logging
import subprocess

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from probes.models import ProbeRun
from probes.services.runs.enqueue import probe_runs_enqueue
from probes.services.runs.execute import probe_target_run_now
from tests.factories import ProbeTargetFactory
from tests.workers import Worker, wait_for, worker_env
from tests.simulator import start_simulator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker, pytest.mark.slow]


def _database_dump() -> str:
    """Every row of every table of the test database, as pg_dump writes it."""
    db = connection.settings_dict
    result = subprocess.run(
        ["pg_dump", "--data-only", "-h", db["HOST"], "-p", str(db["PORT"]), "-U", db["USER"], db["NAME"]],
        capture_output=True, text=True, timeout=60, check=True,
    )
    return result.stdout


def test_the_key_never_leaves_the_request(api_key, broker, published, tmp_path, caplog, admin_client,
                                          django_capture_on_commit_callbacks):
    caplog.set_level(logging.DEBUG)
    with start_simulator("groq", schedule={"ttft_ms": 10, "itl_ms": 1, "tokens": 8}) as healthy, \
            start_simulator("fireworks", fault="text_400") as broken:
        good = ProbeTargetFactory(base_url=healthy.base_url, model_id=healthy.model, enabled=True)
        bad = ProbeTargetFactory(base_url=broken.base_url, model_id=broken.model, enabled=True)

        # 1. Through Celery: the messages waiting in Redis, then a real worker executing them.
        runs = probe_runs_enqueue(target=good, suites=("speed", "compat"), workloads=["in-100"], max_tokens=8)
        runs += probe_runs_enqueue(target=bad, suites=("speed",), workloads=["in-100"], max_tokens=8)
        queued = broker.lrange("celery", 0, -1)
        assert len(queued) == len(runs) == len(published) == 3
        assert all(api_key.encode() not in message for message in queued)
        assert api_key not in json.dumps(published, default=str)
        worker = Worker("keyholder", tmp_path / "worker.log", worker_env())
        try:
            worker.wait_ready()
            wait_for(lambda: all(r.is_finished for r in ProbeRun.objects.filter(pk__in=[r.pk for r in runs])),
                     timeout=120, what="the queued runs", logs=worker.logs)
        finally:
            worker.stop()
        worker_logs = worker.logs()

        # 2. Through the CLI, ad hoc and saved, and 3. through the services directly.
        cli_out = io.StringIO()
        call_command("probe", "--base-url", healthy.base_url, "--model", healthy.model, "--api-key-env",
                     "ATLAS_TEST_API_KEY", "--suite", "speed", "--requests", "1", "--max-tokens", "8", "--json",
                     stdout=cli_out)
        call_command("probe", "--target", bad.slug, "--save", "--suite", "all", "--input-tokens", "100",
                     "--requests", "1", "--max-tokens", "8", "--json", stdout=cli_out)
        probe_target_run_now(target=good, suites=("speed",), workloads=["in-100"], requests=1, max_tokens=8)

        authorizations = {r["headers"].get("authorization") for r in healthy.chat_requests + broken.chat_requests}
        assert authorizations == {f"Bearer {api_key}"}  # the key was really used

    statuses = dict(ProbeRun.objects.values_list("target__slug", "status").order_by("pk"))
    assert statuses[good.slug] == "succeeded"
    failed = ProbeRun.objects.filter(target=bad, suite="speed").first()
    assert failed.status == "failed" and failed.error_message  # a stored error exists to inspect

    admin_pages = "".join(
        admin_client.get(url).content.decode()
        for url in [
            reverse("admin:probes_probetarget_changelist"),
            reverse("admin:probes_probetarget_change", args=[good.pk]),
            reverse("admin:probes_proberun_changelist"),
            *[reverse("admin:probes_proberun_change", args=[run.pk]) for run in ProbeRun.objects.all()],
            reverse("admin:probes_requestmeasurement_changelist"),
            reverse("admin:probes_compatoutcome_changelist"),
        ]
    )
    assert "ATLAS_TEST_API_KEY" in admin_pages

    places = {
        "database": _database_dump(),
        "worker log": worker_logs,
        "captured logs": caplog.text,
        "CLI output": cli_out.getvalue(),
        "admin pages": admin_pages,
        "stored errors": json.dumps(list(ProbeRun.objects.values("error_class", "error_message"))),
    }
    assert "probe_run_task[" in places["worker log"]  # the log is the worker's, not empty
    for place, text in places.items():
        assert api_key not in text, f"the key leaked into the {place}"
        assert api_key[-12:] not in text, f"part of the key leaked into the {place}"
