import datetime as dt

import pytest

from catalog.models import PriceItem, Tool
from probes.models import ProbeRun, ProbeTarget
from probes.selectors import dashboards
from scoring.vocabulary import COMPAT_CHECKS
from tests import factories
from tests.probes.dashboard_data import (
    OUTCOMES,
    TEST_KEY_ENV,
    make_compat,
    make_measured_target,
    make_price,
    make_tool,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("key_in_environment")]


def _row(dashboard, slug):
    return next(row for row in dashboard.rows if row.target.slug == slug)


def test_rows_carry_the_72h_medians_of_the_selected_workload(now):
    groq = make_tool(slug="groq", name="Groq")
    make_measured_target(now=now, slug="groq-oss", name="Groq gpt-oss", tool=groq, ttft=180, speed=450.5, e2e=900)
    make_measured_target(
        now=now, slug="groq-oss-10k", name="Groq 10k", tool=groq, ttft=800, speed=300, e2e=2000, workload="in-10k"
    )

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    assert board.selected.workload == "in-1k"
    assert [option.workload for option in board.options] == ["in-1k", "in-10k"]
    row = _row(board, "groq-oss")
    assert row.figure("ttft_ms") == 180
    assert row.figure("output_speed_tps") == 450.5
    assert [figures.metric.key for figures in row.figures] == ["ttft_ms", "ttfat_ms", "output_speed_tps", "e2e_ms"]
    assert row.success_percent == pytest.approx(97.5)
    assert row.configuration == ProbeTarget.READY
    assert _row(board, "groq-oss-10k").summary is None
    assert _row(board, "groq-oss-10k").measured_elsewhere is True
    assert _row(board, "groq-oss").measured_elsewhere is False
    assert board.stale_after_hours == 24


def test_requested_workload_and_concurrency_are_honoured(now):
    tool = make_tool(slug="cerebras", name="Cerebras")
    make_measured_target(now=now, slug="c1", name="C single", tool=tool, ttft=100, speed=1000, e2e=500)
    factories.MeasurementSummaryFactory(
        target=factories.ProbeTargetFactory(slug="c1"), workload="in-1k", concurrency=10, last_run_at=now
    )

    board = dashboards.dashboard_for(
        audience=dashboards.PROVIDERS, requested_workload="in-1k", requested_concurrency="10", now=now
    )

    assert (board.selected.workload, board.selected.concurrency) == ("in-1k", 10)
    assert board.notices == []
    assert _row(board, "c1").summary.concurrency == 10


@pytest.mark.parametrize(
    ("workload", "concurrency", "field"),
    [
        ("in-999k", None, "workload"),
        (None, "ten", "concurrency"),
        (None, "7", "concurrency"),
        (None, "²", "concurrency"),
        (None, "1" * 40, "concurrency"),
        ("<b>", "-1", "workload"),
    ],
)
def test_bad_query_values_fall_back_with_a_notice_naming_the_field(now, workload, concurrency, field):
    tool = make_tool(slug="together", name="Together AI")
    make_measured_target(now=now, slug="t1", name="Together", tool=tool, ttft=300, speed=120, e2e=4000)

    board = dashboards.dashboard_for(
        audience=dashboards.PROVIDERS, requested_workload=workload, requested_concurrency=concurrency, now=now
    )

    assert (board.selected.workload, board.selected.concurrency) == ("in-1k", 1)
    assert any(field in notice.lower() for notice in board.notices)


def test_stale_when_the_last_run_is_older_than_a_day(now):
    tool = make_tool(slug="fireworks", name="Fireworks AI")
    make_measured_target(now=now, slug="fresh", name="Fresh", tool=tool, ttft=1, speed=1, e2e=1)
    make_measured_target(
        now=now, slug="old", name="Old", tool=tool, ttft=1, speed=1, e2e=1, age=dt.timedelta(hours=30)
    )

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    assert _row(board, "fresh").stale is False
    assert _row(board, "old").stale is True
    assert _row(board, "old").age >= dt.timedelta(hours=30)


