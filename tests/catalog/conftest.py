from pathlib import Path

import pytest
from django.conf import settings
from django.db import transaction

from catalog.loading import load
from tests.catalog.pages_data import build_sample_catalog


@pytest.fixture(scope="module")
def real_catalog(django_db_setup, django_db_blocker):
    """Load the real fixtures once for the module, and roll them back afterwards."""
    with django_db_blocker.unblock(), transaction.atomic():
        load(fixtures_dir=Path(settings.BASE_DIR) / "fixtures")
        yield
        transaction.set_rollback(True)


@pytest.fixture
def catalog():
    """The small, varied sample catalog of pages_data.py."""
    return build_sample_catalog()
