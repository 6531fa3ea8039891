from django.urls import path

from recommend import apis

urlpatterns = [
    path("recommendations/", apis.RecommendationApi.as_view(), name="recommendations"),
    path("fit/", apis.FitApi.as_view(), name="fit"),
    path("break-even/", apis.BreakEvenApi.as_view(), name="break-even"),
]
