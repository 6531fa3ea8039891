from django.urls import path

from catalog import feeds, views

app_name = "catalog"

urlpatterns = [
    path("", views.catalog_index, name="index"),
    path("tools/<slug:slug>/", views.tool_detail, name="tool_detail"),
    path("compare/", views.compare, name="compare"),
    path("compare/csv/", views.compare_csv, name="compare_csv"),
    path("guide/", views.guide, name="guide"),
    path("changes/", views.changes, name="changes"),
    path("changes/feed/", feeds.cached_feed(feeds.SiteChangeFeed()), name="changes-feed"),
    path("changes/feed/tools/<slug:slug>/", feeds.cached_feed(feeds.ToolChangeFeed()), name="changes-feed-tool"),
    path("changes/feed/models/<slug:slug>/", feeds.cached_feed(feeds.ModelChangeFeed()), name="changes-feed-model"),
]
