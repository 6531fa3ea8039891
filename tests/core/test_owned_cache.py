"""The per-tool pieces below the page cache (core.cache.per_owner_read and per_group_read): a page whose
page cache missed is assembled from pieces kept under each tool's own rows, byte for byte what an
uncached render gives, and an edit to one tool, by any way of writing, shows at once on every page and
API answer that shows the tool, while the other tools' pieces stay cached."""
import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models.functions import Now
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import Caveat, HardwareSupport, LanguageModel, PriceItem, Source, Tool
from core.cache import owner_fingerprints, read_cache_clear
from probes.models import CompatStatus, MeasurementSummary, ProbeTarget
from tests.factories import (
    LanguageModelFactory,
    ModelOfferingFactory,
    PriceItemFactory,
    SourceFactory,
    ToolFactory,
    build_catalog,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]

COMPARED = "engine-000,engine-001,engine-002"
PAGES = [
    "/",
    "/?sort=price",
    "/?sort=name&kind=engine",
    "/?hardware=nvidia-cuda&q=engine",
    "/tools/engine-000/",
    "/tools/engine-001/",
    f"/compare/?tools={COMPARED}",
    f"/compare/?tools={COMPARED}&only=differences",
    f"/compare/csv/?tools={COMPARED}",
    "/compare/?with=engine-001",
    "/api/v1/tools/",
    "/api/v1/tools/?ordering=price",
    "/api/v1/tools/?format=csv",
    "/api/v1/tools/engine-000/",
    "/api/v1/tools/engine-001/",
    f"/api/v1/compare/?tools={COMPARED}",
]


@pytest.fixture
def catalog():
    tools = build_catalog(4)
    model = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    for tool in tools[:3]:
        ModelOfferingFactory(tool=tool, model=model)
        PriceItemFactory(tool=tool, model=model, item="gpt-oss-120b on demand", unit="per_mtok",
                         input_usd_per_mtok="0.15", output_usd_per_mtok="0.60")
    return {tool.slug: tool for tool in tools}


def _outputs(client) -> dict[str, bytes]:
    outputs = {}
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.content[:300])
        outputs[path] = response.content
    return outputs


def _touch(slug: str) -> None:
    """An edit no page shows: the page fingerprint moves, every page misses its page cache."""
    Tool.objects.filter(slug=slug).update(updated_at=Now())


def test_pages_assembled_from_cached_pieces_equal_an_uncached_render(client, settings, catalog):
    settings.READ_CACHE_SECONDS = 0
    uncached = _outputs(client)
    settings.READ_CACHE_SECONDS = 300
    assert _outputs(client) == uncached  # every piece computed and stored
    _touch("engine-003")
    with CaptureQueriesContext(connection) as queries:
        assembled = _outputs(client)
    assert assembled == uncached  # page cache missed, the other tools' pieces from the cache
    # Pieces found in the cache need none of the queries that load a tool's rows.
    assert not any('"catalog_caveat"' in query["sql"] and "JOIN" not in query["sql"] for query in queries)
    assert _outputs(client) == uncached  # page cache


def _rendered_rows(queries) -> list[str]:
    """The prefetches of the catalog rows rendered during a request: one query for every rendered row."""
    return [query["sql"] for query in queries if '"catalog_hardwaresupport"' in query["sql"]]


def test_an_edit_to_one_tool_leaves_the_others_pieces_cached(client, catalog):
    client.get("/")
    with CaptureQueriesContext(connection) as again:
        client.get("/?cold=1")
    assert _rendered_rows(again) == []
    for slug, edit in [("engine-003", {"updated_at": Now()}), ("engine-001", {"verdict": "A new verdict."})]:
        Tool.objects.filter(slug=slug).update(**edit)
        with CaptureQueriesContext(connection) as queries:
            response = client.get("/")
        # Only the edited tool's row was rendered again: its rows were loaded for that one id.
        rendered = _rendered_rows(queries)
        assert len(rendered) == 1 and f"IN ({catalog[slug].pk})" in rendered[0], rendered
    assert b"A new verdict." in response.content


def _shows(client, text: str, paths=PAGES) -> dict[str, bool]:
    return {path: text in client.get(path).content.decode() for path in paths}


TOOL_001_PAGES = [
    "/", "/?sort=price", "/tools/engine-001/", f"/compare/?tools={COMPARED}", "/api/v1/tools/",
    "/api/v1/tools/?format=csv", "/api/v1/tools/engine-001/", f"/api/v1/compare/?tools={COMPARED}",
]


