"""The measurements section of a tool page: every target of the tool, its figures and compat problems."""
import pytest

from catalog.models import Tool
from probes.selectors.tool_measurements import tool_measurements
from tests import factories
from tests.probes.dashboard_data import OUTCOMES, make_compat, make_measured_target, make_tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("key_in_environment")]


@pytest.mark.parametrize("extra_targets", [0, 12])
def test_tool_measurements_lists_each_target_with_figures_and_compat_problems(
    now, django_assert_num_queries, extra_targets
):
    tool = make_tool(slug="groq", name="Groq")
    target = make_measured_target(now=now, slug="g", name="G", tool=tool, ttft=150, speed=500, e2e=700)
    make_compat(target=target, check_name="logprobs", outcome=OUTCOMES.SUPPORTED)
    make_compat(target=target, check_name="n", outcome=OUTCOMES.REJECTED, http_status=400, message="n must be 1")
    factories.ProbeTargetFactory(slug="unused-template", tool=tool, enabled=False)
    for index in range(extra_targets):
        other = make_measured_target(now=now, slug=f"x{index}", name=f"X {index}", tool=tool, ttft=1, speed=1, e2e=1)
        make_compat(target=other, check_name="seed", outcome=OUTCOMES.ACCEPTED)

    with django_assert_num_queries(3):
        measured = tool_measurements(tool=tool, now=now)

    assert measured.has_data
    assert len(measured.targets) == 1 + extra_targets
    entry = next(entry for entry in measured.targets if entry.target.slug == "g")
    assert entry.workloads[0].figures[0].median_72h == 150
    assert entry.workloads[0].success_percent == pytest.approx(97.5)
    assert [(outcome, count) for outcome, _label, count in entry.compat_counts] == [("supported", 1), ("rejected", 1)]
    assert [status.check_name for status in entry.compat_problems] == ["n"]
    assert measured.dashboard_url_name == "probes:providers"


def test_tool_measurements_of_an_unmeasured_tool_is_empty(now):
    tool = make_tool(slug="sglang", name="SGLang", kind=Tool.Kind.ENGINE)
    measured = tool_measurements(tool=tool, now=now)
    assert not measured.has_data
    assert measured.dashboard_url_name == "probes:engines"
