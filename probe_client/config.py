"""What the probe client needs to know about one OpenAI-compatible endpoint.

The API key itself is never held here: only the name of the environment variable that holds it. The value is
read from ``os.environ`` at the moment a request is built and lives only inside that request's headers.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

API_KEY_ENV_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*$")
API_KEY_ENV_SUFFIXES = ("_API_KEY", "_TOKEN")
# Whoever may edit a target must not be able to make the worker send one of its own secrets as a Bearer token
# to a base URL of their choosing: names of the site's, the broker's, the database's and the cloud's variables.
API_KEY_ENV_FORBIDDEN_PREFIXES = ("DJANGO_", "CELERY_", "DATABASE", "REDIS", "AWS_", "POSTGRES")
API_KEY_ENV_RULE = (
    "must be the NAME of an environment variable (not the key): it must match ^[A-Z][A-Z0-9_]*$, "
    "end with _API_KEY or _TOKEN, and not start with DJANGO_, CELERY_, DATABASE, REDIS, AWS_ or POSTGRES"
)


def api_key_env_error(name: str, *, field_name: str = "api_key_env") -> str | None:
    """Why ``name`` may not name the variable a key is read from (a message naming the field and the rule),
    or None when it may. The one rule shared by the model, the API, the CLI and the client."""
    if (
        not isinstance(name, str)
        or not API_KEY_ENV_PATTERN.fullmatch(name)
        or not name.endswith(API_KEY_ENV_SUFFIXES)
        or name.startswith(API_KEY_ENV_FORBIDDEN_PREFIXES)
    ):
        return f"{field_name}: {API_KEY_ENV_RULE}."
    return None


# Headers a caller may not override through ``extra_headers``: they carry the secret or shape the measurement.
RESERVED_HEADERS = frozenset({"authorization", "accept-encoding", "content-length", "host", "transfer-encoding"})


@dataclass(frozen=True)
class EndpointConfig:
    """One probe target as the client sees it. Times in seconds, sizes in bytes.

    - ``connect_timeout_s``: TCP (and TLS) connection setup.
    - ``read_timeout_s``: longest silence allowed between two network reads (before or after the headers).
    - ``request_deadline_s``: total wall time for one request, headers and whole stream included; httpx has no
      such limit of its own, so a server that trickles bytes would otherwise hold the probe forever.
    - ``max_response_bytes``: cap on the bytes of one response body.
    """

    base_url: str
    model: str
    api_key_env: str | None = None
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 60.0
    request_deadline_s: float = 300.0
    max_response_bytes: int = 16 * 1024 * 1024
    extra_headers: dict | None = field(default=None, hash=False, repr=False)
    max_retry_after_s: float = 30.0
    rate_limit_retries: int = 2
    ca_bundle: str | None = None  # a PEM file of extra trusted CAs, for self-hosted engines behind a private CA

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("base_url: must be an absolute http(s) URL, e.g. https://api.example.com/v1")
        if parts.username or parts.password:
            raise ValueError("base_url: must not contain credentials; name an environment variable in api_key_env")
        if parts.query or parts.fragment:
            raise ValueError("base_url: must not contain a query string or fragment")
        if not self.model:
            raise ValueError("model: must not be empty")
        if self.api_key_env is not None:
            problem = api_key_env_error(self.api_key_env)
            if problem:
                raise ValueError(problem)
        for name in ("connect_timeout_s", "read_timeout_s", "request_deadline_s", "max_retry_after_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: must be greater than zero")
        if self.max_response_bytes < 1024:
            raise ValueError("max_response_bytes: must be at least 1024")
        if self.rate_limit_retries < 0:
            raise ValueError("rate_limit_retries: must not be negative")
        for header in self.extra_headers or {}:
            if header.lower() in RESERVED_HEADERS:
                raise ValueError(f"extra_headers: {header!r} is set by the probe client and cannot be overridden")

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def api_key(self) -> str | None:
        """The key, read now from the environment; None when no variable is named or it is unset/empty."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def key_missing(self) -> bool:
        return bool(self.api_key_env) and self.api_key() is None

    def describe(self) -> dict:
        """A JSON-safe description without any secret (the variable name is not a secret)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "connect_timeout_s": self.connect_timeout_s,
            "read_timeout_s": self.read_timeout_s,
            "request_deadline_s": self.request_deadline_s,
            "max_response_bytes": self.max_response_bytes,
            "extra_headers": sorted((self.extra_headers or {}).keys()),
        }


CLI_FLAGS = {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env"}


def config_from_flags(*, base_url: str | None, model: str | None, api_key_env: str | None) -> EndpointConfig:
    """The endpoint a command line names with --base-url, --model and --api-key-env, by the rules a stored
    target follows. Raises ValueError whose message starts with the flag at fault; the key's value is only
    checked for presence, never read into a message."""
    missing = [CLI_FLAGS[name] for name, value in (("base_url", base_url), ("model", model)) if not value]
    if missing:
        raise ValueError(f"{' and '.join(missing)}: required unless --target is given.")
    if api_key_env is not None:
        problem = api_key_env_error(api_key_env, field_name=CLI_FLAGS["api_key_env"])
        if problem:
            raise ValueError(problem)
    try:
        config = EndpointConfig(base_url=base_url, model=model, api_key_env=api_key_env or None)
    except ValueError as exc:
        field_name, _, reason = str(exc).partition(":")
        raise ValueError(f"{CLI_FLAGS.get(field_name.strip(), field_name)}:{reason}") from None
    if config.key_missing():
        raise ValueError(f"--api-key-env: the environment variable {api_key_env} is not set.")
    return config
