"""Money as every page writes it."""
from decimal import Decimal

import pytest

from scoring.money import format_usd


@pytest.mark.parametrize(
    ("amount", "text"),
    [("0.15", "$0.15"), ("0.6000", "$0.60"), ("0.075", "$0.075"), ("15", "$15.00"), ("1000", "$1,000.00"),
     ("0.0400", "$0.04")],
)
def test_format_usd_keeps_the_precision_its_source_states(amount, text):
    assert format_usd(Decimal(amount)) == text


@pytest.mark.parametrize(
    ("amount", "text"), [("0.1500", "0.15"), ("0.0750", "0.075"), ("2", "2.00"), ("10.5", "10.50"), ("0", "0.00")]
)
def test_format_usd_without_the_symbol_for_cells_that_print_it_apart(amount, text):
    assert format_usd(Decimal(amount), symbol=False) == text


def test_format_usd_of_the_floats_scoring_carries_keeps_cents_and_sub_cent_digits():
    assert [format_usd(0.6), format_usd(0.15), format_usd(0.075), format_usd(15.0), format_usd(0.0001)] == [
        "$0.60", "$0.15", "$0.075", "$15.00", "$0.0001",
    ]
