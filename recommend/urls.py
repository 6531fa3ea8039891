from django.urls import path

from recommend import cost_views, views

app_name = "recommend"

urlpatterns = [
    path("use-cases/", views.use_cases, name="use_case_list"),
    path("use-cases/<slug:slug>/", views.use_case_detail, name="use_case_detail"),
    path("recommend/", views.wizard, name="wizard"),
    path("engine-guide/", views.engine_guide, name="engine_guide"),
    path("fit/", views.fit, name="fit"),
    path("break-even/", views.break_even, name="break_even"),
    path("cost/", cost_views.cost, name="cost"),
]
