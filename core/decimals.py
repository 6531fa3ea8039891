"""Decimals as the API and the pages write them."""
from __future__ import annotations

from decimal import Decimal


def decimal_text(value: Decimal | None, *, quantum: Decimal | None = None) -> str | None:
    """A stored decimal as its source wrote it, exact and without trailing zeros (500.0000 -> '500', 1.5400 ->
    '1.54'), first rounded to ``quantum`` when one is given; None stays None. Text keeps money exact in JSON, as
    DRF does for decimals."""
    if value is None:
        return None
    return format((value.quantize(quantum) if quantum is not None else value).normalize(), "f")
