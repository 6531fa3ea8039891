from pathlib import Path

import pytest
import redis
from celery.signals import before_task_publish
from django.conf import settings

ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def fresh_cache():
    """The cache (page cache, throttle counts) is this run's own Redis database, which outlives a test database
    rolled back to its start: every test starts with it empty, and answering."""
    from django.core.cache import cache

    from core.cache import cache_breaker

    cache_breaker.answered()
    cache.clear()


@pytest.fixture
def broker():
    """The Redis database of this test run's broker, emptied before and after the test."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def published(broker):
    """Every task message sent to the broker during the test: (routing key, task name, args, kwargs, headers)."""
    messages = []

    def record(sender=None, body=None, exchange=None, routing_key=None, headers=None, **kwargs):
        args, task_kwargs, _ = body
        messages.append(
            {"routing_key": routing_key, "task": sender, "args": args, "kwargs": task_kwargs, "headers": headers}
        )

    before_task_publish.connect(record, weak=False)
    yield messages
    before_task_publish.disconnect(record)


@pytest.fixture
def artifacts_dir() -> Path:
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    return ARTIFACTS_DIR


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """A real llama-cpp-python server on a tiny GGUF model written for this session; never skipped."""
    from lab.engine.server import EngineSettings, EngineStartError, start_engine, stop_engine
    from lab.engine.tiny_model import MODEL_NAME, write_tiny_model

    workdir = tmp_path_factory.mktemp("llama-server")
    model = write_tiny_model(workdir / "tiny.gguf")
    try:
        engine = start_engine(
            # 2,048 tokens hold a ~1k-token prompt and its answer, and bound what an unlimited answer costs.
            EngineSettings(model_path=model.path, model_alias=MODEL_NAME, context_length=2048),
            log_path=workdir / "server.log",
        )
    except EngineStartError as exc:
        pytest.fail(f"the llama.cpp engine did not start:\n{exc}", pytrace=False)
    try:
        yield engine
    finally:
        stop_engine(engine)
