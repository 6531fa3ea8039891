from django.urls import path

from lab import evidence_views, views

app_name = "lab"

urlpatterns = [
    path("engines/lab/", views.sweep_list, name="sweep-list"),
    path("engines/lab/compare/", views.sweep_compare, name="sweep-compare"),
    path("engines/lab/<int:pk>/", views.sweep_detail, name="sweep-detail"),
    path("engines/evidence/", evidence_views.evidence_matrix, name="evidence"),
    path("engines/evidence/<slug:model>/<slug:hardware>/", evidence_views.evidence_detail, name="evidence-detail"),
]
