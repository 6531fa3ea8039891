"""Workloads as data: what a sweep sends, described so that it can be stored, shown and re-run.

A workload is an input-length distribution, an output-length distribution, a shared-prefix ratio, structured
output on or off, and streaming on or off. Lengths are tokens. A distribution is one of:

- ``fixed``: ``{"kind": "fixed", "value": 1000}``
- ``uniform``: ``{"kind": "uniform", "low": 500, "high": 1500}`` (inclusive integers)
- ``normal``: ``{"kind": "normal", "mean": 1000, "stddev": 200, "min": 1, "max": 4000}`` (clipped to [min, max])
- ``sample``: ``{"kind": "sample", "values": [812, 95, ...]}``, lengths drawn with replacement from real traffic,
  usually read from the operator's JSONL file by :func:`lengths_from_jsonl`.

Every problem raises :class:`WorkloadError`, whose message starts with the name of the offending field (or the
line of the JSONL file), so that an API can answer 400 with it as it is.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from ..jsonlimits import JSONLimitError, loads_bounded

DISTRIBUTION_KINDS = ("fixed", "uniform", "normal", "sample")
MAX_TOKENS_PER_LENGTH = 1_000_000
MAX_SAMPLE_VALUES = 100_000
MAX_JSONL_BYTES = 16 * 1024 * 1024
INPUT_LENGTH_KEYS = ("input_tokens", "prompt_tokens", "input_length")
OUTPUT_LENGTH_KEYS = ("output_tokens", "completion_tokens", "output_length")


class WorkloadError(ValueError):
    """A workload or a workload file that cannot be used; the message names the field or the line."""


def _length(value, where: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise WorkloadError(f"{where}: must be a whole number of tokens, got {value!r}")
    if not minimum <= value <= MAX_TOKENS_PER_LENGTH:
        raise WorkloadError(f"{where}: must be between {minimum} and {MAX_TOKENS_PER_LENGTH}, got {value}")
    return value


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise WorkloadError(f"{where}: must be a number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class LengthDistribution:
    kind: str
    value: int | None = None
    low: int | None = None
    high: int | None = None
    mean: float | None = None
    stddev: float | None = None
    min: int = 1
    max: int = MAX_TOKENS_PER_LENGTH
    values: tuple[int, ...] = ()

    @classmethod
    def fixed(cls, value: int) -> LengthDistribution:
        return cls.from_dict({"kind": "fixed", "value": value})

    @classmethod
    def from_dict(cls, data, where: str = "length") -> LengthDistribution:
        if isinstance(data, int) and not isinstance(data, bool):
            data = {"kind": "fixed", "value": data}
        if not isinstance(data, dict):
            raise WorkloadError(f"{where}: must be an object such as {{\"kind\": \"fixed\", \"value\": 1000}}")
        kind = data.get("kind")
        if kind not in DISTRIBUTION_KINDS:
            raise WorkloadError(f"{where}.kind: must be one of {', '.join(DISTRIBUTION_KINDS)}, got {kind!r}")
        allowed = {
            "fixed": {"kind", "value"},
            "uniform": {"kind", "low", "high"},
            "normal": {"kind", "mean", "stddev", "min", "max"},
            "sample": {"kind", "values"},
        }[kind]
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise WorkloadError(f"{where}.{unknown[0]}: not a field of a {kind} distribution")
        if kind == "fixed":
            return cls(kind=kind, value=_length(data.get("value"), f"{where}.value"))
        if kind == "uniform":
            low = _length(data.get("low"), f"{where}.low")
            high = _length(data.get("high"), f"{where}.high")
            if high < low:
                raise WorkloadError(f"{where}.high: must not be below low ({low}), got {high}")
            return cls(kind=kind, low=low, high=high)
        if kind == "normal":
            mean = _number(data.get("mean"), f"{where}.mean")
            stddev = _number(data.get("stddev"), f"{where}.stddev")
            if stddev < 0:
                raise WorkloadError(f"{where}.stddev: must not be negative, got {stddev}")
            low = _length(data.get("min", 1), f"{where}.min")
            high = _length(data.get("max", MAX_TOKENS_PER_LENGTH), f"{where}.max")
            if high < low:
                raise WorkloadError(f"{where}.max: must not be below min ({low}), got {high}")
            if not low <= mean <= high:
                raise WorkloadError(f"{where}.mean: must lie between min ({low}) and max ({high}), got {mean}")
            return cls(kind=kind, mean=mean, stddev=stddev, min=low, max=high)
        values = data.get("values")
        if not isinstance(values, (list, tuple)) or not values:
            raise WorkloadError(f"{where}.values: must be a non-empty list of token counts")
        if len(values) > MAX_SAMPLE_VALUES:
            raise WorkloadError(f"{where}.values: at most {MAX_SAMPLE_VALUES} lengths, got {len(values)}")
        return cls(kind=kind, values=tuple(_length(v, f"{where}.values[{i}]") for i, v in enumerate(values)))

    def to_dict(self) -> dict:
        if self.kind == "fixed":
            return {"kind": "fixed", "value": self.value}
        if self.kind == "uniform":
            return {"kind": "uniform", "low": self.low, "high": self.high}
        if self.kind == "normal":
            return {"kind": "normal", "mean": self.mean, "stddev": self.stddev, "min": self.min, "max": self.max}
        return {"kind": "sample", "values": list(self.values)}

    def draw(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return self.value
        if self.kind == "uniform":
            return rng.randint(self.low, self.high)
        if self.kind == "normal":
            return int(min(self.max, max(self.min, round(rng.gauss(self.mean, self.stddev)))))
        return rng.choice(self.values)

    @property
    def largest(self) -> int:
        return {"fixed": self.value, "uniform": self.high, "normal": self.max}.get(self.kind) or max(self.values)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.value}"
        if self.kind == "uniform":
            return f"{self.low}–{self.high} (uniform)"
        if self.kind == "normal":
            return f"{self.mean:g} ± {self.stddev:g} (normal, {self.min}–{self.max})"
        return f"{len(self.values)} sampled lengths, median {sorted(self.values)[len(self.values) // 2]}"


@dataclass(frozen=True)
class RequestShape:
    """One request of a workload: prompt tokens in total, of which ``prefix_tokens`` are shared by every
    request of the run, and the output tokens asked for."""

    input_tokens: int
    output_tokens: int
    prefix_tokens: int = 0


@dataclass(frozen=True)
class Workload:
    name: str
    input: LengthDistribution
    output: LengthDistribution
    shared_prefix_ratio: float = 0.0
    structured_output: bool = False
    streaming: bool = True
    seed: int = 0
    basis: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip() or len(self.name) > 80:
            raise WorkloadError("name: must be a non-empty text of at most 80 characters")
        ratio = self.shared_prefix_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.0 <= ratio < 1.0:
            raise WorkloadError(f"shared_prefix_ratio: must be a number from 0 up to (not including) 1, got {ratio!r}")
        for name in ("structured_output", "streaming"):
            if not isinstance(getattr(self, name), bool):
                raise WorkloadError(f"{name}: must be true or false")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise WorkloadError("seed: must be an integer")

    @classmethod
    def from_dict(cls, data) -> Workload:
        """Build from a JSON object (the API's and the stored form); errors name the field."""
        if not isinstance(data, dict):
            raise WorkloadError("workload: must be an object")
        known = {"name", "input", "output", "shared_prefix_ratio", "structured_output", "streaming", "seed", "basis"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkloadError(f"{unknown[0]}: not a workload field (known: {', '.join(sorted(known))})")
        for required in ("input", "output"):
            if required not in data:
                raise WorkloadError(f"{required}: required (a length distribution)")
        return cls(
            name=data.get("name", "custom"),
            input=LengthDistribution.from_dict(data["input"], "input"),
            output=LengthDistribution.from_dict(data["output"], "output"),
            shared_prefix_ratio=data.get("shared_prefix_ratio", 0.0),
            structured_output=data.get("structured_output", False),
            streaming=data.get("streaming", True),
            seed=data.get("seed", 0),
            basis=str(data.get("basis", ""))[:300],
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "input": self.input.to_dict(),
            "output": self.output.to_dict(),
            "shared_prefix_ratio": self.shared_prefix_ratio,
            "structured_output": self.structured_output,
            "streaming": self.streaming,
            "seed": self.seed,
            "basis": self.basis,
        }

    def describe(self) -> str:
        parts = [f"in {self.input.describe()}", f"out {self.output.describe()}"]
        if self.shared_prefix_ratio:
            parts.append(f"{self.shared_prefix_ratio:.0%} shared prefix")
        if self.structured_output:
            parts.append("JSON schema output")
        if not self.streaming:
            parts.append("not streamed")
        return ", ".join(parts)

    def shapes(self, count: int, *, stream_seed: int = 0) -> list[RequestShape]:
        """``count`` request shapes, the same for the same seed (so a resumed level sends what it would have)."""
        rng = random.Random(f"{self.seed}:{stream_seed}")
        shapes = []
        for _ in range(count):
            input_tokens = self.input.draw(rng)
            shapes.append(
                RequestShape(
                    input_tokens=input_tokens,
                    output_tokens=self.output.draw(rng),
                    prefix_tokens=int(input_tokens * self.shared_prefix_ratio),
                )
            )
        return shapes


def lengths_from_jsonl(text: str | bytes, *, source: str = "file") -> tuple[list[int], list[int]]:
    """Input and output lengths from a JSONL file of real requests, one JSON object per line with
    ``input_tokens`` (or ``prompt_tokens``/``input_length``) and ``output_tokens`` (or ``completion_tokens``/
    ``output_length``). Blank lines are skipped. Errors name the line and the field."""
    if isinstance(text, bytes):
        if len(text) > MAX_JSONL_BYTES:
            raise WorkloadError(f"{source}: larger than {MAX_JSONL_BYTES // (1024 * 1024)} MiB")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            raise WorkloadError(f"{source}: not UTF-8 text (byte {error.start})") from None
    inputs: list[int] = []
    outputs: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source} line {number}"
        try:
            record = loads_bounded(line)
        except JSONLimitError as error:
            raise WorkloadError(f"{where}: {error}") from None
        except json.JSONDecodeError as error:
            raise WorkloadError(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise WorkloadError(f"{where}: must be a JSON object, got {type(record).__name__}")
        for lengths, keys in ((inputs, INPUT_LENGTH_KEYS), (outputs, OUTPUT_LENGTH_KEYS)):
            key, value = _pick(record, keys, where)
            lengths.append(_length(value, f"{where}: {key}"))
        if len(inputs) > MAX_SAMPLE_VALUES:
            raise WorkloadError(f"{source}: more than {MAX_SAMPLE_VALUES} lines")
    if not inputs:
        raise WorkloadError(f"{source}: no records (expected one JSON object per line)")
    return inputs, outputs


def _pick(record: dict, keys: tuple[str, ...], where: str) -> tuple[str, object]:
    """The first of ``keys`` that ``record`` holds, and its value."""
    for key in keys:
        if key in record:
            return key, record[key]
    raise WorkloadError(f"{where}: missing field {keys[0]} (or {', '.join(keys[1:])})")


def workload_from_jsonl(text: str | bytes, *, name: str = "sampled traffic", **options) -> Workload:
    """A workload drawing (input, output) lengths from the operator's file (each drawn independently)."""
    inputs, outputs = lengths_from_jsonl(text)
    return Workload(
        name=name,
        input=LengthDistribution(kind="sample", values=tuple(inputs)),
        output=LengthDistribution(kind="sample", values=tuple(outputs)),
        **options,
    )


_SHAPE_NOTE = "Lengths are this preset's choice, not measured traffic: replace them with your own distribution."

PRESETS: dict[str, Workload] = {
    "chat": Workload(
        name="chat",
        input=LengthDistribution(kind="normal", mean=1000, stddev=300, min=50, max=4000),
        output=LengthDistribution(kind="normal", mean=1000, stddev=300, min=50, max=2000),
        basis="Centred on ~1k in / ~1k out, the default workload of Artificial Analysis' provider benchmark. " + _SHAPE_NOTE,
    ),
    "rag-8k": Workload(
        name="rag-8k",
        input=LengthDistribution(kind="fixed", value=8000),
        output=LengthDistribution(kind="uniform", low=100, high=400),
        shared_prefix_ratio=0.0,
        basis="RAG: 8K retrieved tokens in, a short answer out; prefill dominates (the engine guide, Ahmad Osman). " + _SHAPE_NOTE,
    ),
    "coding-agent": Workload(
        name="coding-agent",
        input=LengthDistribution(kind="uniform", low=20000, high=80000),
        output=LengthDistribution(kind="uniform", low=200, high=1500),
        shared_prefix_ratio=0.5,
        basis="Coding agent with up to 80K of context, a repeated system prompt and repository context "
        "(the engine guide by Ahmad Osman names an 80K-context coding agent). " + _SHAPE_NOTE,
    ),
    "summarisation": Workload(
        name="summarisation",
        input=LengthDistribution(kind="uniform", low=4000, high=12000),
        output=LengthDistribution(kind="uniform", low=200, high=600),
        basis="Long document in, short summary out: prefill dominates (the engine guide, Ahmad Osman). " + _SHAPE_NOTE,
    ),
}
