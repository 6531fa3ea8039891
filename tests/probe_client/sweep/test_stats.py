"""Level figures, goodput, knee, cost and the linear fit, on hand-made samples with known answers."""

import pytest

from probe_client.sweep import SLO, Sample, cost_per_million, find_knee, linear_fit, summarise_level
from probe_client.stream_analysis import TokenEvent, merged_reads
from probe_client.sweep.stats import level_duration_s


def sample(index, *, ttft, tpot, tokens=11, ok=True, gaps=(), chunks=()):
    return Sample(
        index=index, ok=ok, input_tokens=100, output_tokens=tokens, ttft_ms=ttft, tpot_ms=tpot,
        e2e_ms=ttft + tpot * (tokens - 1), gaps_ms=list(gaps), tokens_per_chunk=list(chunks),
        output_tokens_source="usage", error_class="" if ok else "http_5xx",
    )


def test_level_figures_goodput_and_cost():
    samples = [
        sample(0, ttft=100, tpot=10, gaps=[10, 20], chunks=[1, 1, 2]),
        sample(1, ttft=300, tpot=10),  # misses the TTFT objective
        sample(2, ttft=100, tpot=40),  # misses the TPOT objective
        sample(3, ttft=100, tpot=10),
        Sample(index=4, ok=False, error_class="http_5xx"),
    ]
    level = summarise_level(
        mode="concurrency", level=4, samples=samples, duration_s=2.0, slo=SLO(ttft_ms=200, tpot_ms=30),
        hourly_price_usd=3.6,
    )
    assert level.requests == 5 and level.ok == 4
    assert level.errors == {"http_5xx": 1}
    assert level.output_tps == pytest.approx(44 / 2.0)
    assert level.total_tps == pytest.approx((44 + 400) / 2.0)
    assert level.request_rate == pytest.approx(2.0)
    assert level.goodput_rps == pytest.approx(1.0)  # two of five met both objectives
    assert level.slo_attainment == pytest.approx(0.4)
    assert level.meets_slo is False
    assert level.ttft_ms["p50"] == pytest.approx(100)
    assert level.itl_ms["p50"] == pytest.approx(15)
    assert level.itl_ms["per_token_p50"] == pytest.approx(10)  # 10/1 and 20/2
    # $3.60 an hour is $0.001 a second; 22 tokens a second → $0.001/22 per token.
    assert level.cost_per_1m_output_usd == pytest.approx(0.001 / 22 * 1e6)
    assert level.to_dict()["goodput_rps"] == level.goodput_rps
    assert "samples" not in level.to_dict() and len(level.to_dict(with_samples=True)["samples"]) == 5


def test_a_single_token_answer_meets_the_tpot_objective():
    one_token = Sample(index=0, ok=True, ttft_ms=50, tpot_ms=None, output_tokens=1)
    assert SLO(ttft_ms=100, tpot_ms=1).met_by(one_token)


def test_knee_is_the_first_level_missing_the_slo_after_one_meeting_it():
    rows = [{"level": c, "meets_slo": c <= 8} for c in (16, 1, 2, 4, 8, 32)]
    knee = find_knee(rows)
    assert (knee.level, knee.best) == (16, 8)
    assert find_knee([{"level": 1, "meets_slo": True}]).level is None
    assert find_knee([{"level": 1, "meets_slo": False}]).best is None
    assert find_knee([{"level": 1, "meets_slo": None}]).reason == "no SLO was set"


def test_cost_needs_a_price_and_a_rate():
    assert cost_per_million(None, 100) is None
    assert cost_per_million(2.0, None) is None
    assert cost_per_million(7.2, 1000) == pytest.approx(2.0)


def test_linear_fit_recovers_a_known_line():
    fit = linear_fit([(x, 12 + 0.05 * x) for x in (128, 512, 1024, 2048)])
    assert fit.slope == pytest.approx(0.05) and fit.intercept == pytest.approx(12)
    assert fit.r_squared == pytest.approx(1.0)
    assert linear_fit([(5, 1), (5, 2)]) is None


@pytest.mark.parametrize(
    ("data", "field"),
    [({"ttft_ms": 0, "tpot_ms": 5}, "slo.ttft_ms"), ({"ttft_ms": 5}, "slo.tpot_ms"),
     ({"ttft_ms": 5, "tpot_ms": 5, "attainment": 2}, "slo.attainment"), ({"ttft_ms": 5, "tpot_ms": 5, "p": 1}, "slo.p")],
)
def test_bad_slos_name_the_field(data, field):
    with pytest.raises(ValueError) as error:
        SLO.from_dict(data)
    assert str(error.value).startswith(field + ":")


def test_level_duration_runs_from_the_first_write_to_the_last_token():
    samples = [
        Sample(index=0, ok=True, sent_ns=1_000_000_000, last_token_ns=1_400_000_000),
        Sample(index=1, ok=True, sent_ns=1_100_000_000, last_token_ns=2_250_000_000),
        # A failed request still opened the level when it was written first; it received no token.
        Sample(index=2, ok=False, sent_ns=900_000_000, error_class="http_5xx"),
    ]
    assert level_duration_s(samples) == pytest.approx(1.35)
    assert level_duration_s([Sample(index=0, ok=False, sent_ns=5, error_class="http_5xx")]) is None


def test_merged_reads_flag_the_earlier_of_two_token_events_under_one_stamp():
    events = [TokenEvent(received_ns=stamp, read_index=index, chars=5, kind="content", answer=True)
              for index, stamp in enumerate([100, 200, 200, 300, 400, 400])]
    # The HTTP layer hands one read over as several chunks (one per chunked-encoding frame): the stamp, not the
    # chunk, tells which events came in one read.
    assert merged_reads(events) == [False, True, False, False, True, False]


def test_a_level_counts_flagged_ttfts_and_gaps_beside_their_percentiles():
    flagged = sample(0, ttft=120, tpot=10, gaps=[0.0, 20, 20])
    flagged.ttft_merged, flagged.merged_gaps = True, [0, 1]
    clean = sample(1, ttft=100, tpot=10, gaps=[20, 20, 20])
    failed = sample(2, ttft=90, tpot=10, ok=False)
    failed.ttft_merged = True  # a failed request's figures are not in the percentiles, nor its flags
    level = summarise_level(mode="concurrency", level=2, samples=[flagged, clean, failed], duration_s=1.0, slo=None,
                            hourly_price_usd=None)
    assert level.ttft_ms["merged_reads"] == 1 and level.itl_ms["merged_reads"] == 2
    assert level.to_dict()["ttft_ms"]["merged_reads"] == 1
