"""Money as every page and every recommendation writes it; plain Python, so pages and scoring share one rule."""
from __future__ import annotations

from decimal import Decimal

_MIN_DECIMALS = 2
_MAX_DECIMALS = 4


def format_usd(amount: Decimal | float | int | str, *, symbol: bool = True) -> str:
    """US dollars with cents, keeping up to four decimals a source states: $0.15, $0.075, $1,000.00."""
    value = Decimal(str(amount))
    decimals = max(_MIN_DECIMALS, min(_MAX_DECIMALS, -value.normalize().as_tuple().exponent))
    return f"{'$' if symbol else ''}{value:,.{decimals}f}"
