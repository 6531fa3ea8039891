from django.apps import AppConfig


class LabConfig(AppConfig):
    name = "lab"
    verbose_name = "Benchmark lab"
