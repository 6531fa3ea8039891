from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("", include("probes.urls")),
    path("", include("lab.urls")),
    path("", include("recommend.urls")),
    path("", include("catalog.urls")),
]
