"""The methodology page: freshness of each figure, the beat schedule and the workloads it sends."""
import datetime as dt

import pytest
from celery.schedules import crontab

from probes.selectors import methodology
from tests import factories
from tests.probes.dashboard_data import OUTCOMES, make_compat, make_measured_target, make_tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("key_in_environment")]


def test_freshness_report_lists_each_figure_and_unmeasured_targets(now, django_assert_num_queries):
    tool = make_tool(slug="groq", name="Groq")
    target = make_measured_target(
        now=now, slug="g", name="G", tool=tool, ttft=1, speed=1, e2e=1, age=dt.timedelta(hours=25)
    )
    make_compat(target=target, check_name="seed", outcome=OUTCOMES.ACCEPTED, now=now - dt.timedelta(hours=3))
    factories.ProbeTargetFactory(slug="waiting", name="Waiting", tool=tool)

    with django_assert_num_queries(3):
        report = methodology.freshness_report(now=now)

    (row,) = report.speed
    assert (row.target.slug, row.workload, row.concurrency, row.stale) == ("g", "in-1k", 1, True)
    (compat,) = report.compat
    assert compat.age == dt.timedelta(hours=3) and not compat.stale
    assert [target.slug for target in report.unmeasured_targets] == ["waiting"]


def test_probe_schedule_is_read_from_the_beat_settings(settings):
    settings.PROBE_CRON_SCHEDULES = {"speed": "7 */3 * * *", "daily": "37 4 * * *"}
    settings.CELERY_BEAT_SCHEDULE = {
        "speed": {"task": "probes.tasks.speed", "schedule": crontab.from_string("7 */3 * * *")},
        "daily": {"task": "probes.tasks.daily", "schedule": crontab.from_string("37 4 * * *"), "kwargs": {"x": 1}},
        "weekly": {"task": "probes.tasks.weekly", "schedule": crontab(minute=0, hour=6, day_of_week=1)},
        "sweep": {"task": "probes.tasks.sweep", "schedule": 300.0},
        "elsewhere": {"task": "catalog.tasks.other", "schedule": 60.0},
    }

    entries = {entry.name: entry for entry in methodology.probe_schedule()}

    assert set(entries) == {"speed", "daily", "weekly", "sweep"}
    assert entries["speed"].schedule == "At 7 minutes past the hour, every 3 hours — cron “7 */3 * * *” (UTC)"
    assert entries["daily"].schedule == "At 04:37 — cron “37 4 * * *” (UTC)"
    assert entries["weekly"].schedule == "<crontab: 0 6 * * 1 (m/h/dM/MY/d)>"
    assert entries["daily"].arguments == "x=1"
    assert entries["sweep"].schedule == "Every 5 minutes"


def test_probe_workloads_come_from_settings(settings):
    settings.PROBE_SCHEDULED_WORKLOADS = ["in-100", "in-1k"]
    settings.PROBE_WORKLOAD_MAX_TOKENS = {"in-100": 300, "in-1k": 1000}
    settings.PROBE_MAX_OUTPUT_TOKENS = 0
    settings.PROBE_PARALLEL_WORKLOAD = "in-1k"
    settings.PROBE_PARALLEL_CONCURRENCY = 10

    plans = methodology.probe_workloads()

    assert [(plan.workload, plan.input_tokens, plan.max_output_tokens, plan.concurrencies) for plan in plans] == [
        ("in-100", 100, 300, (1,)),
        ("in-1k", 1000, 1000, (1, 10)),
    ]
    settings.PROBE_PARALLEL_WORKLOAD = "in-10k"
    settings.PROBE_MAX_OUTPUT_TOKENS = 64
    assert [(plan.workload, plan.max_output_tokens, plan.concurrencies) for plan in methodology.probe_workloads()] == [
        ("in-100", 64, (1,)),
        ("in-1k", 64, (1,)),
        ("in-10k", 64, (10,)),
    ]
