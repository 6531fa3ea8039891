import pytest
from django.test import RequestFactory
from django.views.defaults import page_not_found, server_error

pytestmark = pytest.mark.django_db


def test_server_error_page_shows_no_internals():
    response = server_error(RequestFactory().get("/boom/"))
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong" in html
    assert "<title>Something went wrong · Inference Atlas</title>" in html
    for leak in ("Traceback", "SECRET_KEY", "DATABASES", "settings"):
        assert leak not in html


def test_unknown_url_gets_the_project_404(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "Page not found" in response.content.decode()


def test_404_page_escapes_the_path():
    response = page_not_found(RequestFactory().get("/tools/<script>alert(1)</script>/"), Exception("x"))
    assert response.status_code == 404
    assert "<script>alert(1)</script>" not in response.content.decode()
