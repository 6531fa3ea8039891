from django.urls import path

from recommend import apis, cost_apis

urlpatterns = [
    path("recommendations/", apis.RecommendationApi.as_view(), name="recommendations"),
    path("fit/", apis.FitApi.as_view(), name="fit"),
    path("break-even/", apis.BreakEvenApi.as_view(), name="break-even"),
    path("cost/", cost_apis.CostApi.as_view(), name="cost"),
]
