"""Fixtures for the probes tests."""
import os

import pytest
from django.utils import timezone

from tests.probes.dashboard_data import TEST_KEY_ENV


@pytest.fixture
def api_key(monkeypatch):
    """A distinctive key value in the variable the test targets name; only the NAME may ever be stored."""
    value = "sk-atlas-canary-" + os.urandom(12).hex()
    monkeypatch.setenv("ATLAS_TEST_API_KEY", value)
    return value


@pytest.fixture
def now():
    return timezone.now()


@pytest.fixture
def key_in_environment(monkeypatch):
    """A value in the variable dashboard_data's targets name, so that they count as configured."""
    monkeypatch.setenv(TEST_KEY_ENV, "test-only-key")
