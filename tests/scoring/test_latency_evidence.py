"""Optimising for latency ranks hosted providers on one latency metric from one publisher, and says which."""
from __future__ import annotations

from scoring.profile import Profile
from scoring.ranking import CatalogData, PriceInfo, ReportedSpeed, SpeedInfo, ToolInfo, recommend

LATENCY = Profile(hardware="none", hosted_ok=True, optimize_for="latency")
MODEL = "gpt-oss-120b"


def _catalog(**extra) -> CatalogData:
    tools = {slug: ToolInfo(slug=slug, name=slug.title(), kind="provider") for slug in ("fast", "slow")}
    prices = tuple(PriceInfo(tool=slug, model=MODEL, input_usd_per_mtok=0.15, output_usd_per_mtok=0.6,
                             source_key="prices") for slug in tools)
    return CatalogData(tools=tools, prices=prices, **extra)


def _providers(recommendation) -> list[str]:
    return [item.tool for item in recommendation.results if item.kind == "provider"]


def _speed(tool: str, ttft: float | None, ttfat: float | None) -> SpeedInfo:
    return SpeedInfo(tool=tool, target=f"{tool}-target", model=MODEL, workload="in-1k", concurrency=1,
                     samples_72h=50, output_speed_tps=None, ttft_ms=ttft, ttfat_ms=ttfat)


def test_measured_time_to_first_answer_token_ranks_when_every_provider_has_it():
    # "slow" starts its first (reasoning) token sooner but answers later.
    answer = recommend(LATENCY, _catalog(speeds=(_speed("fast", 300, 900), _speed("slow", 100, 2000))))

    assert _providers(answer)[0] == "fast"
    assert answer.latency_metric == "time to first answer token"
    texts = [reason.text for item in answer.results for reason in item.reasons]
    assert any("Measured time to first answer token" in text for text in texts)
    assert not any("Measured time to first token" in text for text in texts)


def test_measured_time_to_first_token_when_one_provider_lacks_the_answer_token():
    answer = recommend(LATENCY, _catalog(speeds=(_speed("fast", 300, 900), _speed("slow", 100, None))))

    assert _providers(answer)[0] == "slow"
    assert answer.latency_metric == "time to first token"


def _reported(tool: str, publisher: str, **figures) -> ReportedSpeed:
    return ReportedSpeed(tool=tool, model=MODEL, publisher=publisher, url=f"https://{publisher}.example/",
                         observed_on="2026-12-01", **figures)


def test_reported_latency_comes_from_one_publisher_and_one_metric():
    reported = (
        _reported("fast", "Bench A", ttfat_ms=900.0), _reported("slow", "Bench A", ttfat_ms=2000.0),
        # Another publisher's time to first token, which would reverse the order if it were mixed in.
        _reported("slow", "Bench B", ttft_ms=50.0),
        # The provider's own headline figure never weighs.
        _reported("slow", "Slow", ttfat_ms=10.0, self_reported=True),
    )
    answer = recommend(LATENCY, _catalog(reported=reported))

    assert _providers(answer)[0] == "fast"
    assert answer.latency_metric == "time to first answer token"
    publishers = {reason.external.title for item in answer.results for reason in item.reasons if reason.external}
    assert publishers == {"Bench A"}
