"""The benchmark card of a lab run, and the retest rule that compares it with the run before."""
from __future__ import annotations

from lab.models import OWN_TOOL, SweepRun
from probe_client.sweep import CLIENT_VERSION


def sweep_card(*, run: SweepRun, facts: dict, server_info: dict | None = None, requested_model: str = "") -> dict:
    """The benchmark card of a run measured here: the server's word where it gives one, the operator's where
    it does not (each field says which), the workload, and the client. ``requested_model`` is the model id the
    requests named, for a run without a target (measured from the command line)."""
    target = run.target
    server_info = server_info or {}
    reported_version = facts.get("engine_version")
    return {
        "tool": OWN_TOOL,
        "client_version": CLIENT_VERSION,
        "engine": run.tool.name if run.tool else "",
        "engine_reported": facts.get("engine"),
        "engine_version": reported_version or (target.engine_version if target else "") or None,
        "engine_version_source": ("server" if reported_version else ("operator" if target and target.engine_version else None)),
        "model_id": target.model_id if target else requested_model,
        "served_model": facts.get("model_id") or server_info.get("model"),
        "weights": facts.get("weights"),
        "weights_format": facts.get("weights_format") or (target.quantization if target else "") or None,
        "weights_format_source": (
            "server" if facts.get("weights_format") else ("operator" if target and target.quantization else None)
        ),
        "context_length": facts.get("context_length"),
        "parallel_slots": facts.get("parallel_slots"),
        "server_sources": facts.get("sources", []),
        "server_headers": {k: v for k, v in server_info.items() if k in ("server", "x-powered-by", "via")},
        "hardware": (
            {"slug": run.hardware.slug, "name": run.hardware.name, "count": run.hardware_count} if run.hardware else None
        ),
        "hardware_source": "operator" if run.hardware else None,
        "flags": run.flags,
        "workload": run.workload,
    }


def card_merged_reads(levels: list[dict]) -> list[dict]:
    """Per level measured here, the TTFTs and inter-token gaps whose stamp may be up to one gap late (merged reads,
    probe_client.sweep.stats), for the card: ``levels`` as stored or as ``LevelResult.to_dict()`` gives them."""
    return [
        {"level": level["level"], "ttft": (level.get("ttft_ms") or {}).get("merged_reads"),
         "itl": (level.get("itl_ms") or {}).get("merged_reads")}
        for level in sorted(levels, key=lambda level: level["level"])
    ]


def sweep_changes(*, run: SweepRun) -> dict:
    """The retest rule: compare the server-reported engine version and model with the target's (or, for an
    import without target, the same tool and hardware's) previous finished run of the same kind."""
    previous = SweepRun.objects.lab().finished().filter(kind=run.kind).exclude(pk=run.pk)
    if run.target_id:
        previous = previous.filter(target_id=run.target_id)
    else:
        previous = previous.filter(target__isnull=True, tool_id=run.tool_id, hardware_id=run.hardware_id)
    previous = previous.filter(queued_at__lt=run.queued_at).order_by("-queued_at", "-id").first()
    if previous is None:
        return {}
    changes = {}
    for name, old, new in (
        ("engine_version", previous.engine_version, run.engine_version),
        ("model", previous.model_fingerprint, run.model_fingerprint),
    ):
        if old and new and old != new:
            changes[name] = {"old": old, "new": new, "previous_run": previous.pk}
    return changes
