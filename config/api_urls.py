"""/api/v1/: the REST API, its OpenAPI schema and the offline Swagger UI / Redoc pages."""
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from catalog import apis as catalog_apis
from core.apis import ApiIndexApi, not_found
from lab import apis as lab_apis
from lab import evidence_apis
from probes import apis as probe_apis
from probes import model_apis, tool_apis

app_name = "api"

urlpatterns = [
    path("", ApiIndexApi.as_view(), name="index"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    path("tools/", tool_apis.ToolListApi.as_view(), name="tool-list"),
    path("tools/<slug:slug>/", tool_apis.ToolDetailApi.as_view(), name="tool-detail"),
    path("prices/", catalog_apis.PriceListApi.as_view(), name="price-list"),
    path("prices/<int:pk>/", catalog_apis.PriceDetailApi.as_view(), name="price-detail"),
    path("sources/", catalog_apis.SourceListApi.as_view(), name="source-list"),
    path("sources/<slug:key>/", catalog_apis.SourceDetailApi.as_view(), name="source-detail"),
    path("hardware/", catalog_apis.HardwareListApi.as_view(), name="hardware-list"),
    path("hardware/specs/", catalog_apis.HardwareSpecListApi.as_view(), name="hardware-spec-list"),
    path("quant-formats/", catalog_apis.QuantFormatListApi.as_view(), name="quant-format-list"),
    path("features/", catalog_apis.FeatureListApi.as_view(), name="feature-list"),
    path("api-surfaces/", catalog_apis.ApiSurfaceListApi.as_view(), name="api-surface-list"),
    path("use-cases/", catalog_apis.UseCaseListApi.as_view(), name="use-case-list"),
    path("compare/", catalog_apis.CompareApi.as_view(), name="compare"),
    path("changes/", catalog_apis.ChangeListApi.as_view(), name="change-list"),
    path("models/", model_apis.ModelListApi.as_view(), name="model-list"),
    path("models/<slug:slug>/", model_apis.ModelDetailApi.as_view(), name="model-detail"),
    path("published-benchmarks/", evidence_apis.PublishedBenchmarkListApi.as_view(), name="published-benchmark-list"),
    path("published-benchmarks/points/", evidence_apis.PublishedPointListApi.as_view(),
         name="published-benchmark-point-list"),
    path("probes/targets/", probe_apis.ProbeTargetListApi.as_view(), name="probe-target-list"),
    path("probes/targets/<slug:slug>/", probe_apis.ProbeTargetDetailApi.as_view(), name="probe-target-detail"),
    path("probes/targets/<slug:slug>/run/", probe_apis.ProbeTargetRunApi.as_view(), name="probe-target-run"),
    path("probes/runs/", probe_apis.ProbeRunListApi.as_view(), name="probe-run-list"),
    path("probes/runs/<int:pk>/", probe_apis.ProbeRunDetailApi.as_view(), name="probe-run-detail"),
    path("probes/summaries/", probe_apis.SummaryListApi.as_view(), name="probe-summary-list"),
    path("probes/compat/", probe_apis.CompatMatrixApi.as_view(), name="probe-compat"),
    path("probes/sweeps/", lab_apis.SweepRunListApi.as_view(), name="sweep-run-list"),
    path("probes/sweeps/import/", lab_apis.SweepImportApi.as_view(), name="sweep-run-import"),
    path("probes/sweeps/<int:pk>/", lab_apis.SweepRunDetailApi.as_view(), name="sweep-run-detail"),
    path("probes/sweeps/<int:pk>/levels/", lab_apis.SweepLevelListApi.as_view(), name="sweep-level-list"),
    path("probes/sweeps/<int:pk>/requests/", lab_apis.SweepRequestListApi.as_view(), name="sweep-request-list"),
    path("probes/sweeps/<int:pk>/stop/", lab_apis.SweepRunStopApi.as_view(), name="sweep-run-stop"),
    path("probes/sweeps/<int:pk>/resume/", lab_apis.SweepRunResumeApi.as_view(), name="sweep-run-resume"),
    path("", include("recommend.api_urls")),
    # Anything else under /api/v1/ answers in the API's error shape, not with an HTML page.
    # [\s\S], not ".": a path with an encoded newline is an API path too and gets the API's JSON 404.
    re_path(r"^[\s\S]*$", not_found, name="not-found"),
]
