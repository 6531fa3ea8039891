"""Target presets: documented endpoints, disabled by default, idempotent reloads that keep operator edits."""
from pathlib import Path

import pytest
import yaml

from catalog.models import Tool
from core.loading import FixtureError
from probes.loading import load
from probes.models import ProbeTarget
from tests.factories import ToolFactory

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TOOL_SLUGS = ("groq", "cerebras", "together-ai", "fireworks-ai", "vllm", "sglang", "llama-cpp", "tensorrt-llm",
              "mlx-lm", "hugging-face-tgi", "ollama")


@pytest.fixture
def catalog_tools():
    return {slug: ToolFactory(slug=slug, name=slug) for slug in TOOL_SLUGS}


def test_fixture_loads_every_preset_disabled(catalog_tools):
    counts = load(fixtures_dir=FIXTURES)
    assert counts == {"created": 11, "updated": 0, "unchanged": 0, "skipped": 0}
    assert not ProbeTarget.objects.filter(enabled=True).exists()
    hosted = {t.tool.slug: t for t in ProbeTarget.objects.filter(tool__slug__in=TOOL_SLUGS[:4])}
    assert (hosted["groq"].base_url, hosted["groq"].model_id) == (
        "https://api.groq.com/openai/v1", "openai/gpt-oss-120b")
    assert (hosted["cerebras"].base_url, hosted["cerebras"].model_id) == ("https://api.cerebras.ai/v1", "gpt-oss-120b")
    assert hosted["together-ai"].model_id == "openai/gpt-oss-120b"
    assert hosted["fireworks-ai"].base_url == "https://api.fireworks.ai/inference/v1"
    assert hosted["fireworks-ai"].model_id == "accounts/fireworks/models/gpt-oss-120b"
    assert {t.api_key_env for t in hosted.values()} == {
        "GROQ_API_KEY", "CEREBRAS_API_KEY", "TOGETHER_API_KEY", "FIREWORKS_API_KEY"}
    ports = {t.tool.slug: t.base_url for t in ProbeTarget.objects.exclude(tool__slug__in=TOOL_SLUGS[:4])}
    assert ports["vllm"].endswith(":8000/v1")
    assert ports["sglang"].endswith(":30000/v1")
    assert ports["llama-cpp"].endswith(":8080/v1")
    assert ports["ollama"].endswith(":11434/v1")


def test_reload_is_idempotent_and_keeps_operator_edits(catalog_tools):
    load(fixtures_dir=FIXTURES)
    target = ProbeTarget.objects.get(slug="groq-gpt-oss-120b")
    target.enabled = True
    target.base_url = "https://groq-proxy.internal.example/openai/v1"
    target.model_id = "openai/gpt-oss-120b-custom"
    target.api_key_env = "GROQ_TEAM_API_KEY"
    target.hardware = "LPU"
    target.save()

    assert load(fixtures_dir=FIXTURES) == {"created": 0, "updated": 0, "unchanged": 11, "skipped": 0}
    target.refresh_from_db()
    assert target.enabled is True
    assert target.base_url == "https://groq-proxy.internal.example/openai/v1"
    assert target.model_id == "openai/gpt-oss-120b-custom"
    assert target.api_key_env == "GROQ_TEAM_API_KEY"
    assert target.hardware == "LPU"
    assert ProbeTarget.objects.count() == 11


def test_fixture_owned_fields_are_refreshed(catalog_tools, tmp_path):
    load(fixtures_dir=FIXTURES)
    document = yaml.safe_load((FIXTURES / "probe_targets.yaml").read_text())
    document["targets"][0]["name"] = "Groq (renamed by the fixture)"
    document["targets"][0]["base_url"] = "https://elsewhere.example/v1"
    (tmp_path / "probe_targets.yaml").write_text(yaml.safe_dump(document))

    counts = load(fixtures_dir=tmp_path)
    assert counts["updated"] == 1
    target = ProbeTarget.objects.get(slug=document["targets"][0]["slug"])
    assert target.name == "Groq (renamed by the fixture)"
    assert target.base_url == "https://api.groq.com/openai/v1"  # operator-owned: kept


def test_a_target_whose_tool_is_missing_is_skipped(caplog):
    ToolFactory(slug="groq")
    counts = load(fixtures_dir=FIXTURES)
    assert counts["created"] == 1
    assert counts["skipped"] == 10
    assert "catalog has no tool" in caplog.text
    assert "ollama" in caplog.text


def test_alternative_tool_slugs_are_accepted():
    ToolFactory(slug="mlx")
    ToolFactory(slug="tgi")
    load(fixtures_dir=FIXTURES)
    assert set(ProbeTarget.objects.values_list("tool__slug", flat=True)) == {"mlx", "tgi"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("api_key_env", "sk-live-1234", "api_key_env"),
        ("base_url", "not a url", "base_url"),
        ("colour", "blue", "unknown fields ['colour']"),
    ],
)
def test_a_malformed_entry_names_the_field(tmp_path, field, value, message):
    ToolFactory(slug="groq")
    entry = {"slug": "bad", "name": "Bad", "tool": "groq", "base_url": "https://x.example/v1", "model_id": "m"}
    entry[field] = value
    (tmp_path / "probe_targets.yaml").write_text(yaml.safe_dump({"targets": [entry]}))
    with pytest.raises(FixtureError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load(fixtures_dir=tmp_path)
    assert not ProbeTarget.objects.filter(slug="bad").exists()


def test_no_fixture_file_loads_nothing(tmp_path):
    assert load(fixtures_dir=tmp_path)["created"] == 0
    assert Tool.objects.count() == 0


def test_a_malformed_target_fixture_is_a_command_error_naming_the_entry(tmp_path):
    import shutil

    from django.core.management import CommandError, call_command

    fixtures = tmp_path / "fixtures"
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures", fixtures)
    (fixtures / "probe_targets.yaml").write_text("targets:\n  - slug: broken\n")
    with pytest.raises(CommandError, match="broken"):
        call_command("load_catalog", fixtures_dir=fixtures)
