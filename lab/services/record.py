"""Storing a sweep's levels: each one as it finishes, while the attempt that measured it still holds the run."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

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


def sweep_level_record(*, run_id: int, attempt: int, level: LevelResult, secret: str = "") -> bool:
    """Store one finished level, unless this attempt lost the run meanwhile."""
    with transaction.atomic():
        run = lease_holder(SweepRun, pk=run_id, attempt=attempt).select_for_update().first()
        if run is None:
            return False
        fields = scrub(level_fields(level.to_dict()), secret)
        SweepLevel.objects.update_or_create(run=run, level=fields.pop("level"), defaults=fields)
        SweepRun.objects.filter(pk=run_id).update(levels_done=run.levels.count(), updated_at=timezone.now())
    return True