def test_enabled_target_without_its_key_variable_is_not_configured(now, monkeypatch):
    tool = make_tool(slug="groq", name="Groq")
    factories.ProbeTargetFactory(slug="no-key", name="No key", tool=tool, api_key_env="ATLAS_ABSENT_API_KEY")
    factories.ProbeTargetFactory(slug="with-key", name="With key", tool=tool, api_key_env=TEST_KEY_ENV)
    factories.ProbeTargetFactory(slug="template", name="Template", tool=tool, enabled=False)
    monkeypatch.delenv("ATLAS_ABSENT_API_KEY", raising=False)

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    assert [target.slug for target in board.not_configured_targets] == ["no-key"]
    assert _row(board, "no-key").configuration == ProbeTarget.NOT_CONFIGURED
    assert _row(board, "with-key").configuration == ProbeTarget.READY
    # A disabled template without figures is not a row, only a target to configure.
    assert "template" not in {row.target.slug for row in board.rows}
    assert [target.slug for target in board.targets if not target.enabled] == ["template"]
    assert board.selected is None and board.options == []


def test_disabled_target_with_past_figures_stays_visible_as_disabled(now):
    tool = make_tool(slug="groq", name="Groq")
    make_measured_target(now=now, slug="retired", name="Retired", tool=tool, ttft=1, speed=1, e2e=1, enabled=False)

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    assert _row(board, "retired").configuration == ProbeTarget.DISABLED


def test_price_matches_the_model_across_provider_prefixes_and_prefers_on_demand(now):
    fireworks = make_tool(slug="fireworks", name="Fireworks AI")
    make_price(tool=fireworks, item="gpt-oss-120b", input_usd="0.05", output_usd="0.20", tier=PriceItem.Tier.BATCH)
    make_price(tool=fireworks, item="gpt-oss-120b", input_usd="0.15", output_usd="0.60")
    make_price(tool=fireworks, item="gpt-oss-20b", input_usd="0.07", output_usd="0.30")
    make_measured_target(
        now=now, slug="fw", name="Fireworks", tool=fireworks, ttft=1, speed=1, e2e=1,
        model_id="accounts/fireworks/models/gpt-oss-120b",
    )
    other = make_tool(slug="other", name="Other")
    make_measured_target(now=now, slug="unpriced", name="Unpriced", tool=other, ttft=1, speed=1, e2e=1)

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    price = _row(board, "fw").price
    assert (price.input_usd, price.output_usd) == (price.item.input_usd_per_mtok, price.item.output_usd_per_mtok)
    assert str(price.input_usd) == "0.1500" and price.item.tier == PriceItem.Tier.ON_DEMAND
    assert float(price.blended_usd) == pytest.approx((3 * 0.15 + 0.60) / 4)
    assert _row(board, "unpriced").price is None


def test_engines_exclude_providers_and_group_rows_by_hardware(now):
    engine = make_tool(slug="llama-cpp", name="llama.cpp", kind=Tool.Kind.ENGINE)
    provider = make_tool(slug="groq", name="Groq")
    make_measured_target(now=now, slug="b", name="B", tool=engine, ttft=1, speed=1, e2e=1, hardware="RTX 4090")
    make_measured_target(now=now, slug="a", name="A", tool=engine, ttft=1, speed=1, e2e=1, hardware="Apple M3")
    make_measured_target(now=now, slug="c", name="C", tool=engine, ttft=1, speed=1, e2e=1, hardware="RTX 4090")
    make_measured_target(now=now, slug="p", name="P", tool=provider, ttft=1, speed=1, e2e=1)

    board = dashboards.dashboard_for(audience=dashboards.ENGINES, now=now)

    assert [row.target.slug for row in board.rows] == ["a", "b", "c"]
    assert all(row.price is None for row in board.rows)
    assert board.chart_data["points"][0]["hardware"] == "Apple M3"


