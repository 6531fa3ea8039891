"""The canonical URLs of the site: what core.cache.pages_warm renders after every data change."""
from catalog.models import LanguageModel, Tool
from lab.models import SweepRun

STATIC_PATHS = (
    "/",
    "/guide/",
    "/compare/",
    "/providers/",
    "/engines/",
    "/models/",
    "/engines/lab/",
    "/engines/evidence/",
    "/use-cases/",
    "/engine-guide/",
    "/methodology/",
    "/api/v1/tools/",
    "/api/v1/models/",
    "/api/v1/probes/summaries/",
)


def canonical_paths() -> list[str]:
    tools = Tool.objects.order_by("slug").values_list("slug", flat=True)
    models = LanguageModel.objects.order_by("slug").values_list("slug", flat=True)
    evidence = (SweepRun.objects.filter(origin=SweepRun.Origin.PUBLISHED)
                .order_by("model__slug", "hardware__slug").values_list("model__slug", "hardware__slug").distinct())
    return [*STATIC_PATHS, *(f"/tools/{slug}/" for slug in tools), *(f"/models/{slug}/" for slug in models),
            *(f"/engines/evidence/{model}/{hardware}/" for model, hardware in evidence)]
