from django.urls import path

from probes import sweep_views, views

app_name = "probes"

urlpatterns = [
    path("providers/", views.providers_dashboard, name="providers"),
    path("engines/", views.engines_dashboard, name="engines"),
    path("methodology/", views.methodology, name="methodology"),
    path("models/", views.model_index, name="model-list"),
    path("models/<slug:slug>/", views.model_detail, name="model-detail"),
    path("engines/lab/", sweep_views.sweep_list, name="sweep-list"),
    path("engines/lab/compare/", sweep_views.sweep_compare, name="sweep-compare"),
    path("engines/lab/<int:pk>/", sweep_views.sweep_detail, name="sweep-detail"),
]
