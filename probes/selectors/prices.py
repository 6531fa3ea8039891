"""Which catalog price belongs to a probe target, and the blended price the provider pages show."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from catalog.models import PriceItem
from probes.models import ProbeTarget
from scoring.money import format_usd
from scoring.vocabulary import blended_price, model_slug


@dataclass(frozen=True)
class PriceQuote:
    item: PriceItem

    @property
    def input_usd(self) -> Decimal:
        return self.item.input_usd_per_mtok

    @property
    def output_usd(self) -> Decimal:
        return self.item.output_usd_per_mtok

    @property
    def blended_usd(self) -> Decimal:
        return blended_price(self.input_usd, self.output_usd)

    @property
    def input_text(self) -> str:
        return format_usd(self.input_usd, symbol=False)

    @property
    def output_text(self) -> str:
        return format_usd(self.output_usd, symbol=False)


def match_price(target: ProbeTarget, prices: Iterable[PriceItem]) -> PriceQuote | None:
    """The catalog's per-1M-token price of the target's model at the target's tool, on-demand tier first.

    Model ids carry provider prefixes ('accounts/fireworks/models/gpt-oss-120b', 'openai/gpt-oss-120b') that price
    lists do not, so both sides are compared by their last path segment with punctuation removed.
    """
    wanted = model_slug(target.model_id)
    if not wanted:
        return None
    candidates = [
        price
        for price in prices
        if price.tool_id == target.tool_id
        and price.input_usd_per_mtok is not None
        and price.output_usd_per_mtok is not None
    ]
    # Only the same model: a near name ("llama-3-70b" inside "llama-3-70b-versatile") may be priced differently.
    exact = [price for price in candidates if model_slug(price.item) == wanted]
    if not exact:
        return None
    exact.sort(key=lambda price: (price.tier != PriceItem.Tier.ON_DEMAND, price.position, price.pk))
    return PriceQuote(exact[0])
