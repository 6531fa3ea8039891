"""Builders of probe-page test data on top of tests/factories.py: targets with summaries, runs, prices and compat cells.

Test data only: the figures are chosen by each test so that it can assert what the pages show.
"""
import datetime as dt
from decimal import Decimal

from catalog.models import PriceItem, Tool
from probes.models import CompatOutcome, ProbeRun
from tests import factories

TEST_KEY_ENV = "ATLAS_TEST_API_KEY"


def metrics_json(*, ttft: float, speed: float, e2e: float, ttfat: float | None = None, tpot: float = 9.5) -> dict:
    ttfat = ttft if ttfat is None else ttfat
    return {
        "ttft_ms": {"p50": ttft, "p95": ttft * 1.5, "p99": ttft * 2, "median_72h": ttft},
        "ttfat_ms": {"p50": ttfat, "p95": ttfat * 1.5, "p99": ttfat * 2, "median_72h": ttfat},
        "output_speed_tps": {"p50": speed, "p95": speed * 0.8, "p99": speed * 0.7, "median_72h": speed},
        "e2e_ms": {"p50": e2e, "p95": e2e * 1.2, "p99": e2e * 1.3, "median_72h": e2e},
        "tpot_ms": {"p50": tpot, "p95": tpot * 1.2, "p99": tpot * 1.4, "median_72h": tpot},
    }


def make_tool(*, slug: str, name: str, kind: str = Tool.Kind.PROVIDER) -> Tool:
    return factories.ToolFactory(slug=slug, name=name, kind=kind)


def make_price(*, tool: Tool, item: str, input_usd: str, output_usd: str, tier: str = PriceItem.Tier.ON_DEMAND):
    return factories.PriceItemFactory(
        tool=tool,
        item=item,
        tier=tier,
        input_usd_per_mtok=Decimal(input_usd),
        output_usd_per_mtok=Decimal(output_usd),
        source=factories.SourceFactory(key=f"pricing-{tool.slug}-{tier}", title=f"{tool.name} pricing page"),
    )


def make_measured_target(
    *,
    now: dt.datetime,
    slug: str,
    name: str,
    tool: Tool,
    ttft: float,
    speed: float,
    e2e: float,
    ttfat: float | None = None,
    workload: str = "in-1k",
    concurrency: int = 1,
    age: dt.timedelta = dt.timedelta(hours=1),
    history_runs: int = 3,
    model_id: str = "gpt-oss-120b",
    region: str = "",
    **target_fields,
):
    target_fields.setdefault("api_key_env", TEST_KEY_ENV)
    target = factories.ProbeTargetFactory(slug=slug, name=name, tool=tool, model_id=model_id, **target_fields)
    last_run = None
    for index in range(history_runs):
        started = now - age - dt.timedelta(hours=3 * index)
        last_run = factories.ProbeRunFactory(
            target=target,
            workload=workload,
            concurrency=concurrency,
            region=region,
            started_at=started,
            finished_at=started + dt.timedelta(seconds=20),
            summary={
                "ttft_ms": {"p50": ttft + index, "p95": ttft * 1.5, "p99": ttft * 2},
                "output_speed_tps": {"p50": speed - index, "p95": speed * 0.8, "p99": speed * 0.7},
                "e2e_ms": {"p50": e2e, "p95": e2e * 1.2, "p99": e2e * 1.3},
                "success_rate": 1.0,
                "requests": 3,
            },
        )
        ProbeRun.objects.filter(pk=last_run.pk).update(queued_at=started)
    factories.MeasurementSummaryFactory(
        target=target,
        workload=workload,
        concurrency=concurrency,
        samples=9 * history_runs,
        samples_72h=3 * history_runs,
        success_rate=0.99,
        success_rate_72h=0.975,
        metrics=metrics_json(ttft=ttft, speed=speed, e2e=e2e, ttfat=ttfat),
        first_run_at=now - age - dt.timedelta(days=2),
        last_run_at=now - age,
        last_run=last_run,
    )
    return target


def make_compat(*, target, check_name: str, outcome: str, http_status=None, message="", detail="", now=None):
    return factories.CompatStatusFactory(
        target=target,
        check_name=check_name,
        outcome=outcome,
        http_status=http_status,
        message=message,
        detail=detail,
        **({"checked_at": now} if now else {}),
    )


OUTCOMES = CompatOutcome.Outcome
