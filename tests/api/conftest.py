import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


def _token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("editor", password="x", is_staff=True)


@pytest.fixture
def staff_client(staff_user) -> APIClient:
    return _token_client(staff_user)


@pytest.fixture
def user_client(db) -> APIClient:
    return _token_client(get_user_model().objects.create_user("reader", password="x"))
