from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _generation_bump(**kwargs) -> None:
    from core.cache import generation_bump

    generation_bump()


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # A deploy migrates: pages rendered by the release before it are not served after it.
        post_migrate.connect(_generation_bump, sender=self, dispatch_uid="core.generation_bump")