def _edited_everywhere(client, edit, text: str, pages=TOOL_001_PAGES) -> None:
    _outputs(client)
    _touch("engine-003")
    _outputs(client)  # pages rebuilt from cached pieces: the state before the edit is cached everywhere
    assert not any(_shows(client, text, pages).values())
    edit()
    assert _shows(client, text, pages) == dict.fromkeys(pages, True)


def test_a_queryset_update_shows_on_every_page(client, catalog):
    _edited_everywhere(client, lambda: Tool.objects.filter(slug="engine-001").update(name="Renamed by update"),
                       "Renamed by update")


def test_an_edit_of_a_child_row_shows_on_every_page(client, catalog):
    def edit():
        Caveat.objects.filter(tool__slug="engine-001").update(title="A caveat changed by an update")
        PriceItem.objects.filter(tool__slug="engine-001", model__isnull=True).delete()

    # The catalog list shows how many caveats a tool has, the others their titles.
    _edited_everywhere(client, edit, "A caveat changed by an update", [
        "/tools/engine-001/", f"/compare/?tools={COMPARED}", "/api/v1/tools/engine-001/",
        f"/api/v1/compare/?tools={COMPARED}",
    ])


def test_raw_sql_and_a_new_link_show_on_every_page(client, catalog):
    source = SourceFactory(key="a-new-source", title="A source linked later")

    def edit():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE catalog_tool SET ideal_for = 'Written by raw SQL.' WHERE slug = 'engine-001'")
        Tool.objects.get(slug="engine-001").sources.add(source)

    # Every page that shows what a tool is ideal for (the compare API does not).
    _edited_everywhere(client, edit, "Written by raw SQL.", [
        "/", "/?sort=price", "/tools/engine-001/", f"/compare/?tools={COMPARED}", "/api/v1/tools/",
        "/api/v1/tools/?format=csv", "/api/v1/tools/engine-001/",
    ])
    assert "A source linked later" in client.get("/tools/engine-001/").content.decode()
    assert "A source linked later" in client.get(f"/compare/?tools={COMPARED}").content.decode()


