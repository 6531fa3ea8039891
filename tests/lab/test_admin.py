"""Admin of the lab: runs are read-only records, and a peer tool's result file is imported as a run."""
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from lab.models import SweepLevel, SweepRun
from probe_client.sweep.imports import MAX_RESULT_ROWS
from tests.factories import SweepLevelFactory, SweepRunFactory

pytestmark = pytest.mark.django_db

PEER_RESULTS = Path(__file__).resolve().parents[1] / "probe_client" / "fixtures" / "peer_results"


def _url(action="changelist", *args):
    return reverse(f"admin:lab_sweeprun_{action}", args=args)


def test_lab_runs_are_listed_and_cannot_be_added_or_edited(admin_client):
    run = SweepLevelFactory(run=SweepRunFactory(), level=1.0).run

    assert admin_client.get(_url()).status_code == 200
    assert admin_client.get(_url("add")).status_code == 403
    page = admin_client.get(_url("change", run.pk))
    assert page.status_code == 200
    assert b'name="_save"' not in page.content


def test_a_result_file_is_imported_from_the_lab_runs_list(admin_client):
    listing = admin_client.get(_url())
    assert _url("import").encode() in listing.content
    assert admin_client.get(_url("import")).status_code == 200
    upload = SimpleUploadedFile("benchmarks.json", (PEER_RESULTS / "guidellm-0.8.1-benchmarks.json").read_bytes())
    response = admin_client.post(_url("import"), {"file": upload, "source_tool": "", "hardware_count": 1})
    run = SweepRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("lab:sweep-detail", args=[run.pk])
    assert run.source_tool == "guidellm" and run.levels.count() == 3


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (b"{}\n" * (MAX_RESULT_ROWS + 1), f"more than {MAX_RESULT_ROWS:,} JSON lines"),
        (b'{"benchmarks": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper than 64 levels"),
    ],
)
def test_a_hostile_file_is_refused_naming_the_limit(admin_client, content, text):
    response = admin_client.post(_url("import"), {"file": SimpleUploadedFile("r.jsonl", content), "hardware_count": 1})
    assert response.status_code == 400
    assert text in response.content.decode()
    assert not SweepRun.objects.exists()


def test_a_bad_file_is_refused_with_its_reason_and_nothing_is_stored(admin_client):
    upload = SimpleUploadedFile("results.json", b'{"results": []}')
    response = admin_client.post(_url("import"), {"file": upload, "hardware_count": 1})
    assert response.status_code == 400
    assert b"not a result file of vLLM bench serve" in response.content
    assert SweepRun.objects.count() == 0 and SweepLevel.objects.count() == 0