def test_history_holds_the_last_seven_days_of_successful_speed_runs(now):
    tool = make_tool(slug="groq", name="Groq")
    target = make_measured_target(now=now, slug="g", name="G", tool=tool, ttft=100, speed=200, e2e=1, history_runs=2)
    old = factories.ProbeRunFactory(target=target, workload="in-1k", summary={"ttft_ms": {"p50": 1}})
    ProbeRun.objects.filter(pk=old.pk).update(queued_at=now - dt.timedelta(days=8))
    factories.ProbeRunFactory(
        target=target, workload="in-1k", status=ProbeRun.Status.FAILED, summary={"ttft_ms": {"p50": 2}}
    )
    factories.ProbeRunFactory(target=target, workload="in-10k", summary={"ttft_ms": {"p50": 3}})

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    (series,) = board.chart_data["history"]
    assert series["slug"] == "g"
    assert [point["ttft_ms"] for point in series["points"]] == [101, 100]
    assert [point["output_speed_tps"] for point in series["points"]] == [199, 200]
    assert series["points"][0]["t"] < series["points"][1]["t"]
    window = board.chart_data["history_window"]
    assert window == {"from": int((now - dt.timedelta(days=7)).timestamp() * 1000), "to": int(now.timestamp() * 1000)}
    assert all(window["from"] <= point["t"] <= window["to"] for point in series["points"])


def test_compat_matrix_follows_the_client_check_order_and_transposes(now):
    tool = make_tool(slug="groq", name="Groq")
    first = factories.ProbeTargetFactory(slug="first", name="First", tool=tool)
    second = factories.ProbeTargetFactory(slug="second", name="Second", tool=tool)
    checks = list(COMPAT_CHECKS)
    make_compat(target=first, check_name=checks[1], outcome=OUTCOMES.REJECTED, http_status=400, message="not allowed")
    make_compat(target=second, check_name=checks[0], outcome=OUTCOMES.SUPPORTED)

    matrix = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now).compat

    assert matrix.checks == checks
    assert [row.target.slug for row in matrix.rows] == ["first", "second"]
    line = {name: cells for name, _check, cells in matrix.lines}[checks[1]]
    assert [cell.outcome for cell in line] == ["rejected", ""]
    assert "HTTP 400" in line[0].hover_text and "not allowed" in line[0].hover_text
    assert line[1].label == "Not checked"


def test_a_check_the_suite_no_longer_runs_keeps_its_row_without_a_description(now):
    target = factories.ProbeTargetFactory(tool=make_tool(slug="groq", name="Groq"))
    make_compat(target=target, check_name="retired_check", outcome=OUTCOMES.SUPPORTED)

    lines = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now).compat.lines

    assert [(name, check) for name, check, _ in lines][-1] == ("retired_check", None)
    assert [check.name for _, check, _ in lines[:-1]] == list(COMPAT_CHECKS)


@pytest.mark.parametrize("count", [2, 20])
def test_dashboard_query_count_is_constant(now, django_assert_num_queries, count):
    tool = make_tool(slug="groq", name="Groq")
    engine = make_tool(slug="vllm", name="vLLM", kind=Tool.Kind.ENGINE)
    make_price(tool=tool, item="gpt-oss-120b", input_usd="0.15", output_usd="0.60")
    for index in range(count):
        for owner in (tool, engine):
            target = make_measured_target(
                now=now, slug=f"{owner.slug}-{index}", name=f"{owner.name} {index}", tool=owner,
                ttft=100 + index, speed=200, e2e=900,
            )
            make_compat(target=target, check_name="logprobs", outcome=OUTCOMES.IGNORED)

    with django_assert_num_queries(5):
        providers = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)
    with django_assert_num_queries(4):
        engines = dashboards.dashboard_for(audience=dashboards.ENGINES, now=now)
    assert len(providers.measured_rows) == len(engines.measured_rows) == count


def test_every_hosted_preset_finds_its_catalog_price(now):
    """The real fixtures: each provider's gpt-oss-120b target matches the price its catalog entry states."""
    from django.core.management import call_command

    call_command("load_catalog", verbosity=0)
    presets = list(ProbeTarget.objects.filter(tool__kind=Tool.Kind.PROVIDER))
    assert len(presets) >= 4
    for target in presets:
        factories.MeasurementSummaryFactory(target=target, workload="in-1k", last_run_at=now)

    board = dashboards.dashboard_for(audience=dashboards.PROVIDERS, now=now)

    for row in board.rows:
        assert row.price is not None, row.target.slug
        assert row.price.item.unit == PriceItem.Unit.PER_MTOK
        assert "120b" in row.price.item.item.lower()
        assert row.price.item.source_id is not None
