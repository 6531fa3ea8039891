import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse

from catalog import models
from tests.catalog.pages_data import build_sample_catalog
from tests.factories import HardwareSpecFactory

pytestmark = pytest.mark.django_db

CATALOG_MODELS = [
    model for model in (getattr(models, name) for name in dir(models))
    if isinstance(model, type) and issubclass(model, models.models.Model)
    and not model._meta.abstract and model._meta.app_label == "catalog"
]


@pytest.fixture
def staff_client(client):
    user = get_user_model().objects.create_superuser("editor", "editor@example.org", "a-long-test-password")
    client.force_login(user)
    return client


def test_every_catalog_model_is_registered():
    assert {model.__name__ for model in CATALOG_MODELS if not admin.site.is_registered(model)} == set()


def test_anonymous_users_are_sent_to_login(client):
    response = client.get(reverse("admin:catalog_tool_changelist"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize("model", CATALOG_MODELS, ids=lambda model: model.__name__)
def test_changelists_load_for_staff_with_search(staff_client, model):
    build_sample_catalog()
    HardwareSpecFactory()
    url = reverse(f"admin:catalog_{model._meta.model_name}_changelist")
    assert staff_client.get(url).status_code == 200
    assert staff_client.get(url, {"q": "groq"}).status_code == 200


def test_tool_change_page_has_inlines(staff_client):
    tools = build_sample_catalog()
    response = staff_client.get(reverse("admin:catalog_tool_change", args=[tools["groq"].pk]))
    assert response.status_code == 200
    html = response.content.decode()
    for prefix in ("price_items", "hardware_support", "quant_format_support", "api_surface_support",
                   "feature_support", "caveats"):
        assert f'id="{prefix}-group"' in html
    assert "gpt-oss-20b" in html


def test_tool_changelist_filters(staff_client):
    build_sample_catalog()
    response = staff_client.get(reverse("admin:catalog_tool_changelist"), {"kind__exact": "provider"})
    assert response.status_code == 200
    assert "Groq" in response.content.decode() and "vLLM" not in response.content.decode()
