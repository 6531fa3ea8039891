from decimal import Decimal

import pytest
from django.urls import reverse

from catalog.services import tool_update
from tests.catalog.test_selectors import _grow_catalog
from tests.factories import LanguageModelFactory, ModelOfferingFactory

pytestmark = pytest.mark.django_db


def row_slugs(response) -> list[str]:
    return [tool.slug for tool in response.context["tools"]]


def test_index_ranks_rated_tools_then_unrated(client, catalog):
    response = client.get(reverse("catalog:index"))
    assert response.status_code == 200
    assert row_slugs(response) == ["llama-cpp", "vllm", "mlx", "groq", "cerebras", "tgi"]
    html = response.content.decode()
    assert html.index("llama.cpp") < html.index("vLLM") < html.index("Hugging Face TGI")
    assert "4.8/5" in html
    assert "$0.15 / $0.60 per 1M tokens (gpt-oss-120b)" in html
    assert "gpt-oss-20b" not in html
    assert "Free, open source" in html
    assert 'name="tools" value="groq"' in html
    assert f'action="{reverse("catalog:compare")}"' in html
    assert "<title>Catalog of LLM inference engines and providers · Inference Atlas</title>" in html
    assert '<meta name="description" content="Every inference engine' in html
    assert 'href="#sources"' in html and "Inference engines comparison (seed 002)" in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"hardware": "apple-silicon"}, ["llama-cpp", "mlx"]),
        ({"kind": "provider"}, ["groq", "cerebras"]),
        ({"licence": "MIT"}, ["llama-cpp", "mlx"]),
        ({"feature": "continuous-batching"}, ["vllm", "tgi"]),
        ({"open_source": "yes"}, ["llama-cpp", "vllm", "mlx", "tgi"]),
        ({"open_source": "no"}, ["groq", "cerebras"]),
        ({"q": "GGUF"}, ["llama-cpp"]),
        ({"sort": "name"}, ["cerebras", "groq", "tgi", "llama-cpp", "mlx", "vllm"]),
        ({"sort": "price"}, ["llama-cpp", "vllm", "mlx", "tgi", "groq", "cerebras"]),
        ({"kind": "provider", "sort": "price"}, ["groq", "cerebras"]),
    ],
)
def test_filters_and_sort_from_query_string(client, catalog, query, expected):
    response = client.get(reverse("catalog:index"), query)
    assert response.status_code == 200
    assert row_slugs(response) == expected
    assert "Some filters were ignored" not in response.content.decode()


@pytest.mark.parametrize(
    ("query", "name", "value", "expected"),
    [
        ({"hardware": "quantum-toaster"}, "hardware", "quantum-toaster", 6),
        ({"kind": "spaceship", "hardware": "apple-silicon"}, "kind", "spaceship", 2),
        ({"licence": "WTFPL"}, "licence", "WTFPL", 6),
        ({"feature": "<script>x</script>"}, "feature", "&lt;script&gt;x&lt;/script&gt;", 6),
        ({"open_source": "maybe"}, "open_source", "maybe", 6),
        ({"sort": "vibes", "kind": "provider"}, "sort", "vibes", 2),
        ({"q": "x" * 101}, "q", "x" * 101, 6),
    ],
)
def test_bad_filter_values_are_ignored_with_a_notice(client, catalog, query, name, value, expected):
    response = client.get(reverse("catalog:index"), query)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Some filters were ignored" in html
    assert f"<code>{name}={value}</code>" in html
    assert len(response.context["tools"]) == expected
    assert "<script>x</script>" not in html


def test_empty_result_says_so(client, catalog):
    response = client.get(reverse("catalog:index"), {"hardware": "cerebras-wse", "kind": "engine"})
    assert response.status_code == 200
    assert "No tools match these filters." in response.content.decode()


def test_empty_catalog_says_so(client):
    response = client.get(reverse("catalog:index"))
    assert response.status_code == 200
    assert "No tools match these filters." in response.content.decode()


