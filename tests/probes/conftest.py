"""Fixtures for the probes tests."""
import os

import pytest


@pytest.fixture
def api_key(monkeypatch):
    """A distinctive key value in the variable the test targets name; only the NAME may ever be stored."""
    value = "sk-atlas-canary-" + os.urandom(12).hex()
    monkeypatch.setenv("ATLAS_TEST_API_KEY", value)
    return value
