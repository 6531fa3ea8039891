import pytest
from django.core.management import call_command


@pytest.fixture
def loaded_catalog(db):
    """The real catalog and use cases, as `manage.py load_catalog` loads them."""
    call_command("load_catalog", verbosity=0)
