"""Schemathesis drives every operation of the live schema through the real WSGI app and real PostgreSQL.

Checks: no 5xx, and every answer (status code, content type, headers, body) conforms to the schema,
for generated valid (positive) and invalid (negative) inputs, anonymously and with a staff token.
The operations are walked in a plain loop (schemathesis' lazy pytest integration does not run under
pytest 9), each with a bounded, derandomized Hypothesis run, so the suite takes about a minute.
"""
import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase
from rest_framework.authtoken.models import Token
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.factories import build_catalog, build_runs

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
MAX_EXAMPLES = 20


def _load_data() -> None:
    """The real catalog (so generated requests meet real slugs), plus probe data to read."""
    call_command("load_catalog", verbosity=0)
    tools = build_catalog(3)
    build_runs(tools[0].probe_targets.get(), 30)


@pytest.fixture
def keep_test_connection():
    """The WSGI handler closes the DB connection after each request, which would end the test's
    transaction; Django's own test client detaches the same handler for the same reason."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(settings, keep_test_connection):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "100000/min", "user": "100000/min", "probe_runs": "100000/min"},
    }
    _load_data()
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())
    schema.config.generation.update(allow_x00=True)
    return schema


def _fuzz(schema, mode: GenerationMode, headers: dict[str, str]) -> list[str]:
    checks = CHECKS + ([negative_data_rejection] if mode == GenerationMode.NEGATIVE else [])
    failures: list[str] = []
    skipped: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
        @hypothesis.settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case):
            case.call_and_validate(headers=headers, checks=checks)

        try:
            run()
        except hypothesis.errors.Unsatisfiable:
            # No invalid value of this operation's path parameter survives URL encoding; nothing to send.
            skipped.append(f"{operation.method.upper()} {operation.path}")
        except (Exception, BaseExceptionGroup) as failure:  # noqa: BLE001 - report every operation's failure
            failures.append(f"{operation.method.upper()} {operation.path}: {str(failure)[:3000]}")
    assert operations >= 25, "the schema lost operations"
    assert len(skipped) < operations / 2, f"too few operations could be exercised: skipped {skipped}"
    return failures


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
def test_every_operation_anonymously(api_schema, mode):
    failures = _fuzz(api_schema, mode, headers={})
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["positive", "negative"])
def test_every_operation_as_staff(api_schema, staff_user, mode):
    token = Token.objects.create(user=staff_user)
    failures = _fuzz(api_schema, mode, headers={"Authorization": f"Token {token.key}"})
    assert not failures, "\n\n".join(failures)
