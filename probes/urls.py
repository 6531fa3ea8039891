from django.urls import path

from probes import views

app_name = "probes"

urlpatterns = [
    path("providers/", views.providers_dashboard, name="providers"),
    path("engines/", views.engines_dashboard, name="engines"),
    path("methodology/", views.methodology, name="methodology"),
    path("models/", views.model_index, name="model-list"),
    path("models/<slug:slug>/", views.model_detail, name="model-detail"),
]
