"""The compat suite's registry: each check of the vocabulary declared once, with the parameters it exercises and
what it means."""
import pytest

from probe_client import CHECKS, run_compat_suite
from probe_client.compat import compat_check
from scoring.vocabulary import COMPAT_CHECKS
from tests.probe_client.conftest import config_for, run


def _has_path(body: dict, dotted: str) -> bool:
    value = body
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def test_every_check_of_the_vocabulary_is_registered_in_the_vocabularys_order():
    assert COMPAT_CHECKS == tuple(CHECKS)
    assert [check.name for check in CHECKS.values()] == list(COMPAT_CHECKS)
    assert all(check.parameters and check.request and check.supported_when for check in CHECKS.values())


def test_a_name_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        register = compat_check("logprobs", parameters=("logprobs",), request="again", supported_when="never")
        register(lambda ctx, name: None)

    assert len(CHECKS) == len(COMPAT_CHECKS)


def test_a_name_outside_the_vocabulary_cannot_be_registered():
    with pytest.raises(ValueError, match="vocabulary"):
        compat_check("temperature", parameters=("temperature",), request="t", supported_when="never")

    assert "temperature" not in CHECKS


@pytest.mark.parametrize("name", COMPAT_CHECKS)
def test_each_check_sends_the_parameters_it_declares(simulator_factory, name):
    sim = simulator_factory("openai")

    result = run(run_compat_suite(config_for(sim), checks=[name]))

    assert [check.name for check in result.checks] == [name]
    # The length check always runs first, since every other check sends the length parameter it settles.
    bodies = [request["body"] for request in sim.chat_requests]
    sent = bodies if name == "max_completion_tokens" else bodies[1:]
    assert sent, "the check sent nothing"
    for parameter in CHECKS[name].parameters:
        assert all(_has_path(body, parameter) for body in sent), (parameter, sent)

