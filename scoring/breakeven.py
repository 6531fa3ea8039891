"""Paying per token against renting dedicated GPUs by the hour, for one steady daily workload.

Assumptions, stated on the page as well: a month is 730 hours (8,760 / 12); per-token bills scale
linearly with volume (no batch or cached-input discounts); dedicated GPUs are billed for every hour
whether busy or not; the GPUs must carry the day's tokens within the busy share of the day given by
the utilisation. Whether a given GPU count can actually sustain that throughput for the model is a
question for measurement (and the fit calculator), not for this arithmetic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scoring.errors import InputError

HOURS_PER_MONTH = 730
DAYS_PER_MONTH = HOURS_PER_MONTH / 24
SECONDS_PER_DAY = 86_400
MAX_TOKENS_PER_DAY = 10**13


# The name recommend/ imports the error by.


@dataclass(frozen=True)
class Workload:
    input_tokens_per_day: int
    output_tokens_per_day: int
    utilisation: float = 0.5

    def __post_init__(self) -> None:
        errors: dict[str, str] = {}
        for name in ("input_tokens_per_day", "output_tokens_per_day"):
            value = getattr(self, name)
            if not 0 <= value <= MAX_TOKENS_PER_DAY:
                errors[name] = f"Must be between 0 and {MAX_TOKENS_PER_DAY:,}."
        if self.input_tokens_per_day + self.output_tokens_per_day <= 0 and not errors:
            errors["output_tokens_per_day"] = "State some tokens per day, input or output."
        if not (0 < self.utilisation <= 1) or not math.isfinite(self.utilisation):
            errors["utilisation"] = "Must be above 0 and at most 1."
        if errors:
            raise InputError(errors)

    @property
    def busy_seconds_per_day(self) -> float:
        return SECONDS_PER_DAY * self.utilisation

    @property
    def required_output_tps(self) -> float:
        return self.output_tokens_per_day / self.busy_seconds_per_day

    @property
    def required_input_tps(self) -> float:
        return self.input_tokens_per_day / self.busy_seconds_per_day


@dataclass(frozen=True)
class TokenPrice:
    tool: str
    tool_name: str
    item: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    source: str
    verified_on: str | None
    # The catalog model the price is for (its slug and name), however the price list spells the item.
    model: str = ""
    model_name: str = ""


@dataclass(frozen=True)
class GpuPrice:
    tool: str
    tool_name: str
    item: str
    tier: str
    usd_per_hour: float
    source: str
    verified_on: str | None
    # The visitor's own hourly price, compared beside the catalog's offers and labelled as theirs.
    user_supplied: bool = False


def own_gpu_price(usd_per_hour: float) -> GpuPrice:
    return GpuPrice(tool="", tool_name="Your GPU", item="your own price", tier="Your figure",
                    usd_per_hour=usd_per_hour, source="Your figure", verified_on=None, user_supplied=True)


@dataclass(frozen=True)
class ProviderCost:
    price: TokenPrice
    monthly_usd: float
    usd_per_day: float


@dataclass(frozen=True)
class GpuCost:
    price: GpuPrice
    gpus: int
    monthly_usd: float
    output_tps_per_gpu: float
    input_tps_per_gpu: float
    break_even_scale: float | None
    cheapest_provider_monthly_usd: float | None

    @property
    def self_hosting_wins(self) -> bool | None:
        if self.cheapest_provider_monthly_usd is None:
            return None
        return self.monthly_usd < self.cheapest_provider_monthly_usd


def daily_token_cost(workload: Workload, price: TokenPrice) -> float:
    return (
        workload.input_tokens_per_day * price.input_usd_per_mtok
        + workload.output_tokens_per_day * price.output_usd_per_mtok
    ) / 1e6


def provider_costs(workload: Workload, prices: list[TokenPrice]) -> list[ProviderCost]:
    costs = []
    for price in prices:
        per_day = daily_token_cost(workload, price)
        costs.append(ProviderCost(price=price, monthly_usd=per_day * DAYS_PER_MONTH, usd_per_day=per_day))
    return sorted(costs, key=lambda cost: (cost.monthly_usd, cost.price.tool))


def gpu_costs(workload: Workload, gpus: list[GpuPrice], *, gpu_count: int,
              providers: list[ProviderCost]) -> list[GpuCost]:
    if gpu_count < 1:
        raise InputError({"gpu_count": "Must be at least 1."})
    cheapest = providers[0] if providers else None
    results = []
    for gpu in gpus:
        monthly = gpu.usd_per_hour * HOURS_PER_MONTH * gpu_count
        scale = None
        if cheapest and cheapest.monthly_usd > 0:
            # The workload multiple (same input:output mix) at which per-token spend equals the GPU bill.
            scale = monthly / cheapest.monthly_usd
        results.append(GpuCost(
            price=gpu, gpus=gpu_count, monthly_usd=monthly,
            output_tps_per_gpu=workload.required_output_tps / gpu_count,
            input_tps_per_gpu=workload.required_input_tps / gpu_count,
            break_even_scale=scale,
            cheapest_provider_monthly_usd=cheapest.monthly_usd if cheapest else None,
        ))
    return sorted(results, key=lambda cost: (cost.monthly_usd, cost.price.tool, cost.price.item))


def break_even_tokens_per_day(*, gpu_monthly_usd: float, workload: Workload, price: TokenPrice) -> float | None:
    """Total daily tokens (at the workload's input:output mix) where the per-token bill reaches the GPU bill."""
    total = workload.input_tokens_per_day + workload.output_tokens_per_day
    per_day = daily_token_cost(workload, price)
    if per_day <= 0:
        return None
    usd_per_token = per_day / total
    return gpu_monthly_usd / DAYS_PER_MONTH / usd_per_token
