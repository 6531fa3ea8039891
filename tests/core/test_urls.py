"""Memoised URL reversing gives exactly what Django's reverse() and {% url %} give."""
import pytest
from django.template import engines
from django.test import override_settings
from django.urls import NoReverseMatch, reverse, set_script_prefix

from core.urls import _memoised_reverse, cached_absolute_reverse, cached_reverse


def test_cached_reverse_matches_reverse_and_memoises():
    _memoised_reverse.cache_clear()

    first = cached_reverse("catalog:tool_detail", args=["vllm"])
    second = cached_reverse("catalog:tool_detail", kwargs={"slug": "vllm"})

    assert first == second == reverse("catalog:tool_detail", args=["vllm"])
    assert cached_reverse("catalog:tool_detail", args=["vllm"]) == first
    assert _memoised_reverse.cache_info().hits == 1


def test_cached_reverse_follows_the_script_prefix():
    try:
        set_script_prefix("/atlas/")
        assert cached_reverse("catalog:index") == "/atlas/"
    finally:
        set_script_prefix("/")
    assert cached_reverse("catalog:index") == "/"


def test_cached_reverse_raises_like_reverse():
    with pytest.raises(NoReverseMatch):
        cached_reverse("catalog:tool_detail", args=["not a slug!"])


def test_objects_as_arguments_are_reversed_every_time():
    class Slug:
        def __init__(self, text):
            self.text = text

        def __str__(self):
            return self.text

    _memoised_reverse.cache_clear()
    argument = Slug("vllm")
    assert cached_reverse("catalog:tool_detail", args=[argument]) == "/tools/vllm/"
    argument.text = "sglang"
    assert cached_reverse("catalog:tool_detail", args=[argument]) == "/tools/sglang/"
    assert _memoised_reverse.cache_info().currsize == 0


@override_settings(ROOT_URLCONF="tests.core.urls_other")
def test_a_changed_urlconf_is_not_served_from_the_memo():
    assert cached_reverse("other") == "/elsewhere/"


def test_the_url_tag_of_every_template_renders_as_django_s_own():
    template = engines["django"].from_string(
        '{% url "catalog:tool_detail" slug %}|{% url "catalog:tool_detail" slug=slug as link %}{{ link }}|'
        '{% url "catalog:nowhere" as missing %}[{{ missing }}]'
    )
    assert template.render({"slug": "vllm"}) == "/tools/vllm/|/tools/vllm/|[]"


def test_cached_absolute_reverse_is_the_api_s_reverse(rf):
    from rest_framework.request import Request
    from rest_framework.reverse import reverse as api_reverse

    request = Request(rf.get("/api/v1/tools/", {"format": "csv"}))

    assert cached_absolute_reverse("api:tool-detail", kwargs={"slug": "vllm"}, request=request) == api_reverse(
        "api:tool-detail", kwargs={"slug": "vllm"}, request=request
    )
    assert "format=csv" in cached_absolute_reverse("api:tool-detail", kwargs={"slug": "vllm"}, request=request)
