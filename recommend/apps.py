from django.apps import AppConfig


class RecommendConfig(AppConfig):
    name = "recommend"
    verbose_name = "Recommendations"

    def ready(self) -> None:
        from core.loading import fixture_loader_register
        from recommend.loading import load

        # Use cases name catalog tools and sources.
        fixture_loader_register(name="recommend", load=load, after=("catalog",))
