"""Start a real llama.cpp engine on a tiny model this project writes, register it as a probe target and probe it.

    manage.py engine_demo [--once] [--model-dir var/engine] [--context 12288] [--threads 1]
                          [--workloads in-100] [--parallel 0] [--requests 3] [--no-compat] [--sweep-requests 4]

1. writes a tiny llama-architecture GGUF model (random weights, Q8_0) into --model-dir;
2. starts `python -m llama_cpp.server` on it, on a free port of 127.0.0.1;
3. creates or updates the probe target `llama-cpp-tiny-local` (tool llama.cpp, no API key, this machine's
   CPU, the model's quantization, the llama-cpp-python version) and enables it. It is not the fixture's
   `llama-cpp-local` template: `load_catalog` refreshes a fixture target's name and notes, which would
   drop the warning that this model's weights are random, and a real llama-server registered there
   later would share its history with the tiny model;
4. runs the speed suite (each workload single-stream, then optionally a parallel test) and the compat suite,
   stores the runs and refreshes the summaries, so /engines/ shows real measurements without any key;
5. runs a short throughput sweep (1, 2 and 4 streams, --sweep-requests requests each) through the lab's own
   run code and stores it as a lab run, so /engines/lab/ shows a real run, curve and card (--sweep-requests 0
   skips it);
6. keeps the engine running for the scheduled probes of `make run` until Ctrl-C (or exits at once
   with --once). When the engine stops, the target is disabled: its measurements stay, and the
   scheduler does not record a deliberately stopped engine as failing.
"""
from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

import probe_client
from catalog.models import Tool
from core.exceptions import ApplicationError
from lab.services.run import sweep_run_create, sweep_run_execute
from lab.engine.machine import machine_hardware_description
from lab.engine.server import (
    EngineSettings,
    EngineStartError,
    RunningEngine,
    engine_version,
    start_engine,
    stop_engine,
)
from lab.engine.tiny_model import MODEL_NAME, TinyModel, write_tiny_model
from probes.models import CompatOutcome, ProbeRun, ProbeTarget
from probes.selectors.runs import probe_target_get
from probes.services.runs.execute import probe_target_run_now
from probes.services.targets import probe_target_create, probe_target_update
from scoring.vocabulary import E2E, OUTPUT_SPEED, TTFT

TARGET_SLUG = "llama-cpp-tiny-local"
TOOL_SLUGS = ("llama-cpp", "llamacpp")
DEFAULT_MODEL_DIR = Path("var") / "engine"
DEFAULT_WORKLOADS = ("in-100",)
# Room for the largest scheduled workload (about 10,000 prompt tokens and 1,500 output tokens).
DEFAULT_CONTEXT = 12288
# The figures printed for each speed run.
REPORTED_METRICS = (TTFT, OUTPUT_SPEED, E2E)
# The demo sweep: few levels and short requests, because the tiny model runs on the CPU next to everything else.
SWEEP_LEVELS = [1, 2, 4]
SWEEP_WORKLOAD = {"name": "demo: 100 in / 16 out", "input": 100, "output": 16}
DEFAULT_SWEEP_REQUESTS = 4


class _Stop(Exception):
    """SIGTERM, handled like Ctrl-C so the engine is stopped and the target disabled."""


def _raise_stop(signum: int, frame: Any) -> None:
    raise _Stop


