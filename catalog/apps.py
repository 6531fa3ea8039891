from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        from catalog.loading import load_counts
        from core.loading import fixture_loader_register

        fixture_loader_register(name="catalog", load=load_counts)
