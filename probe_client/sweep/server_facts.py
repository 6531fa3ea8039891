"""What a server says about itself, for the benchmark card: model id, weights/format, engine and version.

Asked where each engine answers (every request capped in time and size, no redirects, no proxies from the
environment, the key read from the target's variable and sent only to the target):

- ``GET <base>/models`` (every OpenAI-compatible server): the model ids; vLLM adds ``root`` (the weights'
  path or Hugging Face id) and ``max_model_len``.
- ``GET /version`` (vLLM): ``{"version": "0.x.y"}``.
- ``GET /props`` (llama.cpp ``llama-server``): ``model_path`` (the GGUF file, which names the quantization),
  ``build_info``, ``total_slots``, ``default_generation_settings.n_ctx``.
- ``GET /metrics`` (Prometheus text): vLLM's ``vllm:prefix_cache_queries``/``hits`` counters for the prefix-cache
  hit rate, and the engine family from the metric prefix (``vllm:``, ``sglang:``, ``llamacpp:``).

Nothing is guessed: a field the server does not state stays absent. The result feeds the retest rule, which
compares ``engine_version`` and ``model_fingerprint`` between runs of a target.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..config import EndpointConfig

MAX_FACT_BYTES = 256 * 1024
FACT_TIMEOUT_S = 5.0
QUANT_IN_NAME = re.compile(
    r"(?i)(?:^|[-_.])((?:I?Q[2-8](?:_[0-9A-Z]+)*)|F16|BF16|F32|FP8|AWQ|GPTQ|MXFP4|NVFP4|INT[48])(?=$|[-_.])"
)
_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([0-9eE+.\-]+|NaN|[+-]?Inf)\s*$")


def root_url(config: EndpointConfig) -> str:
    """The server's root: the base URL without a trailing ``/v1``."""
    parts = urlsplit(config.base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _client(config: EndpointConfig) -> httpx.AsyncClient:
    headers = {"accept": "application/json", "user-agent": "inference-atlas-probe/1"}
    key = config.api_key()
    if key:
        headers["authorization"] = f"Bearer {key}"
    verify: bool | str = config.ca_bundle or True
    return httpx.AsyncClient(
        timeout=FACT_TIMEOUT_S, follow_redirects=False, trust_env=False, headers=headers, verify=verify
    )


async def _get(client: httpx.AsyncClient, url: str) -> httpx.Response | None:
    try:
        async with client.stream("GET", url) as response:
            if response.status_code != 200:
                return None
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_FACT_BYTES:
                    return None
            response._content = body  # noqa: SLF001 - the body was read under the cap above
            return response
    except (httpx.HTTPError, OSError):
        return None


def _json(response: httpx.Response | None):
    if response is None:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _text(value, limit: int = 300) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value).replace("\x00", "")[:limit]
        return text or None
    return None


def quantization_from_name(name: str | None) -> str | None:
    """The quantization a GGUF file or a model id names (``…-Q4_K_M.gguf`` → ``Q4_K_M``), else None."""
    if not name:
        return None
    stem = name.rsplit("/", 1)[-1]
    stem = stem[:-5] if stem.lower().endswith(".gguf") else stem
    match = QUANT_IN_NAME.search(stem)
    return match.group(1).upper() if match else None


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text → {metric name: value summed over its label sets}."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _METRIC_LINE.match(line.strip())
        if not match:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        totals[match.group(1)] = totals.get(match.group(1), 0.0) + value
    return totals


def prefix_counters_from(metrics: dict[str, float]) -> dict | None:
    """vLLM's prefix-cache counters (tokens queried, tokens hit), under either exposition name."""
    for queries, hits in (
        ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"),
        ("vllm:prefix_cache_queries", "vllm:prefix_cache_hits"),
    ):
        if queries in metrics and hits in metrics:
            return {"queries": metrics[queries], "hits": metrics[hits]}
    return None


async def prefix_cache_counters(config: EndpointConfig) -> dict | None:
    async with _client(config) as client:
        response = await _get(client, root_url(config) + "/metrics")
    if response is None:
        return None
    return prefix_counters_from(parse_metrics(response.text))


async def fetch_server_facts(config: EndpointConfig) -> dict:
    """The card's server-reported fields (see the module docstring); ``sources`` lists the endpoints that
    answered. Never raises for what the server does."""
    facts: dict = {"sources": []}
    root = root_url(config)
    async with _client(config) as client:
        models = _json(await _get(client, config.base_url.rstrip("/") + "/models"))
        if isinstance(models, dict) and isinstance(models.get("data"), list):
            entries = [m for m in models["data"] if isinstance(m, dict)]
            facts["sources"].append("models")
            facts["served_models"] = [_text(m.get("id")) for m in entries[:20] if _text(m.get("id"))]
            entry = next((m for m in entries if m.get("id") == config.model), None)
            if entry is not None:
                facts["model_id"] = _text(entry.get("id"))
                if _text(entry.get("root")):
                    facts["weights"] = _text(entry.get("root"))
                if isinstance(entry.get("max_model_len"), int):
                    facts["context_length"] = entry["max_model_len"]
                if _text(entry.get("owned_by")):
                    facts["owned_by"] = _text(entry.get("owned_by"))
        version = _json(await _get(client, root + "/version"))
        if isinstance(version, dict) and _text(version.get("version")):
            facts["sources"].append("version")
            facts["engine_version"] = _text(version["version"])
        props = _json(await _get(client, root + "/props"))
        if isinstance(props, dict) and ("model_path" in props or "build_info" in props):
            facts["sources"].append("props")
            facts["engine"] = "llama.cpp"
            if _text(props.get("model_path")):
                facts["weights"] = _text(props["model_path"])
            if _text(props.get("build_info")):
                facts["engine_version"] = _text(props["build_info"])
            if isinstance(props.get("total_slots"), int):
                facts["parallel_slots"] = props["total_slots"]
            settings = props.get("default_generation_settings")
            if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
                facts["context_length"] = settings["n_ctx"]
        metrics_response = await _get(client, root + "/metrics")
        if metrics_response is not None:
            names = parse_metrics(metrics_response.text)
            family = next(
                (engine for prefix, engine in (("vllm:", "vLLM"), ("sglang:", "SGLang"), ("llamacpp:", "llama.cpp"))
                 if any(name.startswith(prefix) for name in names)),
                None,
            )
            if family:
                facts["sources"].append("metrics")
                facts.setdefault("engine", family)
    quant = quantization_from_name(facts.get("weights") or facts.get("model_id"))
    if quant:
        facts["weights_format"] = quant
    if str(facts.get("weights", "")).lower().endswith(".gguf"):
        facts["weights_container"] = "GGUF"
    return facts


def model_fingerprint(facts: dict) -> str:
    """What identifies the served model for the retest rule: the weights the server names, else its model id."""
    return str(facts.get("weights") or facts.get("model_id") or "")
