"""/changes/, its Atom feeds and /api/v1/changes/: the same filters, before and after shown, feeds that parse as
Atom, and a staff PATCH in the feeds from the next request on, whatever the page cache holds."""
import csv
import io
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from catalog.models import Change, PriceItem
from tests.factories import ChangeFactory, LanguageModelFactory, PriceItemFactory, ToolFactory

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"


def _atom(response) -> ET.Element:
    """The feed, checked for what RFC 4287 requires: feed id, title, updated, an author, and per entry id, title,
    updated and a link."""
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert feed.find(f"{ATOM}{name}").text
    assert feed.find(f"{ATOM}author/{ATOM}name").text == "Inference Atlas"
    assert feed.find(f"{ATOM}link[@rel='alternate']") is not None
    for entry in feed.findall(f"{ATOM}entry"):
        for name in ("id", "title", "updated"):
            assert entry.find(f"{ATOM}{name}").text
        assert entry.find(f"{ATOM}link").get("href")
    return feed


def _entries(feed: ET.Element) -> list[tuple[str, str]]:
    return [(entry.find(f"{ATOM}title").text, entry.find(f"{ATOM}summary").text or "")
            for entry in feed.findall(f"{ATOM}entry")]


@pytest.fixture
def staff_api():
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user("editor", password="x", is_staff=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


# Committed for real, so the page cache's generation moves when the write commits, as in production.
@pytest.mark.django_db(transaction=True)
def test_a_staff_price_patch_is_in_the_site_and_tool_feeds_on_the_next_request(client, staff_api):
    model = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    price = PriceItemFactory(tool__slug="groq", tool__name="Groq", item="gpt-oss-120b", model=model,
                             output_usd_per_mtok=Decimal("0.60"))
    # Both feeds are read, and so kept in the page cache, before the write.
    assert _entries(_atom(client.get("/changes/feed/"))) == []
    assert _entries(_atom(client.get("/changes/feed/tools/groq/"))) == []

    response = staff_api.patch(f"/api/v1/prices/{price.pk}/", {"output_usd_per_mtok": "0.55"}, format="json")
    assert response.status_code == 200

    for path in ("/changes/feed/", "/changes/feed/tools/groq/", "/changes/feed/models/gpt-oss-120b/"):
        [(title, summary)] = _entries(_atom(client.get(path)))
        assert title == "[Price] Groq: gpt-oss-120b (On demand) output $0.60 → $0.55"
        assert "<th scope=\"row\">Output, USD per 1M tokens</th><td>0.6000</td><td>0.5500</td>" in summary, summary
    page = client.get("/changes/?tool=groq").content.decode()
    assert "output $0.60 → $0.55" in page and "editor" not in page


def test_a_feed_of_an_unknown_tool_or_model_is_a_404(client):
    assert client.get("/changes/feed/tools/nope/").status_code == 404
    assert client.get("/changes/feed/models/nope/").status_code == 404


def test_the_page_filters_by_kind_tool_and_model_without_javascript(client):
    groq = ToolFactory(slug="groq", name="Groq")
    ChangeFactory(kind=Change.Kind.PRICE, tool=groq, title="Groq price moved")
    ChangeFactory(kind=Change.Kind.RELEASE, title="Engine released")
    regression = ChangeFactory(kind=Change.Kind.REGRESSION, title="TTFT doubled", tool=groq)

    page = client.get("/changes/?kind=regression&tool=groq").content.decode()

    assert "TTFT doubled" in page and "Groq price moved" not in page and "Engine released" not in page
    assert f'id="change-{regression.pk}"' in page
    assert '<form class="filters" method="get" action="/changes/"' in page
    assert 'rel="alternate" type="application/atom+xml"' in page and 'href="/changes/feed/tools/groq/"' in page
    model_page = client.get(f"/changes/?model={regression.model.slug}").content.decode()
    assert "TTFT doubled" in model_page and "Engine released" not in model_page


def test_the_page_reports_a_filter_it_ignores(client):
    ChangeFactory(title="Kept")
    page = client.get("/changes/?kind=rumour").content.decode()
    assert "Some filters were ignored" in page and "rumour is not a known kind of change" in page
    assert "Kept" in page


def test_the_tool_and_model_pages_announce_their_feeds(client):
    from tests.factories import ModelOfferingFactory

    offering = ModelOfferingFactory(tool__slug="groq", model__slug="gpt-oss-120b")
    tool_page = client.get("/tools/groq/").content.decode()
    assert '<link rel="alternate" type="application/atom+xml"' in tool_page
    assert 'href="/changes/feed/tools/groq/"' in tool_page
    model_page = client.get(f"/models/{offering.model.slug}/").content.decode()
    assert 'href="/changes/feed/models/gpt-oss-120b/"' in model_page


def test_the_api_filters_and_names_the_field_of_an_unknown_value():
    api_client = APIClient()
    groq = ToolFactory(slug="groq", name="Groq")
    ChangeFactory(kind=Change.Kind.PRICE, tool=groq)
    ChangeFactory(kind=Change.Kind.RECOVERY)

    rows = api_client.get("/api/v1/changes/?kind=price&tool=groq").json()["results"]
    assert [row["kind"] for row in rows] == ["price"] and rows[0]["tool"] == "groq"
    assert rows[0]["before"] == {"output_usd_per_mtok": "0.6000"} and rows[0]["source"]["key"]

    for query, field in (("kind=rumour", "kind"), ("tool=nope", "tool"), ("model=nope", "model"),
                         ("hardware=nope", "hardware"), ("since=yesterday", "since"), ("limit=0", "limit")):
        response = api_client.get(f"/api/v1/changes/?{query}")
        assert response.status_code == 400, query
        assert field in response.json()["error"]["fields"], (query, response.json())


def test_the_api_exports_csv_with_before_and_after_columns():
    ChangeFactory(title="Groq price moved")
    response = APIClient().get("/api/v1/changes/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    [row] = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert row["title"] == "Groq price moved"
    assert row["before.output_usd_per_mtok"] == "0.6000" and row["after.output_usd_per_mtok"] == "0.5000"


def _queries(client, path: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200, path
    return len(queries)


@pytest.mark.parametrize("path", [
    "/changes/", "/changes/?kind=price", "/changes/feed/", "/changes/feed/tools/groq/",
    "/api/v1/changes/", "/api/v1/changes/?tool=groq&format=csv",
])
def test_queries_do_not_grow_with_the_changes(client, settings, path):
    settings.READ_CACHE_SECONDS = 0
    groq = ToolFactory(slug="groq", name="Groq")
    ChangeFactory(tool=groq)
    few = _queries(client, path)
    ChangeFactory.create_batch(20, tool=groq)
    ChangeFactory.create_batch(5)
    assert _queries(client, path) == few
