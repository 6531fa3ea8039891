"""Probe client for OpenAI-compatible chat endpoints: timed SSE streaming (speed suite) and parameter checks
(compat suite). Plain Python with httpx; it knows nothing of Django. See docs/probes-measurement.md.

    from probe_client import EndpointConfig, run_speed_suite, run_compat_suite
    config = EndpointConfig(base_url="https://api.groq.com/openai/v1", model="openai/gpt-oss-120b",
                            api_key_env="GROQ_API_KEY")
    speed = asyncio.run(run_speed_suite(config, input_tokens=1000, max_tokens=300, requests=1, concurrency=1))
    compat = asyncio.run(run_compat_suite(config))
"""

from .compat import CHECKS, CompatCheck, run_compat_suite
from .config import EndpointConfig
from .errors import ERROR_CLASSES, ProbeError
from .results import CompatCheckResult, CompatResult, RequestResult, SpeedResult
from .speed import run_speed_suite
from .workloads import WORKLOADS

__all__ = [
    "CHECKS",
    "ERROR_CLASSES",
    "CompatCheck",
    "CompatCheckResult",
    "CompatResult",
    "EndpointConfig",
    "ProbeError",
    "RequestResult",
    "SpeedResult",
    "WORKLOADS",
    "run_compat_suite",
    "run_speed_suite",
]
