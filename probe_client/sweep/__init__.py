"""The benchmark lab's client side: workloads as data, throughput sweeps, and the prefill/decode, prefix-cache
and structured-output suites. Plain Python; no Django. Entry points:

- :func:`run_sweep` (``runner.py``; its docstring shows a complete call) with a :class:`SweepPlan` and a
  :class:`Workload` (or one of :data:`PRESETS`);
- :func:`run_prefill_decode`, :func:`run_prefix_cache`, :func:`run_structured_output` (``suites.py``);
- :func:`fetch_server_facts` (``server_facts.py``) for the benchmark card;
- :func:`parse_result_file` (``imports.py``) for result files of vLLM bench serve, GuideLLM and AIPerf.

Every result has a stable ``to_dict()``; :func:`find_knee` and :func:`summarise_level` also serve stored or
imported levels.
"""

from .imports import IMPORT_FORMATS, ParsedResults, ResultFileError, parse_result_file
from .requests import BOOK_SCHEMA, RESPONSE_FORMAT
from .runner import (
    CLIENT_VERSION,
    DEFAULT_LIMITS,
    SweepLimitError,
    SweepLimits,
    SweepPlan,
    SweepResult,
    doubling_levels,
    run_sweep,
)
from .server_facts import fetch_server_facts, model_fingerprint, quantization_from_name
from .stats import SLO, Knee, LevelResult, LinearFit, Sample, cost_per_million, find_knee, linear_fit, summarise_level
from .suites import (
    PrefillDecodeResult,
    PrefixCacheResult,
    StructuredOutputResult,
    SuiteError,
    check_suite_parameters,
    prefill_decode_from,
    run_prefill_decode,
    run_prefix_cache,
    run_structured_output,
    suite_defaults,
)
from .workload import PRESETS, LengthDistribution, RequestShape, Workload, WorkloadError, lengths_from_jsonl, workload_from_jsonl

__all__ = [
    "BOOK_SCHEMA",
    "CLIENT_VERSION",
    "DEFAULT_LIMITS",
    "IMPORT_FORMATS",
    "PRESETS",
    "ParsedResults",
    "RESPONSE_FORMAT",
    "SLO",
    "Knee",
    "LengthDistribution",
    "LevelResult",
    "LinearFit",
    "PrefillDecodeResult",
    "PrefixCacheResult",
    "RequestShape",
    "ResultFileError",
    "Sample",
    "StructuredOutputResult",
    "SuiteError",
    "SweepLimitError",
    "SweepLimits",
    "SweepPlan",
    "SweepResult",
    "Workload",
    "WorkloadError",
    "check_suite_parameters",
    "cost_per_million",
    "doubling_levels",
    "fetch_server_facts",
    "find_knee",
    "lengths_from_jsonl",
    "linear_fit",
    "model_fingerprint",
    "parse_result_file",
    "prefill_decode_from",
    "quantization_from_name",
    "run_prefill_decode",
    "run_prefix_cache",
    "run_structured_output",
    "run_sweep",
    "suite_defaults",
    "summarise_level",
    "workload_from_jsonl",
]
