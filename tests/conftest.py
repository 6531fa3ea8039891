from pathlib import Path

import pytest
import redis
from celery.signals import before_task_publish
from django.conf import settings

ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(autouse=True)
def fresh_cache():
    """The page cache, API throttle buckets and ETag dates live in Redis (this run's own db index), and a test
    database rolled back to its start has the same data generation as the test before: every test starts and
    ends with them empty."""
    from core.cache import page_cache_clear

    page_cache_clear()
    yield
    page_cache_clear()


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
    from probes.engine.server import EngineSettings, EngineStartError, start_engine, stop_engine
    from probes.engine.tiny_model import MODEL_NAME, write_tiny_model

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


@pytest.fixture(autouse=True)
def generation_moves_inside_test_transactions(request, monkeypatch):
    """pytest-django runs a test that is not marked transaction=True inside a transaction it rolls back, never
    commits, so the data generation's after-commit bump would never run there: those tests bump at once, as
    the commit would. Tests of the commit itself (tests/core/test_cache.py) are marked transaction=True."""
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server", "django_db_serialized_rollback")
    )
    if not transactional:
        import core.cache

        monkeypatch.setattr(core.cache, "generation_bump_on_commit", core.cache.generation_bump)
