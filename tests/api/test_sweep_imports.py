"""POST /api/v1/probes/sweeps/import/: a peer tool's own result file becomes a labelled run; bad files 400."""
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lab.models import SweepLevel, SweepRun
from tests.factories import HardwareSpecFactory, ProbeTargetFactory, ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "probe_client" / "fixtures" / "peer_results"
URL = "/api/v1/probes/sweeps/import/"


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content if content is not None else (FIXTURES / name).read_bytes())


@pytest.mark.parametrize(
    ("name", "tool", "label", "levels"),
    [
        ("guidellm-0.8.1-benchmarks.json", "guidellm", "GuideLLM", [1.0, 2.0, 4.0]),
        ("aiperf-0.13.0-profile_export_aiperf_sweep.json", "aiperf", "NVIDIA AIPerf", [1.0, 2.0, 4.0]),
        ("aiperf-0.13.0-profile_export_aiperf.json", "aiperf", "NVIDIA AIPerf", [2.0]),
        ("vllm-bench-serve-documented-format.jsonl", "vllm-bench-serve", "vLLM bench serve", [1.0, 4.0, 16.0]),
    ],
)
def test_staff_import_each_tools_file_as_a_labelled_run(staff_client, name, tool, label, levels):
    engine = ToolFactory(slug="vllm", kind="engine")
    hardware = HardwareSpecFactory(slug="l4")
    response = staff_client.post(
        URL, {"file": upload(name), "tool": "vllm", "hardware": "l4", "hourly_price_usd": "0.80"}, format="multipart"
    )
    assert response.status_code == 201, response.json()
    run = SweepRun.objects.get(pk=response.json()["id"])
    assert (run.status, run.source_tool, run.tool, run.hardware) == (SweepRun.Status.IMPORTED, tool, engine, hardware)
    assert run.card["tool_label"] == label
    stored = list(run.levels.order_by("level"))
    assert [level.level for level in stored] == levels
    for level in stored:
        assert level.cost_per_1m_output_usd == pytest.approx(0.80 / 3600 / level.output_tps * 1e6)
    detail = staff_client.get(response.json()["url"]).json()
    assert detail["source_tool"] == tool and detail["levels"][0]["ttft_p50_ms"] > 0


def test_the_named_tool_must_match_the_file(staff_client):
    response = staff_client.post(
        URL, {"file": upload("guidellm-0.8.1-benchmarks.json"), "source_tool": "vllm-bench-serve"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["file"] == [
        "file: not a vllm-bench-serve result file (it looks like a guidellm file)"
    ]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (b"", "The submitted file is empty."),
        (b"not json at all", "file line 1: not valid JSON"),
        (b'{"results": []}', "file: not a result file of vLLM bench serve"),
        (b'{"completed": 4, "median_ttft_ms": -2, "max_concurrency": 2, "duration": 3, "total_input_tokens": 40, '
         b'"total_output_tokens": 40}',
         "file: the figures it holds are not valid (levels.0.ttft_ms.p50"),
    ],
)
def test_bad_files_answer_400_on_file_and_store_nothing(staff_client, content, text):
    response = staff_client.post(URL, {"file": upload("results.json", content)}, format="multipart")
    assert response.status_code == 400
    assert text in response.json()["error"]["fields"]["file"][0]
    assert SweepRun.objects.count() == 0 and SweepLevel.objects.count() == 0


def test_missing_file_and_unknown_slugs_name_their_field(staff_client):
    assert "file" in staff_client.post(URL, {}, format="multipart").json()["error"]["fields"]
    response = staff_client.post(
        URL, {"file": upload("guidellm-0.8.1-benchmarks.json"), "target": "nope"}, format="multipart"
    )
    assert response.status_code == 400 and "target" in response.json()["error"]["fields"]


def test_anonymous_and_non_staff_imports_are_refused(api_client, user_client):
    body = {"file": upload("guidellm-0.8.1-benchmarks.json")}
    assert api_client.post(URL, body, format="multipart").status_code in (401, 403)
    body = {"file": upload("guidellm-0.8.1-benchmarks.json")}
    assert user_client.post(URL, body, format="multipart").status_code == 403
    assert SweepRun.objects.count() == 0


