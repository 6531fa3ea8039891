from pathlib import Path

import pytest

ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def fresh_cache():
    """The read cache, API throttle buckets and ETag dates live in Redis (this run's own db index), the read
    cache also in this process's copies: a test that uses this starts and ends with them empty."""
    from core.cache import read_cache_clear

    read_cache_clear()
    yield
    read_cache_clear()


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
