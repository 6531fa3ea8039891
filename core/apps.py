from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_read_cache_triggers(sender: AppConfig, using: str, **kwargs) -> None:
    from django.db import connections

    from core.write_log import write_log_install

    write_log_install(using_connection=connections[using])


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core"

    def ready(self) -> None:
        # post_migrate is sent once per app after the whole migration run: once is enough.
        post_migrate.connect(_install_read_cache_triggers, sender=self, dispatch_uid="core.read_cache_triggers")
