from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Benchmark lab"

    def ready(self) -> None:
        from core.loading import fixture_loader_register
        from core.services import audit_observer_register
        from lab.changes import lab_changes_from_audit
        from lab.loading import load

        # Published runs name catalog tools, hardware and models.
        fixture_loader_register(name="lab", load=load, after=("catalog",))
        audit_observer_register(name="lab.changes", observer=lab_changes_from_audit)
