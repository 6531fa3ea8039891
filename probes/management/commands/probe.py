"""Probe an OpenAI-compatible endpoint now, without Celery.

    manage.py probe --base-url URL --model MODEL [--api-key-env NAME] [--suite speed|compat|all]
                    [--input-tokens N] [--max-tokens N] [--requests N] [--concurrency N] [--json]
    manage.py probe --target SLUG [--save] [...]

Ad-hoc runs are printed and never stored. ``--target SLUG --save`` measures a stored target and stores
the runs exactly as a worker would (summaries included). A progress bar appears only on a terminal;
with ``--json`` stdout carries exactly one JSON document.
"""
from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

import probe_client
from core.exceptions import ApplicationError
from probe_client.config import config_from_flags
from probe_client.workloads import workload_for
from probes.models import ProbeRun, ProbeTarget, RequestMeasurement
from probes.selectors.runs import probe_target_get
from probes.services.runs.execute import probe_target_run_now
from probes.services.summaries import rounded_percentiles
from scoring.vocabulary import COMPAT_CHECKS, PERCENTILES, run_summary_keys

DEFAULT_INPUT_TOKENS = 1000
DEFAULT_MAX_TOKENS = 256
DEFAULT_REQUESTS = 3


def _positive(option: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise CommandError(f"{option}: must be a positive whole number, got {value}.")


def _measurement_json(measurement: RequestMeasurement) -> dict[str, Any]:
    """A stored measurement in the same per-request shape as an ad-hoc run: the client's own serializer."""
    names = probe_client.RequestResult.stored_field_names()
    result = probe_client.RequestResult(**{name: getattr(measurement, name) for name in names})
    return result.to_json()


def _speed_summary(measurements: list[Any]) -> dict[str, Any]:
    succeeded = [m for m in measurements if m.ok]
    summary: dict[str, Any] = {key: rounded_percentiles(getattr(m, key) for m in succeeded) for key in run_summary_keys()}
    summary.update(requests=len(measurements), ok=len(succeeded))
    summary["success_rate"] = len(succeeded) / len(measurements) if measurements else None
    return summary


class Command(BaseCommand):
    help = "Measure an OpenAI-compatible endpoint now (speed and/or compat suite), without Celery."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", help="Endpoint base URL up to and including /v1.")
        parser.add_argument("--model", help="Model id to request.")
        parser.add_argument("--api-key-env", help="NAME of the environment variable that holds the API key.")
        parser.add_argument("--target", help="Slug of a stored probe target instead of --base-url/--model.")
        parser.add_argument("--save", action="store_true", help="Store the runs (only with --target).")
        parser.add_argument("--suite", choices=("speed", "compat", "all"), default="all")
        parser.add_argument("--input-tokens", type=int, help=f"About this many prompt tokens ({DEFAULT_INPUT_TOKENS}).")
        parser.add_argument("--max-tokens", type=int, help=f"Output tokens per request ({DEFAULT_MAX_TOKENS}).")
        parser.add_argument("--requests", type=int, help=f"Requests in the speed suite ({DEFAULT_REQUESTS}).")
        parser.add_argument("--concurrency", type=int, default=1, help="Requests in flight at once (1).")
        parser.add_argument("--json", action="store_true", help="Print one JSON document on stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        for option in ("input_tokens", "max_tokens", "requests", "concurrency"):
            _positive("--" + option.replace("_", "-"), options[option])
        suites = ("speed", "compat") if options["suite"] == "all" else (options["suite"],)
        if options["target"]:
            if options["base_url"] or options["model"] or options["api_key_env"]:
                raise CommandError("--target: use either --target or --base-url/--model/--api-key-env, not both.")
            document = self._run_target(options, suites)
        else:
            if options["save"]:
                raise CommandError("--save: only a stored target can be saved; add --target SLUG.")
            document = self._run_adhoc(options, suites)
        if options["json"]:
            self.stdout.write(json.dumps(document, default=str))
        else:
            self._print_human(document)

    # --- ad hoc ---

    def _config(self, options: dict[str, Any]) -> probe_client.EndpointConfig:
        try:
            return config_from_flags(
                base_url=options["base_url"], model=options["model"], api_key_env=options["api_key_env"]
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None

    def _progress(self, total: int, description: str) -> tqdm:
        return tqdm(total=total, desc=description, file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)

    def _run_adhoc(self, options: dict[str, Any], suites: tuple[str, ...]) -> dict[str, Any]:
        config = self._config(options)
        concurrency = options["concurrency"]
        requests = options["requests"] or max(DEFAULT_REQUESTS, concurrency)
        document: dict[str, Any] = {}
        if "speed" in suites:
            with self._progress(requests, "speed") as bar:
                speed = asyncio.run(
                    probe_client.run_speed_suite(
                        config,
                        input_tokens=options["input_tokens"] or DEFAULT_INPUT_TOKENS,
                        max_tokens=options["max_tokens"] or DEFAULT_MAX_TOKENS,
                        requests=requests,
                        concurrency=concurrency,
                        on_request_done=lambda *_args, **_kwargs: bar.update(1),
                    )
                )
            document["speed"] = speed.to_json()
        if "compat" in suites:
            with self._progress(len(COMPAT_CHECKS), "compat") as bar:
                compat = asyncio.run(
                    probe_client.run_compat_suite(config, on_check_done=lambda *_args, **_kwargs: bar.update(1))
                )
            document["compat"] = compat.to_json()
        return document

    # --- stored target ---

    def _run_target(self, options: dict[str, Any], suites: tuple[str, ...]) -> dict[str, Any]:
        try:
            target = probe_target_get(slug=options["target"])
        except ProbeTarget.DoesNotExist:
            raise CommandError(f"--target: no probe target with slug {options['target']!r}.") from None
        if not target.is_configured:
            raise CommandError(
                f"--target: {target.slug} needs its API key in the environment variable {target.api_key_env}, "
                "which is not set."
            )
        if not options["save"]:
            options = {**options, "base_url": target.base_url, "model": target.model_id}
            options["api_key_env"] = target.api_key_env or None
            return self._run_adhoc(options, suites)
        workloads = None
        if options["input_tokens"]:
            workload = workload_for(options["input_tokens"])
            if workload not in probe_client.WORKLOADS:
                known = ", ".join(f"{tokens} ({name})" for name, tokens in probe_client.WORKLOADS.items())
                raise CommandError(f"--input-tokens: a saved run uses a standard workload: one of {known}.")
            workloads = [workload]
        total = options["requests"] or DEFAULT_REQUESTS
        with self._progress(None if options["suite"] == "all" else total, target.slug) as bar:
            try:
                runs = probe_target_run_now(
                    target=target,
                    suites=suites,
                    workloads=workloads,
                    concurrency=options["concurrency"],
                    requests=options["requests"],
                    max_tokens=options["max_tokens"],
                    on_progress=lambda *_args, **_kwargs: bar.update(1),
                )
            except ApplicationError as exc:
                raise CommandError(exc.message) from None
        return self._stored_document(runs)

    def _stored_document(self, runs: list[ProbeRun]) -> dict[str, Any]:
        document: dict[str, Any] = {
            "runs": [
                {
                    "id": run.pk,
                    "suite": run.suite,
                    "workload": run.workload,
                    "concurrency": run.concurrency,
                    "status": run.status,
                    "error_class": run.error_class or None,
                }
                for run in runs
            ]
        }
        speed_runs = [run for run in runs if run.suite == ProbeRun.Suite.SPEED]
        if speed_runs:
            measurements = [m for run in speed_runs for m in run.measurements.order_by("index")]
            document["speed"] = {
                "requests": [_measurement_json(m) for m in measurements],
                "summary": _speed_summary(measurements),
            }
        compat_runs = [run for run in runs if run.suite == ProbeRun.Suite.COMPAT]
        if compat_runs:
            document["compat"] = {
                outcome.check_name: {
                    "outcome": outcome.outcome,
                    "status": outcome.http_status,
                    "detail": outcome.detail,
                    "message": outcome.message,
                }
                for run in compat_runs
                for outcome in run.compat_outcomes.all()
            }
        return document

    # --- human output ---

    def _print_human(self, document: dict[str, Any]) -> None:
        for run in document.get("runs", []):
            self.stdout.write(
                f"run {run['id']}: {run['suite']} {run['workload'] or ''} x{run['concurrency']} -> {run['status']}"
                + (f" ({run['error_class']})" if run["error_class"] else "")
            )
        speed = document.get("speed")
        if speed:
            summary = speed["summary"]
            self.stdout.write(f"speed: {summary.get('ok')} of {summary.get('requests')} requests succeeded")
            for key in run_summary_keys():
                figures = summary.get(key) or {}
                cells = "  ".join(
                    f"{name} {figures[name]:.1f}" if figures.get(name) is not None else f"{name} -"
                    for name in PERCENTILES
                )
                self.stdout.write(f"  {key:<17} {cells}")
            errors = [r["error"] for r in speed["requests"] if r.get("error")]
            for error in errors[:5]:
                self.stdout.write(f"  error: {error['class']}: {error['message']}")
        compat = document.get("compat")
        if compat:
            self.stdout.write("compat:")
            for check, outcome in compat.items():
                status = f" HTTP {outcome['status']}" if outcome.get("status") else ""
                self.stdout.write(f"  {check:<24} {outcome['outcome']}{status}  {outcome.get('detail') or ''}")