class Command(BaseCommand):
    help = "Start a local llama.cpp engine on a tiny generated model, register it as a probe target and probe it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="Stop the engine and exit after probing.")
        parser.add_argument(
            "--model-dir", type=Path, default=None,
            help=f"Where the model and the server log go (default: {DEFAULT_MODEL_DIR} under the project).",
        )
        parser.add_argument("--slug", default=TARGET_SLUG, help=f"Probe target to create or update ({TARGET_SLUG}).")
        parser.add_argument(
            "--context", type=int, default=DEFAULT_CONTEXT,
            help=f"Context window in tokens ({DEFAULT_CONTEXT}, enough for the in-10k workload).",
        )
        parser.add_argument("--threads", type=int, default=1, help="CPU threads for the engine (1).")
        parser.add_argument(
            "--workloads", default=",".join(DEFAULT_WORKLOADS),
            help=f"Comma-separated speed workloads probed single-stream ({','.join(DEFAULT_WORKLOADS)}).",
        )
        parser.add_argument(
            "--parallel", type=int, default=0,
            help="Also run a parallel test with this many concurrent requests on the last workload (0: skip; "
            "the daily schedule runs one anyway).",
        )
        parser.add_argument("--requests", type=int, default=None, help="Requests per single-stream speed run.")
        parser.add_argument("--no-compat", action="store_true", help="Skip the compatibility suite.")
        parser.add_argument(
            "--sweep-requests", type=int, default=DEFAULT_SWEEP_REQUESTS,
            help=f"Requests per level of the saved lab sweep at 1, 2 and 4 streams ({DEFAULT_SWEEP_REQUESTS}; "
            "0 skips it).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workloads = [name.strip() for name in options["workloads"].split(",") if name.strip()]
        parallel = options["parallel"]
        unknown = [name for name in workloads if name not in probe_client.WORKLOADS]
        if not workloads or unknown:
            raise CommandError(
                f"--workloads: unknown {', '.join(unknown) or '(none given)'}; "
                f"known: {', '.join(probe_client.WORKLOADS)}."
            )
        for option in ("context", "threads", "requests"):
            if options[option] is not None and options[option] < 1:
                raise CommandError(f"--{option}: must be a positive whole number, got {options[option]}.")
        if parallel < 0:
            raise CommandError(f"--parallel: must be 0 or more, got {parallel}.")
        if options["sweep_requests"] < 0:
            raise CommandError(f"--sweep-requests: must be 0 or more, got {options['sweep_requests']}.")
        tool = Tool.objects.filter(slug__in=TOOL_SLUGS).order_by("slug").first()
        if tool is None:
            raise CommandError(
                "The catalog has no llama.cpp tool (slug 'llama-cpp'); load it first: python manage.py load_catalog"
            )

        model_dir = options["model_dir"] or Path(settings.BASE_DIR) / DEFAULT_MODEL_DIR
        model = write_tiny_model(model_dir / f"{MODEL_NAME}.Q8_0.gguf")
        self.stdout.write(
            f"Model: {model.path} ({model.parameters:,} parameters, {model.quantization}, "
            f"vocabulary {model.vocab_size}, random weights: the text is gibberish, the timings are real)"
        )
        engine_settings = EngineSettings(
            model_path=model.path,
            model_alias=MODEL_NAME,
            context_length=options["context"],
            threads=options["threads"],
            batch_threads=options["threads"],
        )
        previous_sigterm = signal.signal(signal.SIGTERM, _raise_stop)
        engine: RunningEngine | None = None
        target: ProbeTarget | None = None
        try:
            try:
                engine = start_engine(engine_settings, log_path=model_dir / "llama-server.log")
            except EngineStartError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"Engine: {engine_version()} at {engine.base_url} (log: {engine.log_path})")
            target = self._register(slug=options["slug"], tool=tool, engine=engine, model=model)
            self.stdout.write(f"Target: {target.slug} ({target.hardware}), enabled")
            runs = self._probe(
                target=target,
                workloads=workloads,
                parallel=parallel,
                requests=options["requests"],
                compat=not options["no_compat"],
            )
            self._report(runs)
            if options["sweep_requests"]:
                self._sweep(target=target, requests_per_level=options["sweep_requests"])
            if options["once"]:
                return
            self.stdout.write(
                "The engine keeps running for the scheduled probes of `make run`; press Ctrl-C to stop it."
            )
            while engine.process.poll() is None:
                time.sleep(1.0)
            raise CommandError(
                f"The engine exited with code {engine.process.returncode}.\n{engine.log_tail()}"
            )
        except (KeyboardInterrupt, _Stop):
            self.stdout.write("Stopping the engine.")
        finally:
            signal.signal(signal.SIGTERM, previous_sigterm)
            if engine is not None:
                stop_engine(engine)
            if target is not None:
                probe_target_update(actor=None, target=target, data={"enabled": False})
                self.stdout.write(f"Target {target.slug} disabled (engine stopped); its measurements remain.")

    def _register(self, *, slug: str, tool: Tool, engine: RunningEngine, model: TinyModel) -> ProbeTarget:
        fields = {
            "name": "llama.cpp (llama-cpp-python) · tiny random-weight model on this machine",
            "tool": tool,
            "base_url": engine.base_url,
            "model_id": engine.model,
            "api_key_env": "",
            "hardware": machine_hardware_description(),
            "quantization": f"{model.quantization} (GGUF)",
            "engine_version": engine_version(),
            "notes": (
                f"Started by `make engine` (manage.py engine_demo): {model.parameters:,}-parameter llama model with "
                f"random weights written by the project, served by llama-cpp-python with a "
                f"{engine.context_length}-token context. Its text is gibberish; its timings are real "
                "measurements of this engine on this CPU, not of any production model."
            ),
            "enabled": True,
        }
        try:
            target = probe_target_get(slug=slug)
        except ProbeTarget.DoesNotExist:
            target = None
        try:
            if target is None:
                return probe_target_create(actor=None, slug=slug, **fields)
            return probe_target_update(actor=None, target=target, data=fields)
        except ValidationError as exc:
            raise CommandError(f"The probe target {slug!r} could not be saved: {exc.message_dict}") from None

    def _probe(
        self, *, target: ProbeTarget, workloads: list[str], parallel: int, requests: int | None, compat: bool
    ) -> list[ProbeRun]:
        plans: list[dict[str, Any]] = [{"suites": ("speed",), "workloads": workloads, "requests": requests}]
        if parallel:
            plans.append(
                {"suites": ("speed",), "workloads": workloads[-1:], "concurrency": parallel, "requests": parallel}
            )
        if compat:
            plans.append({"suites": ("compat",)})
        runs: list[ProbeRun] = []
        for plan in plans:
            self.stdout.write(f"Probing: {_describe_plan(plan)} ...")
            try:
                runs += probe_target_run_now(target=target, **plan)
            except ApplicationError as exc:
                raise CommandError(exc.message) from None
        return runs

    def _report(self, runs: list[ProbeRun]) -> None:
        self.stdout.write("")
        for run in runs:
            status = run.status + (f" ({run.error_class}: {run.error_message[:200]})" if run.error_class else "")
            if run.suite == ProbeRun.Suite.SPEED:
                summary = run.summary or {}
                figures = "  ".join(
                    f"{metric.short_label} p50 {_figure(summary.get(metric.key))} {metric.unit}"
                    for metric in REPORTED_METRICS
                )
                self.stdout.write(
                    f"speed {run.workload} x{run.concurrency}: {summary.get('succeeded', 0)}/"
                    f"{summary.get('requests', 0)} ok, {figures} -> {status}"
                )
            else:
                outcomes = CompatOutcome.objects.filter(run=run).order_by("check_name")
                self.stdout.write(f"compat: {status}")
                for outcome in outcomes:
                    self.stdout.write(f"  {outcome.check_name:24} {outcome.outcome}")
        self.stdout.write("\nSee /engines/ for the figures and the compatibility matrix.")


    def _sweep(self, *, target: ProbeTarget, requests_per_level: int) -> None:
        self.stdout.write(f"Lab sweep: {', '.join(map(str, SWEEP_LEVELS))} streams x {requests_per_level} requests ...")
        run = sweep_run_create(
            target=target, workload=SWEEP_WORKLOAD,
            plan={"levels": SWEEP_LEVELS, "requests_per_level": requests_per_level},
        )
        # Ctrl-C or SIGTERM during the sweep ends it as an operator's stop would (finished levels kept, the run
        # "stopped"), and only then stops the engine; raised from inside the measurement it would leave it running.
        interrupted = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: interrupted.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            sweep_run_execute(run_id=run.pk, worker="engine_demo", should_stop=interrupted.is_set)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if interrupted.is_set():
            raise KeyboardInterrupt
        run.refresh_from_db()
        for level in run.levels.order_by("level"):
            self.stdout.write(
                f"  {level.level:g} streams: {level.ok}/{level.requests} ok, TTFT p50 {_figure(level.ttft_ms)} ms, "
                f"output {level.output_tps or 0:.1f} tok/s"
            )
        error = f" ({run.error_class}: {run.error_message[:200]})" if run.error_class else ""
        self.stdout.write(f"Lab sweep -> {run.status}{error}; see /engines/lab/{run.pk}/")


def _figure(figures: Any) -> str:
    value = figures.get("p50") if isinstance(figures, dict) else None
    return "-" if value is None else f"{value:.1f}"


def _describe_plan(plan: dict[str, Any]) -> str:
    if plan["suites"] == ("compat",):
        return "compatibility suite"
    return f"speed {', '.join(plan['workloads'])} x{plan.get('concurrency', 1)}"
