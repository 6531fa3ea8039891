from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        from catalog.changes import changes_from_audit
        from core.services import audit_observer_register

        audit_observer_register(name="catalog.changes", observer=changes_from_audit)
