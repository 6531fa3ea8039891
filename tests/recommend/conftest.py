import pytest
from django.core.cache import cache
from django.core.management import call_command


@pytest.fixture
def loaded_catalog(db):
    """The real catalog and use cases, as `manage.py load_catalog` loads them."""
    call_command("load_catalog", verbosity=0)


@pytest.fixture(autouse=True)
def fresh_cache():
    """API throttle buckets live in Redis (this run's own db index); each test starts clean."""
    cache.clear()
    yield
    cache.clear()
