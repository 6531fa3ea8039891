from django.urls import path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.catalog_index, name="index"),
    path("tools/<slug:slug>/", views.tool_detail, name="tool_detail"),
    path("compare/", views.compare, name="compare"),
    path("compare/csv/", views.compare_csv, name="compare_csv"),
    path("guide/", views.guide, name="guide"),
]
