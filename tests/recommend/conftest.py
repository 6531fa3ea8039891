import pytest
from django.core.management import call_command


@pytest.fixture
def loaded_catalog(db):
    """The real catalog and use cases, as `manage.py load_catalog` loads them."""
    call_command("load_catalog", verbosity=0)


@pytest.fixture(autouse=True)
def empty_cache_for_every_test(fresh_cache):
    """API throttle buckets live in Redis; each test starts clean."""
