"""Run the benchmark lab from the command line on any OpenAI-compatible endpoint, without Celery.

    manage.py sweep --base-url URL --model ID [--api-key-env NAME] | --target SLUG
                    [--levels 1,8,32 | --rates 2,4,8] [--requests-per-level N] [--max-duration-s S]
                    [--input-tokens N --max-tokens N | --preset NAME | --workload-jsonl FILE]
                    [--slo-ttft-ms MS --slo-tpot-ms MS] [--suite prefill-decode|prefix-cache|structured-output]
                    [--tool SLUG] [--hardware SLUG --hardware-count N --hourly-price-usd X --flags TEXT]
                    [--save] [--json]

The measurement is the lab's own (lab.services.run): the same plan checks, runner, card and, with --save, the
same storage as a run a worker measures, so a saved run shows on /engines/lab/ like any other. Progress goes to
stderr (a bar of the requests done at each level on a terminal, a line per finished level with its p50s); with
--json stdout carries exactly one JSON document. Ctrl-C stops after the requests in flight: the
levels finished so far are kept (stored, with --save) and the exit code is 130. Exit codes: 0 measured, 2 bad
arguments (the message names the flag), 3 the endpoint failed (nothing could be measured, every request of a level
failed with an error that stops a sweep, or no request succeeded at all).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from catalog.models import HardwareSpec, Tool
from core.exceptions import ApplicationError
from lab.models import SweepRun
from lab.services.record import LEVEL_FIELD_NAMES, level_fields, request_records
from lab.services.run import STOPPED_REASONS, sweep_measure, sweep_run_create, sweep_run_execute
from probe_client.config import config_from_flags
from probe_client.sweep import PRESETS, LevelResult, WorkloadError, workload_from_jsonl
from probes.models import ProbeTarget
from probes.selectors.runs import probe_target_get
from scoring.vocabulary import TPOT, TTFT

EXIT_BAD_ARGUMENTS = 2
EXIT_ENDPOINT_FAILED = 3
EXIT_INTERRUPTED = 130  # the shell's code for a process ended by SIGINT
DEFAULT_LEVELS = "1,2,4,8"
# With no workload option a sweep measures the chat preset: lengths a chat assistant might see, stated as such.
DEFAULT_PRESET = "chat"
SUITES = {
    "prefill-decode": SweepRun.Kind.PREFILL_DECODE,
    "prefix-cache": SweepRun.Kind.PREFIX_CACHE,
    "structured-output": SweepRun.Kind.STRUCTURED_OUTPUT,
}
# Which flag sets each suite parameter (the rest keep the suite's defaults).
SUITE_FLAGS = {
    SweepRun.Kind.PREFILL_DECODE: {"requests_per_length": "requests_per_level", "output_tokens": "max_tokens"},
    SweepRun.Kind.PREFIX_CACHE: {"requests": "requests_per_level", "output_tokens": "max_tokens"},
    SweepRun.Kind.STRUCTURED_OUTPUT: {
        "requests": "requests_per_level", "input_tokens": "input_tokens", "output_tokens": "max_tokens"
    },
}
# The flag behind each field a lab service may name in an error ("plan.levels[2]", "workload.output.value").
FIELD_FLAGS = (
    ("plan.requests_per_level", "--requests-per-level"),
    ("plan.requests", "--requests-per-level"),
    ("plan.slo.ttft_ms", "--slo-ttft-ms"),
    ("plan.slo.tpot_ms", "--slo-tpot-ms"),
    ("plan.max_duration_s", "--max-duration-s"),
    ("plan.output", "--max-tokens"),
    ("plan.input_tokens", "--input-tokens"),
    ("workload.output", "--max-tokens"),
    ("workload.input", "--input-tokens"),
    ("hourly_price_usd", "--hourly-price-usd"),
    ("hardware_count", "--hardware-count"),
)


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=EXIT_BAD_ARGUMENTS)


def _numbers(flag: str, text: str, kind: type) -> list:
    values = []
    for part in text.split(","):
        try:
            values.append(kind(part.strip()))
        except ValueError:
            raise _bad(f"{flag}: {part.strip()!r} is not a {'whole ' if kind is int else ''}number; "
                       f"give a comma-separated list such as 1,8,32.") from None
    return values


def _figure(figures: dict | None, name: str = "p50") -> str:
    value = (figures or {}).get(name)
    return "-" if value is None else f"{value:.1f}"


class _Progress:
    """On a terminal, a bar of the requests done at the level in progress (updated from the measuring thread,
    so it is guarded by a lock); everywhere, one line per finished level with its p50s."""

    def __init__(self, write) -> None:
        self.write = write
        self.enabled = sys.stderr.isatty()
        self.lock = threading.Lock()
        self.bar: tqdm | None = None
        self.level: float | None = None

    def request_done(self, level: float, done: int, total: int) -> None:
        if not self.enabled:
            return
        with self.lock:
            if self.level != level:
                self._close()
                self.level = level
                self.bar = tqdm(total=total, desc=f"level {level:g}", unit="req", file=sys.stderr, leave=False)
            self.bar.update(done - self.bar.n)

    def level_done(self, level: LevelResult) -> None:
        unit = "streams" if level.mode == "concurrency" else "req/s"
        errors = f", errors {dict(level.errors)}" if level.errors else ""
        line = (
            f"level {level.level:g} {unit}: {level.ok}/{level.requests} requests ok in {level.duration_s:.1f} s, "
            f"TTFT p50 {_figure(level.ttft_ms)} ms, TPOT p50 {_figure(level.tpot_ms)} ms, "
            f"output {level.output_tps or 0:.1f} tok/s{errors}"
        )
        with self.lock:
            if self.level == level.level:
                self._close()
            if self.enabled:
                with tqdm.external_write_mode(file=sys.stderr):
                    self.write(line)
            else:
                self.write(line)

    def close(self) -> None:
        with self.lock:
            self._close()

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.bar, self.level = None, None


class Command(BaseCommand):
    help = "Run a benchmark-lab sweep or suite on an OpenAI-compatible endpoint now; --save stores it as a lab run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--base-url", help="Endpoint base URL up to and including /v1.")
        parser.add_argument("--model", help="Model id to request.")
        parser.add_argument("--api-key-env", help="NAME of the environment variable that holds the API key.")
        parser.add_argument("--target", help="Slug of a stored probe target instead of --base-url/--model.")
        load = parser.add_mutually_exclusive_group()
        load.add_argument("--levels", help=f"Closed loop: concurrent streams per level ({DEFAULT_LEVELS}).")
        load.add_argument("--rates", help="Open loop: Poisson arrivals per level, requests/s (e.g. 2,4,8).")
        parser.add_argument("--requests-per-level", type=int, help="Requests sent at each level (32).")
        parser.add_argument("--max-duration-s", type=float, help="Stop sending after this many seconds (900).")
        parser.add_argument("--input-tokens", type=int, help="Prompt tokens of every request (fixed).")
        parser.add_argument("--max-tokens", type=int, help="Output tokens of every request (fixed).")
        parser.add_argument("--preset", choices=sorted(PRESETS), help=f"A named workload ({DEFAULT_PRESET}).")
        parser.add_argument("--workload-jsonl", type=Path, help="Your traffic: JSONL with input_tokens, output_tokens.")
        parser.add_argument("--slo-ttft-ms", type=float, help="SLO on time to first token, for goodput.")
        parser.add_argument("--slo-tpot-ms", type=float, help="SLO on time per output token, for goodput.")
        parser.add_argument("--suite", choices=sorted(SUITES), help="A single-stream suite instead of a sweep.")
        parser.add_argument("--tool", help="Slug of the engine in the catalog (a target's run is its target's).")
        parser.add_argument("--hardware", help="Slug of the hardware in the catalog (for the card and charts).")
        parser.add_argument("--hardware-count", type=int, default=1, help="How many of it served the model (1).")
        parser.add_argument("--hourly-price-usd", help="What that hardware costs per hour (cost per 1M tokens).")
        parser.add_argument("--flags", default="", help="The engine's flags, for the card.")
        parser.add_argument("--save", action="store_true", help="Store the run in the lab (shown on /engines/lab/).")
        parser.add_argument("--json", action="store_true", help="Print one JSON document on stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        for option in ("requests_per_level", "input_tokens", "max_tokens"):
            if options[option] is not None and options[option] < 1:
                raise _bad(f"--{option.replace('_', '-')}: must be a positive whole number, got {options[option]}.")
        config, target = self._endpoint(options)
        kind = SUITES[options["suite"]] if options["suite"] else SweepRun.Kind.SWEEP
        plan, workload = self._suite_plan(kind, options) if options["suite"] else self._sweep_plan(options)
        if options["tool"] and target is not None:
            raise _bad("--tool: a target's run is measured on its own tool; leave --tool out with --target.")
        card_fields = {
            "tool": self._by_slug(Tool, options["tool"], "--tool", "tool"),
            "hardware": self._by_slug(HardwareSpec, options["hardware"], "--hardware", "hardware"),
            "hardware_count": options["hardware_count"],
            "hourly_price_usd": options["hourly_price_usd"],
            "flags": options["flags"],
        }
        interrupted = threading.Event()
        self._announce(config, kind, plan, options)
        progress = _Progress(self.stderr.write)
        previous_handler = signal.signal(signal.SIGINT, self._on_interrupt(interrupted))
        try:
            measure = self._measure_saved if options["save"] else self._measure_unsaved
            document = measure(config, target, kind, plan, workload, card_fields, interrupted, progress, options)
        finally:
            signal.signal(signal.SIGINT, previous_handler)
            progress.close()
        if options["json"]:
            self.stdout.write(json.dumps(document, default=str))
        else:
            self._print_human(document)
        if document["status"] == SweepRun.Status.FAILED or document["stopped_reason"] == STOPPED_REASONS["fatal"]:
            error = document["error"] or {}
            raise CommandError(
                f"The endpoint failed: {error.get('class') or 'error'}: {error.get('message') or 'no level measured'}",
                returncode=EXIT_ENDPOINT_FAILED,
            )
        # Errors the runner does not stop for (a 500, a timeout) still leave nothing measured when none succeeded.
        levels = document["levels"]
        if levels and not any(level["ok"] for level in levels):
            errors: dict[str, int] = {}
            for level in levels:
                for name, count in level["errors"].items():
                    errors[name] = errors.get(name, 0) + count
            raise CommandError(
                f"The endpoint failed: no request succeeded ({', '.join(f'{n} x{c}' for n, c in errors.items())}).",
                returncode=EXIT_ENDPOINT_FAILED,
            )
        if interrupted.is_set():
            raise CommandError("Interrupted; the levels finished before Ctrl-C are kept.", returncode=EXIT_INTERRUPTED)

    # --- arguments ---

    def _endpoint(self, options: dict[str, Any]) -> tuple[Any, ProbeTarget | None]:
        if not options["target"]:
            try:
                config = config_from_flags(
                    base_url=options["base_url"], model=options["model"], api_key_env=options["api_key_env"]
                )
            except ValueError as exc:
                raise _bad(str(exc)) from None
            return config, None
        if options["base_url"] or options["model"] or options["api_key_env"]:
            raise _bad("--target: use either --target or --base-url/--model/--api-key-env, not both.")
        try:
            target = probe_target_get(slug=options["target"])
        except ProbeTarget.DoesNotExist:
            raise _bad(f"--target: no probe target with slug {options['target']!r}.") from None
        if not target.is_configured:
            raise _bad(f"--target: {target.slug} needs its API key in the environment variable "
                       f"{target.api_key_env}, which is not set.")
        return target.endpoint_config(), target

    def _by_slug(self, model, slug: str | None, flag: str, what: str):
        if not slug:
            return None
        found = model.objects.filter(slug=slug).first()
        if found is None:
            raise _bad(f"{flag}: no {what} with the slug {slug!r} in the catalog.")
        return found

    def _sweep_plan(self, options: dict[str, Any]) -> tuple[dict, dict]:
        if options["rates"]:
            plan: dict[str, Any] = {"mode": "rate", "levels": _numbers("--rates", options["rates"], float)}
        else:
            plan = {"mode": "concurrency", "levels": _numbers("--levels", options["levels"] or DEFAULT_LEVELS, int)}
        if options["requests_per_level"] is not None:
            plan["requests_per_level"] = options["requests_per_level"]
        if options["max_duration_s"] is not None:
            plan["max_duration_s"] = options["max_duration_s"]
        slo = {name: options[f"slo_{name}"] for name in (TTFT.key, TPOT.key) if options[f"slo_{name}"] is not None}
        if len(slo) == 1:
            missing = "--slo-tpot-ms" if "ttft_ms" in slo else "--slo-ttft-ms"
            raise _bad(f"{missing}: an SLO needs both --slo-ttft-ms and --slo-tpot-ms.")
        if slo:
            plan["slo"] = slo
        return plan, self._workload(options)

    def _workload(self, options: dict[str, Any]) -> dict:
        fixed = options["input_tokens"] is not None or options["max_tokens"] is not None
        choices = (("--preset", options["preset"]), ("--workload-jsonl", options["workload_jsonl"]),
                   ("--input-tokens/--max-tokens", fixed))
        given = [flag for flag, present in choices if present]
        if len(given) > 1:
            raise _bad(f"{given[0]}: give one workload: {' or '.join(given)}, not both.")
        if options["workload_jsonl"]:
            path = options["workload_jsonl"]
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise _bad(f"--workload-jsonl: cannot read {path}: {exc}") from None
            try:
                return workload_from_jsonl(text, name=path.stem[:80]).to_dict()
            except WorkloadError as error:
                raise _bad(f"--workload-jsonl: {error}") from None
        if fixed:
            missing = "--input-tokens" if options["input_tokens"] is None else "--max-tokens"
            if options["input_tokens"] is None or options["max_tokens"] is None:
                raise _bad(f"{missing}: a fixed workload needs both --input-tokens and --max-tokens.")
            name = f"{options['input_tokens']} in / {options['max_tokens']} out"
            return {"name": name, "input": options["input_tokens"], "output": options["max_tokens"]}
        return PRESETS[options["preset"] or DEFAULT_PRESET].to_dict()

    def _suite_plan(self, kind: str, options: dict[str, Any]) -> tuple[dict, None]:
        for flag in ("levels", "rates", "preset", "workload_jsonl", "slo_ttft_ms", "slo_tpot_ms", "max_duration_s"):
            if options[flag] is not None:
                raise _bad(f"--{flag.replace('_', '-')}: not an option of a suite (--suite {options['suite']}).")
        plan = {name: options[flag] for name, flag in SUITE_FLAGS[kind].items() if options[flag] is not None}
        if options["input_tokens"] is not None and "input_tokens" not in SUITE_FLAGS[kind].values():
            raise _bad(f"--input-tokens: not an option of --suite {options['suite']}.")
        return plan, None

    def _flag_error(self, error: ApplicationError, options: dict[str, Any]) -> CommandError:
        field_name = next(iter(error.fields), "")
        if field_name.startswith("plan.levels"):
            flag = "--rates" if options["rates"] else "--levels"
        else:
            flag = next((flag for prefix, flag in FIELD_FLAGS if field_name.startswith(prefix)), None)
        if flag is None:
            flag = "--suite" if options["suite"] else "--levels"
        return _bad(f"{flag}: {error.message}")

    # --- measuring ---

    def _on_interrupt(self, interrupted: threading.Event):
        def handler(signum: int, frame: Any) -> None:
            if interrupted.is_set():
                raise KeyboardInterrupt
            interrupted.set()
            self.stderr.write("Stopping after the requests in flight (Ctrl-C again to abort at once).")
        return handler

    def _announce(self, config, kind: str, plan: dict, options: dict[str, Any]) -> None:
        what = SweepRun.Kind(kind).label
        if kind == SweepRun.Kind.SWEEP:
            unit = "streams" if plan["mode"] == "concurrency" else "requests/s"
            what += f" at {', '.join(f'{level:g}' for level in plan['levels'])} {unit}"
        self.stderr.write(f"{what} on {config.model} at {config.base_url}{' (saved)' if options['save'] else ''}")
        if kind == SweepRun.Kind.SWEEP:
            self.stderr.write("One settle request is sent first (parameters, first connection); no level counts it.")

    def _measure_saved(
        self, config, target, kind, plan, workload, card_fields, interrupted, progress, options
    ) -> dict:
        try:
            run = sweep_run_create(target=target, kind=kind, plan=plan, workload=workload, **card_fields)
        except ApplicationError as error:
            raise self._flag_error(error, options) from None
        sweep_run_execute(
            run_id=run.pk, worker=f"cli:{socket.gethostname()}:{os.getpid()}", config=config,
            should_stop=interrupted.is_set, on_level_done=progress.level_done, on_request_done=progress.request_done,
        )
        run.refresh_from_db()
        levels = [
            {**{name: getattr(level, name) for name in LEVEL_FIELD_NAMES}, "request_records": level.request_records}
            for level in run.levels.order_by("level")
        ]
        return self._document(run, config, levels=levels, outcome={
            "status": run.status, "stopped_reason": run.stopped_reason, "results": run.results,
            "error_class": run.error_class, "error_message": run.error_message,
        }, card=run.card)

    def _measure_unsaved(
        self, config, target, kind, plan, workload, card_fields, interrupted, progress, options
    ) -> dict:
        try:
            run, measured = sweep_measure(
                config=config, kind=kind, plan=plan, workload=workload, should_stop=interrupted.is_set,
                on_level_done=progress.level_done, on_request_done=progress.request_done, **card_fields,
            )
        except ApplicationError as error:
            raise self._flag_error(error, options) from None
        levels = sorted(
            ({**level_fields(level.to_dict()), "request_records": request_records(level)} for level in measured.levels),
            key=lambda level: level["level"],
        )
        return self._document(run, config, levels=levels, outcome=measured.outcome, card=measured.card)

    def _document(self, run: SweepRun, config, *, levels: list[dict], outcome: dict, card: dict) -> dict:
        return {
            "run": run.pk,
            "page": f"/engines/lab/{run.pk}/" if run.pk else None,
            "kind": run.kind,
            "status": str(outcome["status"]),
            "stopped_reason": outcome.get("stopped_reason") or None,
            "error": {"class": outcome["error_class"], "message": outcome.get("error_message") or ""}
            if outcome.get("error_class") else None,
            "endpoint": {"base_url": config.base_url, "model": config.model, "api_key_env": config.api_key_env},
            "plan": run.plan,
            "workload": run.workload,
            "settle": (outcome.get("results") or {}).get("settle") if run.kind == SweepRun.Kind.SWEEP else None,
            "levels": levels,
            "results": outcome.get("results") or {},
            "card": card,
        }

    # --- human output ---

    def _print_human(self, document: dict) -> None:
        where = f" (saved as run {document['run']}: {document['page']})" if document["run"] else ""
        self.stdout.write(f"{document['kind']}: {document['status']}{where}")
        if document["stopped_reason"]:
            self.stdout.write(f"  ended early: {document['stopped_reason']}")
        if document["error"]:
            self.stdout.write(f"  error: {document['error']['class']}: {document['error']['message']}")
        settle = document["settle"]
        if settle:
            outcome = "ok" if settle["ok"] else f"failed ({settle['error_class']})"
            ttft = "" if settle["ttft_ms"] is None else f", TTFT {settle['ttft_ms']:.1f} ms"
            self.stdout.write(f"  settle request (counted in no level): {outcome}{ttft}")
        if document["levels"]:
            self.stdout.write(
                f"  {'level':>7} {'ok':>9} {'TTFT p50/p99 ms':>17} {'merged':>6} {'TPOT p50/p99 ms':>17} "
                f"{'out tok/s':>10} {'req/s':>7} {'goodput':>8}  errors"
            )
        for level in document["levels"]:
            self.stdout.write(
                f"  {level['level']:>7g} {level['ok']:>4}/{level['requests']:<4} "
                f"{_figure(level['ttft_ms']):>8}/{_figure(level['ttft_ms'], 'p99'):<8} "
                f"{level['ttft_ms'].get('merged_reads') or 0:>6} "
                f"{_figure(level['tpot_ms']):>8}/{_figure(level['tpot_ms'], 'p99'):<8} "
                f"{level['output_tps'] or 0:>10.1f} {level['request_rate'] or 0:>7.2f} "
                f"{'-' if level['goodput_rps'] is None else format(level['goodput_rps'], '.2f'):>8}  "
                f"{', '.join(f'{name} x{count}' for name, count in level['errors'].items()) or 'none'}"
            )
        if any(level["ttft_ms"].get("merged_reads") or level["itl_ms"].get("merged_reads") for level in document["levels"]):
            self.stdout.write(
                "  merged: requests whose first two token events came in one network read under one kernel stamp, "
                "so their TTFT may be up to one inter-token gap late (per request: --json, request_records)"
            )
        knee = (document["results"] or {}).get("knee") or {}
        if knee.get("level") is not None:
            self.stdout.write(f"  knee: level {knee['level']:g} ({knee.get('reason') or ''})")
        elif knee.get("reason"):
            self.stdout.write(f"  knee: {knee['reason']}")
        if document["kind"] != SweepRun.Kind.SWEEP and document["results"]:
            self.stdout.write("  results: " + json.dumps(
                {k: v for k, v in document["results"].items() if k not in ("points", "samples")}, default=str
            ))
        card = document["card"] or {}
        engine = " ".join(
            str(part) for part in (card.get("engine_reported") or card.get("engine") or "not stated",
                                   card.get("engine_version")) if part
        )
        self.stdout.write(
            f"  card: engine {engine}, model {card.get('served_model') or card.get('model_id')}, "
            f"weights {card.get('weights_format') or 'not stated'}"
        )

