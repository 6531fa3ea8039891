"""Published engine comparisons on pages of the other apps (the engines page, a model's page), which may show the
lab's evidence without their code importing the lab."""
from django import template

from lab import evidence

register = template.Library()


@register.inclusion_tag("lab/_engine_evidence.html")
def engine_evidence(model_slug: str) -> dict:
    """Every comparison of several engines on one model, with links to the model × hardware pages."""
    found = evidence.comparisons(model=model_slug, engines_at_least=2)
    return {"comparisons": found, "model_slug": model_slug}
