from django.urls import path

from lab import views

app_name = "lab"

urlpatterns = [
    path("engines/lab/", views.sweep_list, name="sweep-list"),
    path("engines/lab/compare/", views.sweep_compare, name="sweep-compare"),
    path("engines/lab/<int:pk>/", views.sweep_detail, name="sweep-detail"),
]
