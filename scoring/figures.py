"""Which figure speaks for a metric of one tool serving one model, on every page and in the API: the wizard's
reasons, the model pages (and the model tables of /providers/ and /engines/), the tool pages.

One rule, so that a provider's output speed for a model is one number wherever it is shown:
1. this site's own measurement (the 72-hour median), where there is one;
2. otherwise the figure of the most preferred publisher that reported it: the publishers of PUBLISHER_PRECEDENCE
   in that order, then any other by its newest observation, then by name;
3. never a tool's own headline figure (it is not a benchmark).

Where one publisher must speak for a whole ranking (the wizard ranks providers on figures of one publisher
only), it is the most preferred publisher among those with figures, by the same order.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import date

# Artificial Analysis measures every provider with one method, eight times a day, and publishes the 72-hour
# median, the convention this site's probes follow
# (https://artificialanalysis.ai/methodology/performance-benchmarking): its figures are like for like across
# providers. A figure quoting it second-hand ("X, quoting Artificial Analysis") is another publisher, ranked by
# its own date.
PUBLISHER_PRECEDENCE: tuple[str, ...] = ("Artificial Analysis",)


def ranked_publishers(newest: Mapping[str, date | str]) -> list[str]:
    """The publishers of `newest` ({publisher: its newest observation, a date or an ISO date}), most preferred
    first."""
    by_name = sorted(newest)
    by_date = sorted(by_name, key=lambda publisher: str(newest[publisher]), reverse=True)
    return sorted(by_date, key=lambda publisher: (PUBLISHER_PRECEDENCE.index(publisher)
                                                  if publisher in PUBLISHER_PRECEDENCE else len(PUBLISHER_PRECEDENCE)))


def preferred_publisher(newest: Mapping[str, date | str]) -> str | None:
    """The most preferred publisher of `newest` (see ranked_publishers), None when there is none."""
    ranked = ranked_publishers(newest)
    return ranked[0] if ranked else None
