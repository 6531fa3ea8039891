"""Break-even arithmetic against hand-worked numbers (prices from seed 002)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.breakeven import (
    DAYS_PER_MONTH,
    HOURS_PER_MONTH,
    GpuPrice,
    TokenPrice,
    Workload,
    break_even_tokens_per_day,
    gpu_costs,
    provider_costs,
)
from scoring.errors import InputError

GROQ = TokenPrice("groq", "Groq", "gpt-oss-120b", 0.15, 0.60, "seed 002", "2026-10-19")
CEREBRAS = TokenPrice("cerebras", "Cerebras", "gpt-oss-120b", 0.35, 0.75, "seed 002", "2026-10-19")
TOGETHER_H100 = GpuPrice("together-ai", "Together AI", "GPU cluster H100", "On demand", 3.99, "seed 002", None)


def test_monthly_bill_by_hand():
    workload = Workload(input_tokens_per_day=100_000_000, output_tokens_per_day=20_000_000)

    costs = provider_costs(workload, [CEREBRAS, GROQ])

    # Groq: 100M x $0.15 + 20M x $0.60 = $15 + $12 = $27/day; x 730/24 days.
    assert [cost.price.tool for cost in costs] == ["groq", "cerebras"]
    assert costs[0].usd_per_day == pytest.approx(27.0)
    assert costs[0].monthly_usd == pytest.approx(27.0 * 730 / 24)
    assert costs[1].usd_per_day == pytest.approx(35.0 + 15.0)


def test_gpu_bill_throughput_and_break_even_by_hand():
    workload = Workload(input_tokens_per_day=100_000_000, output_tokens_per_day=20_000_000, utilisation=0.5)
    providers = provider_costs(workload, [GROQ])

    (gpu,) = gpu_costs(workload, [TOGETHER_H100], gpu_count=2, providers=providers)

    assert gpu.monthly_usd == pytest.approx(3.99 * HOURS_PER_MONTH * 2)  # $5,825.40
    # 20M output tokens in 12 busy hours = 463 tokens/s, split over two GPUs.
    assert gpu.output_tps_per_gpu == pytest.approx(20_000_000 / 43_200 / 2)
    assert gpu.self_hosting_wins is False  # $821/month per token against $5,825 of GPUs
    assert gpu.break_even_scale == pytest.approx(gpu.monthly_usd / providers[0].monthly_usd)
    volume = break_even_tokens_per_day(gpu_monthly_usd=gpu.monthly_usd, workload=workload, price=GROQ)
    # $27 buys 120M tokens a day at this mix, so $5,825.40/month buys 120M x 5,825.40 / (27 x 30.42).
    assert volume == pytest.approx(120_000_000 * gpu.monthly_usd / (27 * DAYS_PER_MONTH))


@settings(max_examples=100, deadline=None)
@given(daily_in=st.integers(1, 10**11), daily_out=st.integers(1, 10**11), hourly=st.floats(0.5, 50))
def test_at_the_break_even_volume_both_bills_are_equal(daily_in, daily_out, hourly):
    workload = Workload(input_tokens_per_day=daily_in, output_tokens_per_day=daily_out)
    gpu_monthly = hourly * HOURS_PER_MONTH
    volume = break_even_tokens_per_day(gpu_monthly_usd=gpu_monthly, workload=workload, price=GROQ)
    scale = volume / (daily_in + daily_out)

    at_volume = Workload(input_tokens_per_day=round(daily_in * scale), output_tokens_per_day=round(daily_out * scale))
    assert provider_costs(at_volume, [GROQ])[0].monthly_usd == pytest.approx(gpu_monthly, rel=1e-3, abs=0.01)


@pytest.mark.parametrize(("values", "field"), [
    ({"input_tokens_per_day": -1, "output_tokens_per_day": 5}, "input_tokens_per_day"),
    ({"input_tokens_per_day": 0, "output_tokens_per_day": 0}, "output_tokens_per_day"),
    ({"input_tokens_per_day": 5, "output_tokens_per_day": 5, "utilisation": 0}, "utilisation"),
    ({"input_tokens_per_day": 5, "output_tokens_per_day": 5, "utilisation": 1.5}, "utilisation"),
])
def test_invalid_workloads_name_the_field(values, field):
    with pytest.raises(InputError) as caught:
        Workload(**values)
    assert field in caught.value.errors
