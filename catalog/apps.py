from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        from catalog.changes import changes_from_audit
        from catalog.loading import load_counts
        from core.loading import fixture_loader_register
        from core.services import audit_observer_register

        fixture_loader_register(name="catalog", load=load_counts)
        audit_observer_register(name="catalog.changes", observer=changes_from_audit)
