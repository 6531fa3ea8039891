from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Benchmark lab"

    def ready(self) -> None:
        from core.services import audit_observer_register
        from lab.changes import lab_changes_from_audit

        audit_observer_register(name="lab.changes", observer=lab_changes_from_audit)
