"""Atom feeds of the change record: the whole site, one tool, one model (django.contrib.syndication).

Feeds are kept in the page cache like the pages (core.cache), with their content type, so a change is in every
feed it concerns from the first request after the write commits.
"""
from __future__ import annotations

from typing import Any

from django.contrib.syndication.views import Feed
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed

from catalog.models import Change, LanguageModel, Tool
from catalog.selectors import change_list
from core.cache import cached_response

FEED_ITEMS = 50
SITE_NAME = "Inference Atlas"


class ChangeFeed(Feed):
    feed_type = Atom1Feed
    author_name = SITE_NAME
    description_template = "catalog/feeds/change_description.html"

    def title(self, obj: Any = None) -> str:
        return f"{SITE_NAME}: what changed"

    def subtitle(self, obj: Any = None) -> str:
        return "Prices, releases, licences, documented gaps, ratings, published evidence and measured regressions."

    def link(self, obj: Any = None) -> str:
        return reverse("catalog:changes")

    def filters(self, obj: Any) -> dict[str, str]:
        return {}

    def items(self, obj: Any = None) -> list[Change]:
        return list(change_list(filters=self.filters(obj), limit=FEED_ITEMS))

    def item_title(self, item: Change) -> str:
        return f"[{item.get_kind_display()}] {item.title}"

    def item_link(self, item: Change) -> str:
        return f"{reverse('catalog:changes')}#change-{item.pk}"

    def item_pubdate(self, item: Change):
        return item.recorded_at

    def item_updateddate(self, item: Change):
        return item.recorded_at

    def item_categories(self, item: Change) -> list[str]:
        return [item.get_kind_display()]


class SiteChangeFeed(ChangeFeed):
    pass


class ToolChangeFeed(ChangeFeed):
    def get_object(self, request: HttpRequest, slug: str) -> Tool:
        return get_object_or_404(Tool, slug=slug)

    def title(self, obj: Tool) -> str:
        return f"{SITE_NAME}: what changed for {obj.name}"

    def link(self, obj: Tool) -> str:
        return f"{reverse('catalog:changes')}?tool={obj.slug}"

    def filters(self, obj: Tool) -> dict[str, str]:
        return {"tool": obj.slug}


class ModelChangeFeed(ChangeFeed):
    def get_object(self, request: HttpRequest, slug: str) -> LanguageModel:
        return get_object_or_404(LanguageModel, slug=slug)

    def title(self, obj: LanguageModel) -> str:
        return f"{SITE_NAME}: what changed for {obj.name}"

    def link(self, obj: LanguageModel) -> str:
        return f"{reverse('catalog:changes')}?model={obj.slug}"

    def filters(self, obj: LanguageModel) -> dict[str, str]:
        return {"model": obj.slug}


def cached_feed(feed: Feed):
    """`feed` served from the page cache, content type and all; absolute links make the host part of the key."""

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return cached_response(request, lambda: feed(request, *args, **kwargs))

    return view
