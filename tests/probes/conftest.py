"""Fixtures for the probes tests: a clean Redis broker database and a recorder of published task messages."""
import os

import pytest
import redis
from celery.signals import before_task_publish
from django.conf import settings


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
def api_key(monkeypatch):
    """A distinctive key value in the variable the test targets name; only the NAME may ever be stored."""
    value = "sk-atlas-canary-" + os.urandom(12).hex()
    monkeypatch.setenv("ATLAS_TEST_API_KEY", value)
    return value
