"""What a lab run asks for, checked before anything is stored: the plan and workload by the client's own rules,
the operator's hardware count and hourly price. Every error names the field it is about."""
from __future__ import annotations

import hashlib
import json
from decimal import Decimal, InvalidOperation
from typing import Any

from core.exceptions import ApplicationError
from lab.models import SweepRun
from probe_client.sweep import SuiteError, SweepLimitError, SweepPlan, Workload, WorkloadError, check_suite_parameters


def workload_key(workload: dict) -> str:
    """Runs with the same key measured the same workload (name and seed aside): their curves may share a chart."""
    shape = {k: v for k, v in workload.items() if k not in ("name", "seed", "basis")}
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:32]


def field_error(error: ValueError, *, prefix: str = "") -> ApplicationError:
    """The client's "<field>: <problem>" message as an ApplicationError on that field (under ``prefix``)."""
    message = str(error)
    name = message.split(":", 1)[0].strip() if ":" in message else "non_field_errors"
    name = f"{prefix}{name}" if prefix else name
    return ApplicationError(message, fields={name: [message]})


def valid_workload(workload: Any) -> Workload:
    try:
        return Workload.from_dict(workload)
    except WorkloadError as error:
        raise field_error(error, prefix="workload.") from None


def valid_hourly_price(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        price = Decimal(str(value))
    except InvalidOperation:
        raise ApplicationError(
            "hourly_price_usd must be a number.", fields={"hourly_price_usd": ["A number of dollars per hour."]}
        ) from None
    if not price.is_finite() or price < 0 or price > Decimal("100000"):
        raise ApplicationError(
            "hourly_price_usd must be between 0 and 100000.", fields={"hourly_price_usd": ["0 to 100000."]}
        )
    return price.quantize(Decimal("0.0001"))


def valid_hardware_count(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
        raise ApplicationError("hardware_count must be between 1 and 4096.", fields={"hardware_count": ["1 to 4096."]})
    return value


def valid_plan(kind: str, plan: dict | None, workload: dict | None) -> tuple[dict, dict]:
    """The plan and workload to store, checked by the client's own rules."""
    plan = dict(plan or {})
    if kind == SweepRun.Kind.SWEEP:
        if workload is None:
            raise ApplicationError("A sweep needs a workload.", fields={"workload": ["Required for a sweep."]})
        parsed_workload = valid_workload(workload)
        try:
            parsed = SweepPlan.from_dict(plan)
            parsed.check_workload(parsed_workload)
        except SweepLimitError as error:
            raise field_error(error, prefix="plan.") from None
        return parsed.to_dict(), parsed_workload.to_dict()
    if kind not in SweepRun.Kind.values:
        raise ApplicationError(f"Unknown kind {kind!r}.", fields={"kind": [f"One of {', '.join(SweepRun.Kind.values)}."]})
    try:
        check_suite_parameters(kind, plan)
    except SuiteError as error:
        raise field_error(error, prefix="plan.") from None
    return plan, (dict(workload) if workload else {})
