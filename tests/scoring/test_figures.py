"""One rule for the figure that speaks for a metric of a tool and model: the publishers' order."""
from __future__ import annotations

import datetime

from scoring.figures import PUBLISHER_PRECEDENCE, preferred_publisher, ranked_publishers


def test_listed_publishers_come_first_then_the_newest_then_by_name():
    newest = {"Vercel": "2026-12-02", "Bench B": "2026-11-01", "Bench A": "2026-11-01",
              PUBLISHER_PRECEDENCE[0]: "2026-01-01"}
    assert ranked_publishers(newest) == [PUBLISHER_PRECEDENCE[0], "Vercel", "Bench A", "Bench B"]


def test_a_second_hand_quote_is_another_publisher():
    quoting = f"Alatirok, quoting {PUBLISHER_PRECEDENCE[0]}"
    assert preferred_publisher({quoting: datetime.date(2026, 12, 5), PUBLISHER_PRECEDENCE[0]:
                                datetime.date(2026, 5, 1)}) == PUBLISHER_PRECEDENCE[0]
    assert preferred_publisher({quoting: datetime.date(2026, 12, 5)}) == quoting
    assert preferred_publisher({}) is None
