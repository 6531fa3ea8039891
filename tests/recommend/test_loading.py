"""fixtures/use_cases.yaml loads idempotently, and every use case lists the seeds' picks in their order."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from catalog.models import UseCase, UseCaseRecommendation
from core.loading import FixtureError
from recommend.loading import load
from tests.factories import SourceFactory, ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# Recommended tools in order, per use case, read off the seeds.
EXPECTED = {
    # Seed 002, "where this step fits"
    "chat-with-your-documents": ["together-ai"],  # "Chat with your documents: we would start with Together AI"
    "voice-agent": ["groq"],  # "Voice agent: we would start with Groq"
    "private-on-device-ai": ["llama-cpp", "mlx"],  # "Ollama, llama.cpp, MLX" minus Ollama (seed 000: do not use)
    "your-own-fine-tuned-model": ["vllm"],  # "Your own fine-tuned model: we would start with vLLM"
    # Seed 000, the opinionated final map
    "local-ai-user": ["lm-studio", "harbor", "llama-cpp", "mlx", "exllamav2", "exllamav3"],
    "building-a-local-agent": ["llama-cpp", "mlx", "vllm"],
    "serving-an-internal-team": ["vllm", "sglang"],
    "serving-customers-at-scale": ["vllm", "sglang", "tensorrt-llm", "nvidia-dynamo"],
    "nvidia-datacenter": ["tensorrt-llm", "vllm", "sglang", "nvidia-dynamo"],
    "apple-silicon": ["mlx", "llama-cpp"],
    "edge-app-browser-windows": ["llama-cpp", "mlc-llm", "onnxruntime-genai", "openvino-genai"],
    # Seed 000, hardware strategy recipes
    "recipe-cpu-only-server": ["llama-cpp", "openvino-genai", "onnxruntime-genai"],
    "recipe-mac": ["mlx", "mlx-lm", "llama-cpp"],
    "recipe-single-rtx": ["exllamav2", "llama-cpp", "vllm"],
    "recipe-two-to-four-rtx": ["exllamav3", "vllm", "sglang"],
    "recipe-8x-h100-h200": ["vllm", "sglang", "tensorrt-llm", "nvidia-dynamo"],
    "recipe-blackwell": ["tensorrt-llm", "sglang", "vllm", "nvidia-dynamo"],
    "recipe-amd-instinct": ["vllm", "sglang"],
    "recipe-intel": ["openvino-genai", "onnxruntime-genai"],
    "recipe-browser-mobile-app": ["mlc-llm", "onnxruntime-genai"],
}


def test_every_use_case_in_the_fixture_is_checked():
    fixture = yaml.safe_load((FIXTURES / "use_cases.yaml").read_text())
    assert {row["slug"] for row in fixture["use_cases"]} == set(EXPECTED)


def test_every_use_case_lists_the_seed_picks_in_order(loaded_catalog):
    # One load for all twenty use cases; the mismatch report names each use case that differs.
    mismatches = {}
    for slug, expected in EXPECTED.items():
        use_case = UseCase.objects.get(slug=slug)
        recommended = list(use_case.recommendations.filter(is_recommended=True).order_by("position"))
        listed = [rec.tool.slug for rec in recommended]
        if listed != expected:
            mismatches[slug] = listed
        assert all(rec.reason and rec.source.key.startswith("seed-") for rec in recommended), slug
        assert use_case.sources.exists(), slug

    assert mismatches == {}


def test_ollama_is_shown_as_listed_with_the_warning_and_never_recommended(loaded_catalog):
    listing = UseCaseRecommendation.objects.get(use_case__slug="private-on-device-ai", tool__slug="ollama")

    assert listing.is_recommended is False
    assert "not to use" in listing.reason
    assert not UseCaseRecommendation.objects.filter(tool__slug="ollama", is_recommended=True).exists()
    assert listing.tool.caveats.filter(key="engine-guide-says-do-not-use").exists()


def test_groups_cover_the_three_seed_lists(loaded_catalog):
    counts = {group: UseCase.objects.filter(group=group).count() for group, _ in UseCase.Group.choices}
    assert counts == {"where_it_fits": 4, "final_map": 7, "hardware_recipe": 9}


def test_loading_twice_changes_nothing(loaded_catalog):
    counts = load(fixtures_dir=FIXTURES)

    assert counts["created"] == counts["updated"] == 0
    assert counts["unchanged"] == UseCase.objects.count() + UseCaseRecommendation.objects.count()


def test_an_edited_reason_is_updated_in_place(loaded_catalog, tmp_path):
    fixture = yaml.safe_load((FIXTURES / "use_cases.yaml").read_text())
    fixture["use_cases"][0]["recommendations"][0]["reason"] = "A new reason."
    (tmp_path / "use_cases.yaml").write_text(yaml.safe_dump(fixture))
    before = UseCaseRecommendation.objects.count()

    counts = load(fixtures_dir=tmp_path)

    assert counts["updated"] == 1
    assert UseCaseRecommendation.objects.count() == before
    assert UseCaseRecommendation.objects.get(use_case__slug=fixture["use_cases"][0]["slug"], position=1).reason == (
        "A new reason."
    )


def write_fixture(tmp_path, recommendations) -> Path:
    (tmp_path / "use_cases.yaml").write_text(yaml.safe_dump({"use_cases": [{
        "slug": "demo", "group": "final_map", "title": "Demo", "question": "Which?",
        "recommendations": recommendations,
    }]}))
    return tmp_path


def test_a_tool_missing_from_the_catalog_is_skipped_and_counted(tmp_path):
    SourceFactory(key="seed-000-engine-guide")
    ToolFactory(slug="vllm")

    counts = load(fixtures_dir=write_fixture(tmp_path, [
        {"tool": "vllm", "reason": "Start here.", "source": "seed-000-engine-guide"},
        {"tool": "no-such-engine", "reason": "Invented.", "source": "seed-000-engine-guide"},
    ]))

    assert counts["skipped_missing_tool"] == 1
    assert list(UseCaseRecommendation.objects.values_list("tool__slug", flat=True)) == ["vllm"]


def test_an_unknown_source_names_the_row_and_field(tmp_path):
    ToolFactory(slug="vllm")

    with pytest.raises(FixtureError) as caught:
        load(fixtures_dir=write_fixture(tmp_path, [{"tool": "vllm", "reason": "x", "source": "nowhere"}]))

    assert caught.value.field == "source" and "recommendation 1" in caught.value.row


def test_an_invalid_group_names_the_field(tmp_path):
    (tmp_path / "use_cases.yaml").write_text(yaml.safe_dump({"use_cases": [
        {"slug": "demo", "group": "sideways", "title": "Demo", "question": "Which?"}]}))

    with pytest.raises(FixtureError) as caught:
        load(fixtures_dir=tmp_path)

    assert caught.value.field == "group"
