"""/cost/ and /api/v1/cost/ on the real catalog and published benchmarks: the worked example of docs/cost.md, a
target nothing meets, the 400s, the CSV, a sweep saved by `manage.py sweep --save` in the cost table, and the
queries each answer costs as the evidence grows."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lab.models import SweepRun
from recommend.cost import gpu_offer_table, gpu_offers
from tests.factories import HardwareSpecFactory, LanguageModelFactory, SweepLevelFactory, SweepRunFactory, ToolFactory
from tests.simulator import start_simulator

WORKED = "model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_count=1&gpu_hour_usd=2.50"
BASELINE = "gpustack-gpt-oss-120b-h100-sharegpt-c4-vllm-baseline"
BURST = "gpustack-gpt-oss-120b-h100-sharegpt-vllm"


def _answer(client, query: str) -> dict:
    response = client.get(f"/api/v1/cost/?{query}")
    assert response.status_code == 200, response.content[:500]
    return response.json()


def _run_id(key: str) -> int:
    return SweepRun.objects.get(key=key).pk


def test_worked_example_with_a_time_to_first_token_target(loaded_catalog, client):
    answer = _answer(client, f"{WORKED}&max_ttft_ms=1000")

    met = [group for group in answer["answers"] if group["cheapest"]]
    assert len(met) == 1 and met[0]["mode"] == "concurrency"
    cheapest = met[0]["cheapest"]
    assert (cheapest["engine"], cheapest["engine_version"], cheapest["point"]) == ("vLLM", "v0.10.2", "4 concurrent")
    assert cheapest["run_id"] == _run_id(BASELINE) and cheapest["output_tokens_per_second_per_gpu"] == 453.04
    assert round(cheapest["usd_per_million_output_tokens"], 2) == 1.53
    assert cheapest["meets_slo"] is True and cheapest["ttft_p50_ms"] == pytest.approx(47.49)
    # Every other comparison in every other mode says so, with no figure.
    assert {group["verdict"] for group in answer["answers"] if not group["cheapest"]} == {"no measured point meets it"}

    hosted = {row["provider"]: row for row in answer["hosted"] if row["workload"] == met[0]["workload"]
              and row["mode"] == "concurrency"}
    assert {"Fireworks AI", "Groq", "Together AI"} <= set(hosted)
    # $0.60 per million output plus $0.15 per million input, at the 22,946 : 21,691 mix of that run.
    for provider in ("Fireworks AI", "Groq", "Together AI"):
        assert hosted[provider]["usd_per_million_output_tokens"] == pytest.approx(0.60 + 0.15 * 22946 / 21691,
                                                                                  abs=2e-3)
    publishers = {row["publisher"] for row in hosted.values() if row["publisher"]}
    assert len(publishers) == 1, "latency and speed come from one publisher"
    assert all(row["meets_slo"] in (True, False, None) for row in hosted.values())


def test_worked_example_without_a_target_is_the_burst(loaded_catalog, client):
    answer = _answer(client, WORKED)

    burst = next(group for group in answer["answers"]
                 if group["mode"] == "burst" and group["cheapest"] and group["workload"] == "ShareGPT")
    assert round(burst["cheapest"]["usd_per_million_output_tokens"], 2) == 0.24
    assert burst["cheapest"]["ttft_p50_ms"] > 20_000
    row = next(row for row in answer["results"] if row["run_id"] == _run_id(BURST))
    assert (row["mode"], row["point"], row["output_tokens_per_second_per_gpu"]) == ("burst", "1,000 prompts at once",
                                                                                     2901.05)
    assert row["usd_per_million_output_tokens"] == pytest.approx(0.2394, abs=1e-4)
    assert round(row["ttft_p50_ms"] / 1000) == 26 and row["meets_slo"] is True
    # Never costed across modes: the burst and the 4-concurrent run are separate answers.
    assert all(group["cheapest"]["mode"] == group["mode"] for group in answer["answers"] if group["cheapest"])


def test_a_target_nothing_meets(loaded_catalog, client):
    answer = _answer(client, f"{WORKED}&max_ttft_ms=1")

    assert answer["answers"] and all(group["cheapest"] is None and group["verdict"] == "no measured point meets it"
                                     for group in answer["answers"])
    page = client.get(f"/cost/?{WORKED}&max_ttft_ms=1").content.decode()
    assert "no measured point meets it" in page and "Cheapest measured point" not in page


def test_the_price_defaults_to_the_lowest_sourced_offer(loaded_catalog, client):
    answer = _answer(client, "model=gpt-oss-120b&hardware=nvidia-h100-sxm")

    lowest = gpu_offers(hardware="nvidia-h100-sxm")[0]
    assert answer["gpu_price"] == {"usd_per_gpu_hour": lowest.usd_per_gpu_hour, "provider": lowest.provider,
                                   "offer": lowest.offer, "url": lowest.url, "observed_on": lowest.observed_on,
                                   "user_supplied": False}
    assert _answer(client, f"{WORKED}")["gpu_price"]["user_supplied"] is True


@pytest.mark.parametrize("query, field", [
    ("model=no-such-model&hardware=nvidia-h100-sxm&gpu_hour_usd=2", "model"),
    ("model=gpt-oss-120b&hardware=no-such-gpu&gpu_hour_usd=2", "hardware"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=0", "gpu_hour_usd"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=-2.5", "gpu_hour_usd"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=nan", "gpu_hour_usd"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2&max_ttft_ms=0", "max_ttft_ms"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2&min_tokens_per_user=-5", "min_tokens_per_user"),
    ("model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2&gpu_count=0", "gpu_count"),
])
def test_bad_input_is_a_400_naming_the_field(loaded_catalog, client, query, field):
    response = client.get(f"/api/v1/cost/?{query}")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    page = client.get(f"/cost/?{query}")
    assert page.status_code == 400 and 'id="form-errors"' in page.content.decode()


def test_hardware_without_a_sourced_price_asks_for_one(loaded_catalog, client):
    response = client.get("/api/v1/cost/?model=gpt-oss-120b&hardware=apple-m3-ultra")
    assert response.status_code == 400 and "gpu_hour_usd" in response.json()["error"]["fields"]
    # A link from a page about that hardware is a question, not an error: the page asks for the price.
    page = client.get("/cost/?model=gpt-oss-120b&hardware=apple-m3-ultra")
    assert page.status_code == 200 and "data-price-needed" in page.content.decode()


def test_csv_has_one_row_per_costed_point(loaded_catalog, client):
    response = client.get(f"/api/v1/cost/?{WORKED}&max_ttft_ms=1000&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == _answer(client, f"{WORKED}&max_ttft_ms=1000")["count"]
    cheapest = [row for row in rows if row["cheapest"] == "true"]
    assert len(cheapest) == 1 and cheapest[0]["point"] == "4 concurrent"
    assert {"engine", "engine_version", "series_key", "usd_per_million_output_tokens",
            "usd_per_million_total_tokens", "meets_slo", "interpolated"} <= set(rows[0])


def test_page_draws_the_table_and_the_chart_with_sources(loaded_catalog, client):
    response = client.get(f"/cost/?{WORKED}&max_ttft_ms=1000")
    page = response.content.decode()

    assert response.status_code == 200
    assert "$1.53 per million output tokens" in page and "<svg" in page and "Hosted, same mix" in page
    assert "Fireworks AI" in page and "Groq" in page and "Together AI" in page
    assert "https://github.com/gpustack/gpustack/blob/main/docs/performance-lab/gpt-oss-120b/h100.md" in page
    assert "/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/" in page
    # The sourced prices for the hardware, each with its page and the day it was read.
    assert "https://www.runpod.io/pricing" in page and "https://lambda.ai/instances" in page


def test_an_empty_form_asks_without_answering(loaded_catalog, client):
    response = client.get("/cost/")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="max_ttft_ms"' in page and 'id="result"' not in page


@pytest.fixture(scope="module")
def simulator():
    with start_simulator("openai", schedule={"ttft_ms": 10, "itl_ms": 2, "tokens": 8},
                         engine={"slots": 4, "itl_ms_per_active": 1}) as sim:
        yield sim


@pytest.mark.django_db(transaction=True)
def test_a_saved_sweep_is_in_the_cost_table(simulator, client):
    call_command("load_catalog", verbosity=0)
    out = io.StringIO()
    call_command("sweep", "--base-url", simulator.base_url, "--model", simulator.model, "--levels", "1,2",
                 "--requests-per-level", "3", "--input-tokens", "50", "--max-tokens", "8", "--save", "--tool", "vllm",
                 "--hardware", "nvidia-h100-sxm", "--json", stdout=out, stderr=io.StringIO())
    run_id = json.loads(out.getvalue())["run"]

    answer = _answer(client, "model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2.50")
    rows = [row for row in answer["results"] if row["run_id"] == run_id]
    assert [row["level"] for row in rows] == [1.0, 2.0]
    assert all(row["measured_here"] and row["series_url"] == f"/engines/lab/{run_id}/" for row in rows)
    assert all(row["usd_per_million_output_tokens"] > 0 for row in rows)
    page = client.get("/cost/?model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2.50").content.decode()
    assert f'href="/engines/lab/{run_id}/"' in page and "measured here" in page


def _lab_runs(count: int, *, model, hardware) -> None:
    tool = ToolFactory(slug="engine-under-test", kind="engine")
    for _ in range(count):
        run = SweepRunFactory(target=None, tool=tool, hardware=hardware, hardware_count=1,
                              card={"model_id": model.slug, "engine_version": "1.0"})
        for level in (1.0, 2.0, 4.0):
            SweepLevelFactory(run=run, level=level)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/cost/", "/cost/"])
def test_queries_stay_constant_as_runs_grow(client, path):
    model = LanguageModelFactory(slug="model-under-test")
    hardware = HardwareSpecFactory(slug="gpu-under-test")
    _lab_runs(2, model=model, hardware=hardware)

    def count(price: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(f"{path}?model={model.slug}&hardware={hardware.slug}&gpu_hour_usd={price}"
                                  "&max_ttft_ms=500")
        assert response.status_code == 200, response.content[:300]
        return len(queries)

    count("1")  # builds the per-generation catalog snapshot the hosted prices are read from
    few = count("2")
    _lab_runs(10, model=model, hardware=hardware)
    count("3")  # new rows move the data generation: the snapshot is built again
    assert count("4") == few


BREAK_EVEN = ("model=gpt-oss-120b&input_tokens_per_day=10000000&output_tokens_per_day=10000000&gpu_count=1"
              "&own_gpu_usd_per_hour=2.50&max_ttft_ms=1000")


def test_break_even_says_whether_the_hardware_carries_the_volume(loaded_catalog, client):
    carrying = client.get(f"/api/v1/break-even/?{BREAK_EVEN}").json()["carrying"]

    # 10M output tokens in half a day: 231 tok/s; the 4-concurrent vLLM point gives 453 at TTFT p50 47 ms.
    assert carrying["best_point"]["point"] == "4 concurrent"
    assert carrying["best_point"]["output_tokens_per_second_per_gpu"] == 453.04
    assert round(carrying["required_output_tokens_per_second_per_gpu"]) == 231 and carrying["carries_volume"]
    # At $2.50 an hour the GPU matches the cheapest API at a volume needing far more than 453 tok/s.
    assert carrying["carries_break_even_volume"] is False
    assert carrying["cost_link"] == ("/cost/?model=gpt-oss-120b&hardware=nvidia-h100-sxm&gpu_hour_usd=2.5&gpu_count=1"
                                     "&max_ttft_ms=1000")
    page = client.get(f"/break-even/?{BREAK_EVEN}").content.decode()
    assert "data-carrying" in page and 'href="/cost/?model=gpt-oss-120b&amp;hardware=nvidia-h100-sxm' in page

    nothing = client.get(f"/api/v1/break-even/?{BREAK_EVEN}&max_ttft_ms=1").json()["carrying"]
    assert nothing["best_point"] is None and nothing["verdict"] == "no measured point meets it"
    bad = client.get(f"/api/v1/break-even/?{BREAK_EVEN}&hardware=no-such-gpu")
    assert bad.status_code == 400 and "hardware" in bad.json()["error"]["fields"]


def test_evidence_model_and_wizard_pages_link_to_the_cost_page(loaded_catalog, client):
    evidence = client.get("/engines/evidence/gpt-oss-120b/nvidia-h100-sxm/").content.decode()
    assert 'href="/cost/?model=gpt-oss-120b&amp;hardware=nvidia-h100-sxm"' in evidence
    model = client.get("/models/gpt-oss-120b/").content.decode()
    assert 'href="/cost/?model=gpt-oss-120b"' in model
    # The model page's link names no hardware: answered for the default one.
    assert client.get("/cost/?model=gpt-oss-120b").status_code == 200
    wizard = client.get("/recommend/?hardware=nvidia_hopper_node&deployment=production&concurrency=64").content
    assert b'data-cost-link' in wizard and b'href="/cost/?model=gpt-oss-120b&amp;hardware=nvidia-h100-sxm"' in wizard


def test_every_gpu_price_is_for_catalog_hardware_and_sourced():
    root = Path(__file__).resolve().parents[2] / "fixtures"
    slugs = {spec["slug"] for spec in yaml.safe_load((root / "catalog" / "hardware_specs.yaml").read_text())[
        "hardware_specs"]}
    offers = gpu_offer_table(root)
    assert offers and {offer.hardware for offer in offers} <= slugs
    for offer in offers:
        assert offer.usd_per_gpu_hour > 0 and offer.url.startswith("https://") and offer.read_via.startswith("https://")
        assert offer.observed_on <= offer.verified_on