def test_a_staff_api_edit_shows_on_every_page(client, catalog):
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    staff = APIClient()
    user = get_user_model().objects.create_user("editor", password="x", is_staff=True)
    staff.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")

    def edit():
        response = staff.patch("/api/v1/tools/engine-001/", {"name": "Renamed through the API"}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["name"] == "Renamed through the API"

    _edited_everywhere(client, edit, "Renamed through the API")


def test_an_admin_edit_shows_on_every_page(client, catalog):
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("admin", password="x")
    admin = type(client)()
    admin.force_login(admin_user)
    tool = catalog["engine-001"]

    def edit():
        form = admin.get(reverse("admin:catalog_tool_change", args=[tool.pk]))
        assert form.status_code == 200
        data = {key: value for key, value in form.context["adminform"].form.initial.items() if value is not None}
        data.update(_inline_management_data(form))
        data["name"] = "Renamed in the admin"
        data["sources"] = [source.pk for source in tool.sources.all()]
        response = admin.post(reverse("admin:catalog_tool_change", args=[tool.pk]), data)
        assert response.status_code == 302, response.content.decode()[:2000]

    _edited_everywhere(client, edit, "Renamed in the admin")


def _inline_management_data(response) -> dict[str, object]:
    """The admin change form's inline formsets, as the browser would post them back unchanged."""
    data: dict[str, object] = {}
    for formset in (inline.formset for inline in response.context["inline_admin_formsets"]):
        prefix = formset.prefix
        data[f"{prefix}-TOTAL_FORMS"] = len(formset.initial_forms)
        data[f"{prefix}-INITIAL_FORMS"] = len(formset.initial_forms)
        for index, form in enumerate(formset.initial_forms):
            for name, field in form.fields.items():
                value = form.initial.get(name, field.initial)
                if hasattr(value, "pk"):
                    value = value.pk
                if value is not None:
                    data[f"{prefix}-{index}-{name}"] = value
    return data


def test_load_catalog_restores_an_edited_tool_on_every_page(client, settings):
    call_command("load_catalog", verbosity=0)
    tool = Tool.objects.get(slug="vllm")
    paths = ["/", "/tools/vllm/", "/api/v1/tools/", "/api/v1/tools/vllm/", "/compare/?tools=vllm,sglang"]
    original = {path: client.get(path).content for path in paths}
    Tool.objects.filter(pk=tool.pk).update(name="Edited before a reload")
    assert all("Edited before a reload" in client.get(path).content.decode() for path in paths)
    call_command("load_catalog", verbosity=0)
    settings.READ_CACHE_SECONDS = 0
    fresh = {path: client.get(path).content for path in paths}
    settings.READ_CACHE_SECONDS = 300
    assert {path: client.get(path).content for path in paths} == fresh
    assert all(b"Edited before a reload" not in body for body in fresh.values())
    assert fresh["/tools/vllm/"] == original["/tools/vllm/"]


def test_a_probe_summary_shows_on_the_pages_of_its_tool_only(client, catalog):
    _outputs(client)
    _touch("engine-003")
    _outputs(client)
    MeasurementSummary.objects.filter(target__tool__slug="engine-001").update(samples=987654)
    assert b"987654" in client.get("/api/v1/tools/engine-001/").content
    assert b"987654" not in client.get("/api/v1/tools/engine-000/").content


def test_an_edit_to_a_shared_row_shows_on_every_page(client, catalog):
    _outputs(client)
    Source.objects.filter(key="catalog-source").update(title="A source retitled")
    assert _shows(client, "A source retitled", ["/", "/tools/engine-000/", f"/compare/?tools={COMPARED}"]) == {
        "/": True, "/tools/engine-000/": True, f"/compare/?tools={COMPARED}": True,
    }


def test_a_rolled_back_edit_leaves_nothing_behind(client, catalog):
    before = _outputs(client)

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        Tool.objects.filter(slug="engine-001").update(name="Rolled back")
        HardwareSupport.objects.filter(tool__slug="engine-002").delete()
        inside = _outputs(client)
        assert b"Rolled back" in inside["/"]
        raise Abandon
    assert _outputs(client) == before


def test_owner_fingerprints_follow_each_tool_and_the_shared_tables(catalog):
    first, second = catalog["engine-000"].pk, catalog["engine-001"].pk
    shared, before = owner_fingerprints(["catalog", "probes"], [first, second])
    Caveat.objects.filter(tool_id=second).update(title="Changed")
    shared_after, after = owner_fingerprints(["catalog", "probes"], [first, second])
    assert (shared_after, after[first]) == (shared, before[first]) and after[second] != before[second]

    MeasurementSummary.objects.filter(target__tool_id=first).update(samples=5)
    _, with_summary = owner_fingerprints(["catalog", "probes"], [first, second])
    _, catalog_only = owner_fingerprints(["catalog"], [first])
    assert with_summary[first] != after[first] and with_summary[second] == after[second]
    assert catalog_only[first] == owner_fingerprints(["catalog"], [first])[1][first]

    Source.objects.filter(key="catalog-source").update(title="Retitled")
    shared_retitled, retitled = owner_fingerprints(["catalog", "probes"], [first, second])
    assert shared_retitled != shared and retitled == with_summary

    every_shared, every = owner_fingerprints(["catalog", "probes"])
    assert every_shared == shared_retitled and every[first] == retitled[first] and len(every) == len(catalog)

    ProbeTarget.objects.filter(tool_id=second).delete()
    Tool.objects.filter(pk=second).delete()
    _, deleted = owner_fingerprints(["catalog", "probes"], [first, second])
    assert deleted[second] != every[second] and deleted[first] == every[first]
    assert 10**9 not in owner_fingerprints(["catalog"], [first, 10**9])[1]  # an owner that never had a row


@pytest.mark.parametrize("tools", [5, 40])
def test_a_page_cache_miss_costs_the_same_queries_whatever_the_catalog_size(client, tools):
    model = LanguageModelFactory(slug="gpt-oss-120b", name="gpt-oss-120b")
    for tool in build_catalog(tools):
        ModelOfferingFactory(tool=tool, model=model)
    counts = {}
    for path in ["/", f"/compare/?tools={COMPARED}", "/tools/engine-001/", "/api/v1/tools/", "/providers/",
                 "/models/", "/models/gpt-oss-120b/"]:
        client.get(path)
        with CaptureQueriesContext(connection) as queries:
            client.get(f"{path}{'&' if '?' in path else '?'}cold=1")
        counts[path] = len(queries)
    # The page's fingerprint and its tools' fingerprints; a tool page also reads its tool's id.
    assert counts == {"/": 2, f"/compare/?tools={COMPARED}": 2, "/tools/engine-001/": 3, "/api/v1/tools/": 2,
                      "/providers/": 2, "/models/": 2, "/models/gpt-oss-120b/": 2}


def _rendered(client, path: str, template: str) -> tuple[bool, bytes]:
    """(whether `template` was rendered for `path`, the page)."""
    response = client.get(path)
    assert response.status_code == 200, (path, response.content[:300])
    return template in [used.name for used in response.templates], response.content


COMPARE_MATRIX = "catalog/_compare_matrix.html"


def test_a_compare_matrix_is_rendered_again_after_an_edit_to_a_compared_tool_only(client, catalog):
    page = f"/compare/?tools={COMPARED}"
    assert _rendered(client, page, COMPARE_MATRIX)[0]
    _touch("engine-003")  # not compared: the page misses its cache, the matrix of this set does not
    assert not _rendered(client, page, COMPARE_MATRIX)[0]
    assert not _rendered(client, f"{page}&cold=1", COMPARE_MATRIX)[0]
    # Another order is another page: its matrix is its own.
    assert _rendered(client, "/compare/?tools=engine-002,engine-001,engine-000", COMPARE_MATRIX)[0]

    Caveat.objects.filter(tool__slug="engine-002").delete()
    Tool.objects.filter(slug="engine-002").update(name="Renamed while compared")
    rendered, body = _rendered(client, page, COMPARE_MATRIX)
    assert rendered and body.count(b"Renamed while compared") >= 2  # the title and the matrix's header
    assert b"None listed" in body

    Source.objects.filter(key="catalog-source").update(title="A shared source retitled")
    assert _rendered(client, page, COMPARE_MATRIX)[0]


DASHBOARD = "probes/_dashboard.html"


def test_the_providers_dashboard_is_rendered_again_after_an_edit_to_a_provider_only(client, catalog):
    Tool.objects.filter(slug__in=["engine-000", "engine-001"]).update(kind=Tool.Kind.PROVIDER)
    page = "/providers/"
    rendered, before = _rendered(client, page, DASHBOARD)
    assert rendered and b"Target 001" in before and b"Target 002" not in before
    _touch("engine-003")  # an engine: the page misses its cache, the providers' dashboard does not
    assert _rendered(client, page, DASHBOARD) == (False, before)
    assert _rendered(client, "/engines/", DASHBOARD)[0]

    for edit, text in [
        (lambda: ProbeTarget.objects.filter(tool__slug="engine-001").update(name="Target renamed"), "Target renamed"),
        (lambda: MeasurementSummary.objects.filter(target__tool__slug="engine-000").update(samples=987654),
         "987654"),
        (lambda: CompatStatus.objects.filter(target__tool__slug="engine-001").update(message="A new message"),
         "A new message"),
        (lambda: Tool.objects.filter(slug="engine-002").update(kind=Tool.Kind.PROVIDER), "Target 002"),
    ]:
        edit()
        rendered, body = _rendered(client, page, DASHBOARD)
        assert rendered and text in body.decode(), text
        assert not _rendered(client, f"{page}?cold=1", DASHBOARD)[0]

    Source.objects.filter(key="catalog-source").update(title="A shared source retitled")
    assert _rendered(client, page, DASHBOARD)[0]


MODEL_PAGE, MODEL_ROW = "probes/model_detail.html", "probes/_model_list_row.html"


def test_a_model_page_and_its_index_row_are_rendered_again_after_an_edit_to_a_tool_offering_it_only(
        client, catalog):
    page = "/models/gpt-oss-120b/"
    other = LanguageModelFactory(slug="other-model", name="Other model")
    ModelOfferingFactory(tool=catalog["engine-003"], model=other)
    assert _rendered(client, page, MODEL_PAGE)[0] and _rendered(client, "/models/", MODEL_ROW)[0]
    _touch("engine-003")  # offers the other model only
    assert not _rendered(client, page, MODEL_PAGE)[0]
    response = client.get("/models/")
    assert [used.name for used in response.templates].count(MODEL_ROW) == 1  # the other model's row

    for edit, text in [
        (lambda: Tool.objects.filter(slug="engine-001").update(name="Renamed while offering"),
         "Renamed while offering"),
        (lambda: ModelOfferingFactory(tool=catalog["engine-003"], model=LanguageModel.objects.get(slug="gpt-oss-120b")),
         "Engine 003"),
        (lambda: LanguageModel.objects.filter(slug="gpt-oss-120b").update(publisher="A new publisher"),
         "A new publisher"),
    ]:
        edit()
        rendered, body = _rendered(client, page, MODEL_PAGE)
        assert rendered and text in body.decode(), text
        assert not _rendered(client, f"{page}?cold=1", MODEL_PAGE)[0]
    assert b"A new publisher" in client.get("/models/").content
    assert client.get("/models/no-such-model/").status_code == 404


def _api_slugs(client) -> list[str]:
    return [row["slug"] for row in client.get("/api/v1/tools/").json()["results"]]


def _page_slugs(client) -> list[str]:
    html = client.get("/").content.decode()
    slugs = [slug for slug in [*_api_slugs(client), "newcomer"] if f'href="/tools/{slug}/"' in html]
    return sorted(slugs, key=lambda slug: html.index(f'href="/tools/{slug}/"'))


def test_who_the_tools_are_and_their_order_follow_every_edit(client, catalog):
    """The pieces cached under every tool's rows (the list's order, the compare picker and slug map, who a
    dashboard shows) move with a rating edit, a new tool, a changed kind and a deleted tool."""
    assert _api_slugs(client) == _page_slugs(client) and _api_slugs(client)[0] == "engine-003"
    assert "Engine 000" in client.get("/engines/").content.decode()

    Tool.objects.filter(slug="engine-000").update(rating="4.9")
    assert _api_slugs(client)[0] == _page_slugs(client)[0] == "engine-000"

    ToolFactory(slug="newcomer", name="Newcomer", rating="5.0")
    assert _api_slugs(client)[0] == _page_slugs(client)[0] == "newcomer"
    compared = client.get("/compare/?tools=newcomer,engine-001")
    assert compared.status_code == 200 and 'value="newcomer" checked' in compared.content.decode()
    assert "Newcomer" not in client.get("/models/gpt-oss-120b/").content.decode()
    ModelOfferingFactory(tool=Tool.objects.get(slug="newcomer"), model=LanguageModel.objects.get(slug="gpt-oss-120b"))
    assert "Newcomer" in client.get("/models/gpt-oss-120b/").content.decode()

    Tool.objects.filter(slug="engine-000").update(kind=Tool.Kind.PROVIDER)
    assert "Engine 000" not in client.get("/engines/").content.decode()
    assert "Engine 000" in client.get("/providers/").content.decode()

    ProbeTarget.objects.filter(tool__slug="engine-002").delete()
    Tool.objects.filter(slug="engine-002").delete()
    assert "engine-002" not in _api_slugs(client) and "engine-002" not in _page_slugs(client)
    refused = client.get("/compare/?tools=engine-002,engine-001")
    assert refused.status_code == 400 and "No tool with the slug: engine-002" in refused.content.decode()


def test_the_summaries_list_is_assembled_from_each_tools_rows(client, catalog):
    """After an edit to one tool's summaries, the list re-serializes that tool's alone, keeps the order of
    every target, and equals what an uncached read gives, filters included."""
    paths = ["/api/v1/probes/summaries/", "/api/v1/probes/summaries/?tool=engine-001",
             "/api/v1/probes/summaries/?format=csv"]
    first = {path: client.get(path).content for path in paths}
    MeasurementSummary.objects.filter(target__tool__slug="engine-001").update(samples=77)
    with CaptureQueriesContext(connection) as queries:
        listed = client.get(paths[0]).json()["results"]
    reads = [query["sql"] for query in queries if 'FROM "probes_measurementsummary"' in query["sql"]]
    assert len(reads) == 2 and f"IN ({catalog['engine-001'].pk})" in reads[-1], reads  # the order, one tool's rows
    assert [row["samples"] for row in listed if row["target"] == "target-001"] == [77]
    assert [row["target"] for row in listed] == sorted(row["target"] for row in listed)
    again = {path: client.get(path).content for path in paths}
    assert again != first and b"77" in again[paths[1]]
    read_cache_clear()
    with override_settings(READ_CACHE_SECONDS=0):
        assert {path: client.get(path).content for path in paths} == again
