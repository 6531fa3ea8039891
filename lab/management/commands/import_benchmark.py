"""Import a peer tool's result file into the benchmark lab, as the staff API and the admin do.

    manage.py import_benchmark FILE [--source-tool vllm-bench-serve|sglang-bench-serving|guidellm|aiperf]
                               [--target SLUG] [--tool SLUG] [--hardware SLUG] [--hardware-count N]
                               [--hourly-price-usd X] [--flags TEXT] [--json]

FILE is what the tool wrote (vLLM bench serve JSON or JSONL, GuideLLM benchmarks.json, AIPerf's export) or the
result block vLLM bench serve, benchmark_serving.py or SGLang bench_serving printed; ``-`` reads stdin. A file
that is not valid exits 2 with the API's message (``file line 3: not valid JSON``) and stores nothing.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import HardwareSpec, Tool
from core.exceptions import ApplicationError
from lab.models import SOURCE_TOOL_LABELS
from lab.services.imports import sweep_import_file
from probe_client.sweep import IMPORT_FORMATS
from probe_client.sweep.imports import MAX_RESULT_BYTES
from probes.models import ProbeTarget

EXIT_BAD_INPUT = 2


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=EXIT_BAD_INPUT)


def _by_slug(model, slug: str | None, flag: str, what: str):
    if not slug:
        return None
    found = model.objects.filter(slug=slug).first()
    if found is None:
        raise _bad(f'{flag}: No {what} with the slug "{slug}".')
    return found


class Command(BaseCommand):
    help = "Import a peer tool's benchmark result file (or printed result block) as a lab run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The result file as the tool wrote it, or - for stdin.")
        parser.add_argument(
            "--source-tool", choices=IMPORT_FORMATS, help="Which tool wrote it (recognised from the file when absent)."
        )
        parser.add_argument("--target", help="Slug of the probe target that was measured.")
        parser.add_argument("--tool", help="Slug of the engine that was measured (the target's when given).")
        parser.add_argument("--hardware", help="Slug of the hardware in the catalog.")
        parser.add_argument("--hardware-count", type=int, default=1, help="How many of it served the model (1).")
        parser.add_argument("--hourly-price-usd", help="What that hardware costs per hour (cost per 1M tokens).")
        parser.add_argument("--flags", default="", help="The engine's flags, for the card.")
        parser.add_argument("--json", action="store_true", help="Print the stored run as one JSON document.")

    def handle(self, *args: Any, **options: Any) -> None:
        data = self._read(options["file"])
        try:
            run = sweep_import_file(
                data=data,
                source_tool=options["source_tool"],
                target=_by_slug(ProbeTarget, options["target"], "--target", "probe target"),
                tool=_by_slug(Tool, options["tool"], "--tool", "tool"),
                hardware=_by_slug(HardwareSpec, options["hardware"], "--hardware", "hardware"),
                hardware_count=options["hardware_count"],
                hourly_price_usd=options["hourly_price_usd"],
                flags=options["flags"],
            )
        except ApplicationError as error:
            raise _bad(error.message) from None
        levels = list(run.levels.order_by("level"))
        if options["json"]:
            self.stdout.write(json.dumps({
                "run": run.pk, "page": f"/engines/lab/{run.pk}/", "source_tool": run.source_tool,
                "levels": [level.level for level in levels], "mode": levels[0].mode if levels else None,
                "results": run.results, "card": run.card,
            }, default=str))
            return
        label = SOURCE_TOOL_LABELS.get(run.source_tool, run.source_tool)
        mode = "streams" if levels and levels[0].mode == "concurrency" else "requests/s"
        self.stdout.write(
            f"Imported {label} results as run {run.pk} (/engines/lab/{run.pk}/): {len(levels)} level(s) at "
            f"{', '.join(f'{level.level:g}' for level in levels)} {mode}"
        )
        skipped = (run.card or {}).get("skipped_benchmarks")
        if skipped:
            self.stdout.write(f"Left out: {', '.join(skipped)}")
        for refused in (run.card or {}).get("refused_figures", []):
            self.stdout.write(f"Warning: refused {refused['field']} = {refused['value']!r}: {refused['reason']}")

    def _read(self, name: str) -> bytes:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_RESULT_BYTES + 1)
        else:
            path = Path(name)
            try:
                if path.stat().st_size > MAX_RESULT_BYTES:
                    raise _bad(f"file: larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB.")
                data = path.read_bytes()
            except OSError as exc:
                raise _bad(f"file: cannot read {name}: {exc.strerror or exc}") from None
        if len(data) > MAX_RESULT_BYTES:
            raise _bad(f"file: larger than {MAX_RESULT_BYTES // (1024 * 1024)} MiB.")
        return data
