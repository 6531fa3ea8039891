"""Display words and formatting shared by the probe pages."""
from decimal import Decimal

import pytest

from probe_client import CHECKS
from probes import presenters
from scoring.vocabulary import COMPAT_CHECKS


@pytest.mark.parametrize(
    ("amount", "text"), [("0.1500", "0.15"), ("0.0750", "0.075"), ("2", "2.00"), ("10.5", "10.50"), ("0", "0.00")]
)
def test_prices_keep_the_precision_their_source_states(amount, text):
    assert presenters.usd_text(Decimal(amount)) == text


def test_every_client_check_is_described_for_readers_from_the_suites_registry():
    descriptions = presenters.compat_check_descriptions()

    assert [check.name for check in descriptions] == list(COMPAT_CHECKS)
    assert all(check.request and check.supported_when for check in descriptions)
    assert [(check.request, check.supported_when) for check in descriptions] == [
        (CHECKS[name].request, CHECKS[name].supported_when) for name in COMPAT_CHECKS
    ]


def test_a_check_the_suite_no_longer_runs_is_shown_without_a_description():
    assert presenters.compat_check_description("retired_check") == presenters.CheckDescription("retired_check", "", "")
