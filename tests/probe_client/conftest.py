import asyncio

import pytest

from probe_client import EndpointConfig
from tests.simulator import start_simulator


@pytest.fixture(scope="module")
def simulator_factory():
    """Start simulators lazily, one per (profile, options), shared by a module and stopped at its end."""
    started = {}

    def get(profile: str = "openai", **options):
        key = (profile, repr(sorted(options.items())))
        if key not in started:
            started[key] = start_simulator(profile, **options)
        handle = started[key]
        handle.reset()
        return handle

    yield get
    for handle in started.values():
        handle.stop()


def config_for(sim, **overrides) -> EndpointConfig:
    values = {"base_url": sim.base_url, "model": sim.model, "read_timeout_s": 5.0, "request_deadline_s": 20.0}
    values.update(overrides)
    return EndpointConfig(**values)


def run(coroutine):
    return asyncio.run(coroutine)
