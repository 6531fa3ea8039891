"""Storing a sweep's levels: each one as it finishes, while the attempt that measured it still holds the run."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.cache import generation_bump
from core.leases import lease_holder
from lab.models import SweepLevel, SweepRun
from probe_client.secrets import scrub
from probe_client.sweep import LevelResult
from scoring.vocabulary import LEVEL_METRICS

PERCENTILE_FIELDS = tuple(metric.key for metric in LEVEL_METRICS)
NUMBER_FIELDS = (
    "duration_s", "output_tps", "total_tps", "request_rate", "goodput_rps", "slo_attainment", "cost_per_1m_output_usd"
)


def level_fields(level: dict) -> dict:
    """The SweepLevel columns of a level as ``LevelResult.to_dict()`` or an imported file states it."""
    return {
        "mode": level.get("mode") or "concurrency",
        "level": float(level["level"]),
        "requests": int(level.get("requests") or 0),
        "ok": int(level.get("ok") or 0),
        **{name: level.get(name) for name in NUMBER_FIELDS},
        **{name: level.get(name) or {} for name in PERCENTILE_FIELDS},
        "meets_slo": level.get("meets_slo"),
        "errors": level.get("errors") or {},
        "output_tokens_source": str(level.get("output_tokens_source") or "")[:20],
        "truncated": bool(level.get("truncated")),
        "schedule_lag_ms": level.get("schedule_lag_ms"),
    }


LEVEL_FIELD_NAMES = tuple(level_fields({"level": 1}))


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def request_records(level: LevelResult) -> list[dict]:
    """What each request of a measured level did, in sending order: send time in ms from the level's first send,
    TTFT, TPOT, E2E, every inter-token gap, tokens, and the error when it failed. ``ttft_merged`` says its TTFT may
    be up to one gap late and ``itl_merged`` lists the gaps (by position in ``itl_ms``) that may be off by up to one
    gap: a network read held two token events under one kernel stamp (probe_client.sweep.stats)."""
    first = min((sample.sent_ns for sample in level.samples if sample.sent_ns is not None), default=None)
    records = []
    for sample in sorted(level.samples, key=lambda s: (s.sent_ns is None, s.sent_ns or 0, s.index)):
        records.append({
            "index": sample.index,
            "sent_ms": None if sample.sent_ns is None else _ms((sample.sent_ns - first) / 1e6),
            "ok": sample.ok,
            "input_tokens": sample.input_tokens,
            "output_tokens": sample.output_tokens,
            "ttft_ms": _ms(sample.ttft_ms),
            "tpot_ms": _ms(sample.tpot_ms),
            "e2e_ms": _ms(sample.e2e_ms),
            "itl_ms": [_ms(gap) for gap in sample.gaps_ms],
            "ttft_merged": sample.ttft_merged,
            "itl_merged": list(sample.merged_gaps),
            "error_class": sample.error_class,
            "error_message": sample.error_message,
        })
    return records


def sweep_level_record(*, run_id: int, attempt: int, level: LevelResult, secret: str = "") -> bool:
    """Store one finished level, unless this attempt lost the run meanwhile."""
    with transaction.atomic():
        generation_bump()
        run = lease_holder(SweepRun, pk=run_id, attempt=attempt).select_for_update().first()
        if run is None:
            return False
        fields = scrub({**level_fields(level.to_dict()), "request_records": request_records(level)}, secret)
        SweepLevel.objects.update_or_create(run=run, level=fields.pop("level"), defaults=fields)
        SweepRun.objects.filter(pk=run_id).update(levels_done=run.levels.count(), updated_at=timezone.now())
    return True
