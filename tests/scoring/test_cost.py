"""Cost per million tokens at a latency target, by hand and by property. The worked figures are those of the
GPUStack gpt-oss-120b on one H100 page (fixtures/published_benchmarks.yaml)."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.cost import (
    NO_POINT_MEETS,
    CostSeries,
    HostedSpeed,
    MeasuredPoint,
    Slo,
    cheapest_answer,
    hosted_cost,
    interpolated_cost,
    series_costs,
    usd_per_million_tokens,
)
from scoring.errors import InputError

# vLLM v0.10.2 at 4 concurrent: 453.04 output tok/s, 932.29 total, TTFT p50 47.49 ms, TPOT p50 8.24 ms.
C4 = MeasuredPoint("4 concurrent", 4, 453.04, 47.49, 1000 / 8.24, (932.29 - 453.04) / 453.04)
# The same engine, 1,000 prompts at once: 2,901.05 output tok/s, 6,095.37 total, TTFT p50 25,973.43 ms.
BURST = MeasuredPoint("1,000 prompts at once", 1000, 2901.05, 25973.43, 1000 / 47.57, (6095.37 - 2901.05) / 2901.05)


def _series(*points: MeasuredPoint, key: str = "vllm", mode: str = "concurrency", workload: str = "sharegpt"):
    return CostSeries(key=key, mode=mode, workload=workload, points=points)


def test_worked_example_by_hand():
    answer = cheapest_answer([_series(C4)], gpu_hour_usd=2.50, gpu_count=1, slo=Slo(max_ttft_ms=1000))

    # $2.50 / (453.04 tok/s x 3,600 s) x 1e6 = $1.5329 per million output tokens.
    assert answer.cheapest.usd_per_million_output_tokens == pytest.approx(1.5329, abs=1e-4)
    # Per million total tokens: the same bill over 932.29 tok/s of input and output.
    assert answer.cheapest.usd_per_million_total_tokens == pytest.approx(2.5 / (932.29 * 3600) * 1e6, rel=1e-3)
    assert answer.cheapest.meets_slo is True and answer.verdict == ""

    burst = cheapest_answer([_series(BURST, mode="burst")], gpu_hour_usd=2.50, gpu_count=1, slo=Slo())
    assert burst.cheapest.usd_per_million_output_tokens == pytest.approx(0.2394, abs=1e-4)
    assert burst.cheapest.point.ttft_p50_ms == pytest.approx(25973.43)


def test_a_target_nothing_meets_gets_no_figure():
    answer = cheapest_answer([_series(BURST, mode="burst")], gpu_hour_usd=2.5, gpu_count=1, slo=Slo(max_ttft_ms=1000))

    assert answer.cheapest is None and answer.verdict == NO_POINT_MEETS == "no measured point meets it"
    assert answer.costs[0].meets_slo is False and answer.estimates == ()


def test_modes_and_workloads_are_never_costed_together():
    with pytest.raises(ValueError, match="never costed together"):
        cheapest_answer([_series(C4), _series(BURST, mode="burst")], gpu_hour_usd=2.5, gpu_count=1, slo=Slo())
    with pytest.raises(ValueError, match="never costed together"):
        cheapest_answer([_series(C4), _series(C4, workload="random")], gpu_hour_usd=2.5, gpu_count=1, slo=Slo())


def test_an_unknown_figure_never_meets_a_target():
    unknown = MeasuredPoint("8 concurrent", 8, 900.0, None, None)
    answer = cheapest_answer([_series(unknown)], gpu_hour_usd=2.5, gpu_count=1, slo=Slo(max_ttft_ms=1000))

    assert answer.costs[0].meets_slo is None and answer.cheapest is None
    assert answer.costs[0].usd_per_million_total_tokens is None


def test_gpu_count_multiplies_the_bill_and_the_throughput():
    # Two GPUs at 453 tok/s each: twice the bill over twice the tokens.
    one = series_costs(_series(C4), gpu_hour_usd=2.5, gpu_count=1, slo=Slo())[0]
    two = series_costs(_series(C4), gpu_hour_usd=2.5, gpu_count=2, slo=Slo())[0]
    assert two.usd_per_million_output_tokens == pytest.approx(one.usd_per_million_output_tokens)


@pytest.mark.parametrize("field, kwargs", [
    ("gpu_hour_usd", {"gpu_hour_usd": 0, "gpu_count": 1}),
    ("gpu_hour_usd", {"gpu_hour_usd": float("nan"), "gpu_count": 1}),
    ("gpu_count", {"gpu_hour_usd": 2.5, "gpu_count": 0}),
])
def test_prices_must_be_positive(field, kwargs):
    with pytest.raises(InputError) as raised:
        series_costs(_series(C4), slo=Slo(), **kwargs)
    assert field in raised.value.errors


@pytest.mark.parametrize("name", ["max_ttft_ms", "min_tokens_per_user"])
@pytest.mark.parametrize("value", [0, -1, float("inf")])
def test_targets_must_be_positive(name, value):
    with pytest.raises(InputError) as raised:
        Slo(**{name: value})
    assert list(raised.value.errors) == [name]


def test_interpolation_names_both_points_and_stays_between_them():
    low = MeasuredPoint("8 concurrent", 8, 800.0, 200.0, 80.0, 1.0)
    high = MeasuredPoint("16 concurrent", 16, 1200.0, 1800.0, 50.0, 1.0)
    estimate = interpolated_cost(_series(low, high), gpu_hour_usd=2.5, gpu_count=1, slo=Slo(max_ttft_ms=1000))

    # TTFT 1,000 ms is halfway from 200 to 1,800: throughput halfway from 800 to 1,200.
    assert estimate.interpolated and estimate.between == ("8 concurrent", "16 concurrent")
    assert estimate.point.output_tps_per_gpu == pytest.approx(1000.0)
    assert estimate.usd_per_million_output_tokens == pytest.approx(usd_per_million_tokens(
        gpu_hour_usd=2.5, gpu_count=1, tokens_per_second=1000.0))
    # The answer is still the measured point; the estimate is beside it, marked.
    answer = cheapest_answer([_series(low, high)], gpu_hour_usd=2.5, gpu_count=1, slo=Slo(max_ttft_ms=1000))
    assert answer.cheapest.point is low and answer.estimates == (estimate,)


def test_nothing_is_estimated_beyond_the_last_point():
    # Every measured point meets the target: the curve might go further, but nothing is read past its end.
    points = (MeasuredPoint("1", 1, 100.0, 50.0, 90.0), MeasuredPoint("2", 2, 180.0, 80.0, 85.0))
    assert interpolated_cost(_series(*points), gpu_hour_usd=2.5, gpu_count=1, slo=Slo(max_ttft_ms=1000)) is None
    # No target set: nothing to interpolate towards.
    assert interpolated_cost(_series(*points), gpu_hour_usd=2.5, gpu_count=1, slo=Slo()) is None


def test_hosted_price_at_the_workload_mix():
    speed = HostedSpeed("Artificial Analysis", "https://example.org", "2026-12-01", 525.0, None, "time to first token")
    # $0.60 per million output + $0.15 per million input x 1.0579 input tokens per output token.
    cost = hosted_cost(provider="Fireworks AI", input_usd_per_mtok=0.15, output_usd_per_mtok=0.60,
                       input_per_output=C4.input_per_output, speed=speed, slo=Slo(max_ttft_ms=1000))
    assert cost.usd_per_million_output_tokens == pytest.approx(0.60 + 0.15 * 22946 / 21691, abs=2e-3)
    # The latency is not reported: unknown, never guessed.
    assert cost.meets_slo is None
    fast = hosted_cost(provider="Fireworks AI", input_usd_per_mtok=0.15, output_usd_per_mtok=0.60,
                       input_per_output=1.0, speed=speed, slo=Slo(min_tokens_per_user=100))
    assert fast.meets_slo is True


points = st.builds(
    MeasuredPoint,
    load=st.just("load"), level=st.floats(1, 1000),
    output_tps_per_gpu=st.floats(1, 50_000), ttft_p50_ms=st.floats(1, 100_000),
    tokens_per_user=st.floats(0.5, 1000), input_per_output=st.floats(0, 50),
)


@settings(max_examples=200, deadline=None)
@given(point=points, price=st.floats(0.01, 100), count=st.integers(1, 64))
def test_cost_formula(point, price, count):
    cost = series_costs(_series(point), gpu_hour_usd=price, gpu_count=count, slo=Slo())[0]
    output = point.output_tps_per_gpu * count
    assert cost.usd_per_million_output_tokens == pytest.approx(price * count / (output * 3600) * 1e6)
    # Counting the input too can only lower the price per token.
    assert cost.usd_per_million_total_tokens <= cost.usd_per_million_output_tokens * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(series=st.lists(points, min_size=1, max_size=8), price=st.floats(0.01, 100),
       ttft=st.floats(1, 100_000) | st.none(), per_user=st.floats(0.5, 1000) | st.none())
def test_the_answer_is_the_cheapest_point_that_meets_the_target(series, price, ttft, per_user):
    slo = Slo(max_ttft_ms=ttft, min_tokens_per_user=per_user)
    answer = cheapest_answer([_series(*series)], gpu_hour_usd=price, gpu_count=1, slo=slo)
    meeting = [cost for cost in answer.costs if cost.meets_slo]
    if not meeting:
        assert answer.cheapest is None and answer.verdict == NO_POINT_MEETS
        return
    assert answer.cheapest.meets_slo is True and not answer.cheapest.interpolated
    assert all(answer.cheapest.usd_per_million_output_tokens <= cost.usd_per_million_output_tokens
               for cost in meeting)


@settings(max_examples=200, deadline=None)
@given(series=st.lists(points, min_size=2, max_size=8), price=st.floats(0.01, 100), ttft=st.floats(1, 100_000))
def test_an_estimate_lies_between_its_two_measured_points(series, price, ttft):
    named = [replace(point, load=f"point {index}") for index, point in enumerate(series)]
    estimate = interpolated_cost(_series(*named), gpu_hour_usd=price, gpu_count=1, slo=Slo(max_ttft_ms=ttft))
    if estimate is None:
        return
    by_load = {point.load: point for point in named}
    low, high = by_load[estimate.between[0]], by_load[estimate.between[1]]
    assert estimate.interpolated and estimate.meets_slo is True
    assert low.ttft_p50_ms <= ttft < high.ttft_p50_ms
    assert low.output_tps_per_gpu <= estimate.point.output_tps_per_gpu <= high.output_tps_per_gpu
    assert low.level <= estimate.point.level <= high.level
