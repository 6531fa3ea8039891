"""The reported-figures selector that scoring reads: plain data, constant queries."""
import datetime

import pytest
from django.db import models

from catalog.selectors import reported_figures_for_scoring
from tests.factories import HardwareSpecFactory, ReportedFigureFactory, ToolFactory

pytestmark = pytest.mark.django_db


def test_figures_come_back_as_plain_values_newest_first_per_tool_and_metric():
    tool = ToolFactory(slug="fast-provider")
    ReportedFigureFactory(tool=tool, value=400, observed_on=datetime.date(2026, 5, 1))
    ReportedFigureFactory(tool=tool, value=450, observed_on=datetime.date(2026, 11, 1), is_approximate=True)
    engine = ToolFactory(slug="some-engine", kind="engine")
    ReportedFigureFactory(
        tool=engine, model=None, hardware=HardwareSpecFactory(slug="some-gpu"), device_count=2,
        metric="throughput", concurrency=8, value=64,
    )

    rows = reported_figures_for_scoring()

    assert [(row["tool"], row["value"]) for row in rows] == [("fast-provider", 450.0), ("fast-provider", 400.0),
                                                           ("some-engine", 64.0)]
    engine_row = rows[2]
    assert engine_row["model"] is None
    assert (engine_row["hardware"], engine_row["device_count"], engine_row["concurrency"]) == ("some-gpu", 2, 8)
    assert engine_row["unit"] == "tok/s"
    assert rows[0]["is_approximate"] is True
    for row in rows:
        assert not any(isinstance(value, models.Model) for value in row.values())
        assert row["url"].startswith("https://") and row["publisher"]


def test_query_count_does_not_grow_with_the_figures(django_assert_num_queries):
    ReportedFigureFactory.create_batch(2)
    with django_assert_num_queries(1):
        reported_figures_for_scoring()
    ReportedFigureFactory.create_batch(20)
    with django_assert_num_queries(1):
        reported_figures_for_scoring()