def test_an_import_against_a_target_follows_the_retest_rule(staff_client):
    target = ProbeTargetFactory(api_key_env="")
    first = staff_client.post(URL, {"file": upload("aiperf-0.13.0-profile_export_aiperf.json"), "target": target.slug},
                              format="multipart")
    assert first.status_code == 201
    run = SweepRun.objects.get(pk=first.json()["id"])
    assert run.target == target and run.tool == target.tool and run.model_fingerprint == "sim-model"


BLOCKS = Path(__file__).resolve().parents[1] / "probe_client" / "fixtures" / "console_blocks"


@pytest.mark.parametrize(("name", "tool", "level"), [
    ("vllm_bench_serve__gpustack_gpt-oss-120b_h100_vllm-0.10.2_sharegpt_maxconc4.txt", "vllm-bench-serve", 4.0),
    ("sglang_bench_serving__sgl-cookbook_gpt-oss-120b_b200x8_sglang-0.5.6_sharegpt_conc100.txt",
     "sglang-bench-serving", 100.0),
])
def test_a_pasted_result_block_imports_as_a_labelled_run(staff_client, name, tool, level):
    ToolFactory(slug="vllm", kind="engine")
    content = (BLOCKS / name).read_bytes()
    response = staff_client.post(URL, {"file": upload("paste.txt", content), "tool": "vllm"}, format="multipart")
    assert response.status_code == 201, response.json()
    run = SweepRun.objects.get(pk=response.json()["id"])
    assert run.source_tool == tool and [stored.level for stored in run.levels.all()] == [level]


def test_a_broken_result_block_answers_400_naming_the_line_and_stores_nothing(staff_client):
    lines = (BLOCKS / "vllm_bench_serve__gpustack_gpt-oss-120b_h100_vllm-0.10.2_sharegpt.txt").read_text().splitlines()
    truncated = "\n".join(lines[:12]).encode()
    response = staff_client.post(URL, {"file": upload("paste.txt", truncated)}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["file"][0] == (
        "line 12: the block of line 3 ends before its closing ===== line"
    )
    assert SweepRun.objects.count() == 0 and SweepLevel.objects.count() == 0


def vllm_result(**changes) -> bytes:
    """The first run of the documented vLLM bench serve file, with `changes`."""
    first = json.loads((FIXTURES / "vllm-bench-serve-documented-format.jsonl").read_text().splitlines()[0])
    return json.dumps({**first, **changes}).encode()  # json.dumps writes NaN as vLLM's own json.dump does


def test_a_figure_that_is_not_a_number_is_refused_by_name_and_every_other_one_kept(staff_client):
    ToolFactory(slug="vllm", kind="engine")
    content = vllm_result(mean_ttft_ms="fast", p99_itl_ms=float("nan"))
    response = staff_client.post(URL, {"file": upload("result.json", content), "tool": "vllm"}, format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["warnings"] == [
        {"field": "mean_ttft_ms", "value": "fast", "reason": "not a finite number"},
        {"field": "p99_itl_ms", "value": "nan", "reason": "not a finite number"},
    ]
    level = SweepRun.objects.get().levels.get()
    assert level.ttft_ms == {"p50": 35.0, "p95": 49.0, "p99": 63.0} and "p99" not in level.itl_ms
    clean = staff_client.post(URL, {"file": upload("result.json", vllm_result()), "tool": "vllm"}, format="multipart")
    assert clean.json()["warnings"] == []


def test_a_file_without_one_usable_figure_is_refused_whole(staff_client):
    first = json.loads(vllm_result())
    figures = {key: "fast" for key in first if key.endswith(("_ms", "throughput")) or key == "request_goodput"}
    response = staff_client.post(URL, {"file": upload("result.json", vllm_result(**figures))}, format="multipart")
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["file"][0]
    assert message.startswith("file: no usable figure: refused ") and "mean_ttft_ms = 'fast'" in message
    assert not SweepRun.objects.exists()
