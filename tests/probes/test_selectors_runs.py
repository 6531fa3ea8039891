"""The reads of probe targets and runs: one contract each, shared by the API, the CLI and the engine demo."""
import datetime as dt

import pytest

from catalog.models import Tool
from probes.models import ProbeRun, ProbeTarget
from probes.selectors.runs import probe_run_get, probe_run_list, probe_target_get, probe_target_list
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def targets():
    groq = factories.ToolFactory(slug="groq", name="Groq", kind=Tool.Kind.PROVIDER)
    vllm = factories.ToolFactory(slug="vllm", name="vLLM", kind=Tool.Kind.ENGINE)
    return {
        "b": factories.ProbeTargetFactory(slug="groq-b", name="B", tool=groq, enabled=True),
        "a": factories.ProbeTargetFactory(slug="groq-a", name="A", tool=groq, enabled=False),
        "c": factories.ProbeTargetFactory(slug="vllm-c", name="C", tool=vllm, enabled=True),
    }


def test_targets_are_listed_by_name_and_filtered_by_tool_and_enabled(targets):
    assert [t.slug for t in probe_target_list()] == ["groq-a", "groq-b", "vllm-c"]
    assert [t.slug for t in probe_target_list(filters={"tool": "groq"})] == ["groq-a", "groq-b"]
    assert [t.slug for t in probe_target_list(filters={"enabled": True})] == ["groq-b", "vllm-c"]
    assert [t.slug for t in probe_target_list(filters={"enabled": False, "tool": "groq"})] == ["groq-a"]
    assert [t.slug for t in probe_target_list(filters={"enabled": None, "tool": None})] == [
        "groq-a", "groq-b", "vllm-c"
    ]


def test_a_target_list_reads_the_tools_in_the_same_query(targets, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert [target.tool.slug for target in probe_target_list()] == ["groq", "groq", "vllm"]


def test_a_target_is_read_by_slug_with_its_tool(targets, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert probe_target_get(slug="vllm-c").tool.slug == "vllm"
    with pytest.raises(ProbeTarget.DoesNotExist):
        probe_target_get(slug="missing")


def test_runs_are_filtered_by_target_suite_status_and_queue_time(targets):
    base = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    speed = factories.ProbeRunFactory(target=targets["b"], suite=ProbeRun.Suite.SPEED)
    compat = factories.ProbeRunFactory(target=targets["b"], suite=ProbeRun.Suite.COMPAT, status="failed")
    other = factories.ProbeRunFactory(target=targets["c"], suite=ProbeRun.Suite.SPEED)
    for offset, run in enumerate((speed, compat, other)):
        ProbeRun.objects.filter(pk=run.pk).update(queued_at=base + dt.timedelta(hours=offset))

    def ids(**filters):
        return sorted(probe_run_list(filters=filters).values_list("pk", flat=True))

    assert ids() == sorted([speed.pk, compat.pk, other.pk])
    assert ids(target="groq-b") == sorted([speed.pk, compat.pk])
    assert ids(target="groq-b", suite="compat") == [compat.pk]
    assert ids(status="failed") == [compat.pk]
    assert ids(since=base + dt.timedelta(hours=1), until=base + dt.timedelta(hours=2)) == [compat.pk]


def test_a_run_is_read_with_its_measurements_in_order(targets, django_assert_num_queries):
    run = factories.ProbeRunFactory(target=targets["b"])
    for index in (2, 0, 1):
        factories.RequestMeasurementFactory(run=run, index=index)

    with django_assert_num_queries(3):
        fetched = probe_run_get(run_id=run.pk)
        assert [m.index for m in fetched.measurements.all()] == [0, 1, 2]
        assert list(fetched.compat_outcomes.all()) == []
    with pytest.raises(ProbeRun.DoesNotExist):
        probe_run_get(run_id=run.pk + 1000)