def test_filter_form_keeps_the_chosen_values(client, catalog):
    html = client.get(reverse("catalog:index"), {"hardware": "apple-silicon", "sort": "name"}).content.decode()
    assert '<option value="apple-silicon" selected>Apple silicon</option>' in html
    assert '<option value="name" selected>Name</option>' in html
    assert 'for="id_hardware"' in html


@pytest.mark.parametrize("count", [5, 50])
def test_a_search_query_count_is_constant(client, django_assert_num_queries, count):
    _grow_catalog(count)
    for index in range(count):
        ModelOfferingFactory(model=LanguageModelFactory(slug=f"engine-model-{index}", name=f"Engine {index} model"))
    client.get(reverse("catalog:index"), {"q": "warm the search documents"})
    # 3 filter choice lists, tools with headline prices, hardware prefetch, the matching models and
    # their offerings (no device matches: none is read)
    with django_assert_num_queries(7):
        response = client.get(reverse("catalog:index"), {"q": "engine"})
    assert len(response.context["tools"]) >= count
    assert len(response.context["found"]["models"]) == count


@pytest.mark.parametrize("count", [5, 50])
def test_index_query_count_is_constant(client, django_assert_num_queries, count):
    _grow_catalog(count)
    # 3 filter choice lists (hardware, licences, features), tools with headline prices, hardware prefetch
    with django_assert_num_queries(5):
        response = client.get(reverse("catalog:index"), {"sort": "price", "open_source": "yes"})
    assert len(response.context["tools"]) == count
    assert response.content.decode().count('name="tools"') == count
    assert response["X-Page-Cache"] == "miss"
    with django_assert_num_queries(0):
        cached = client.get(reverse("catalog:index"), {"sort": "price", "open_source": "yes"})
    assert cached["X-Page-Cache"] == "hit"
    assert cached.content == response.content


def test_rating_display_uses_one_decimal(client, catalog):
    catalog["groq"].rating = Decimal("4")
    catalog["groq"].save()
    assert "4.0/5" in client.get(reverse("catalog:index")).content.decode()


def test_cached_page_is_rebuilt_after_an_edit(client, catalog):
    url = reverse("catalog:index")
    first = client.get(url)
    assert client.get(url)["X-Page-Cache"] == "hit"
    tool_update(actor=None, tool=catalog["tgi"], data={"verdict": "A freshly edited verdict."})
    edited = client.get(url)
    assert edited["X-Page-Cache"] == "miss"
    assert "A freshly edited verdict." in edited.content.decode()
    assert edited.content != first.content


def test_cached_page_is_rebuilt_after_a_delete_in_the_admin(client, admin_client, catalog):
    url = reverse("catalog:tool_detail", args=["groq"])
    assert "gpt-oss-20b" in client.get(url).content.decode()
    price = catalog["groq"].price_items.get(item="gpt-oss-20b")
    assert admin_client.post(reverse("admin:catalog_priceitem_delete", args=[price.pk]), {"post": "yes"}).status_code == 302
    response = client.get(url)
    assert response["X-Page-Cache"] == "miss"
    assert "gpt-oss-20b" not in response.content.decode()


def test_pages_render_when_the_cache_server_is_down(client, catalog, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    response = client.get(reverse("catalog:index"))
    assert response.status_code == 200
    assert "llama.cpp" in response.content.decode()


def test_page_cache_can_be_turned_off(client, catalog, settings):
    settings.READ_CACHE_SECONDS = 0
    client.get(reverse("catalog:guide"))
    assert "X-Page-Cache" not in client.get(reverse("catalog:guide"))


def test_rows_flag_tools_with_caveats(client, catalog):
    html = client.get(reverse("catalog:index")).content.decode()
    assert html.count('class="caveat-flag"') == 2
    assert 'href="/tools/vllm/#caveats-heading">1 caveat</a>' in html


def test_long_hardware_lists_are_shortened_with_a_link(client, catalog):
    from tests.factories import HardwareSupportFactory

    for _ in range(6):
        HardwareSupportFactory(tool=catalog["mlx"])
    html = client.get(reverse("catalog:index")).content.decode()
    assert 'href="/tools/mlx/#hardware-heading">+2 more</a>' in html
