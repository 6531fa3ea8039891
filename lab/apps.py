from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Benchmark lab"

    def ready(self) -> None:
        from core.loading import fixture_loader_register
        from lab.loading import load

        # Published runs name catalog tools, hardware and models.
        fixture_loader_register(name="lab", load=load, after=("catalog",))
