"""``manage.py load_catalog``: every app's fixture loader, in dependency order, in one transaction."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import Tool
from core.loading import FixtureError, default_fixtures_dir, load_all


class Command(BaseCommand):
    help = (
        "Load fixtures/catalog/*.yaml, then the fixtures of the apps built on the catalog (use cases, probe "
        "target presets). Idempotent: rows are upserted by natural key; rows not in the fixtures are left alone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--fixtures-dir", type=Path, default=None,
            help=f"Directory holding the fixture sub-directories (default: {default_fixtures_dir()}).",
        )
        parser.add_argument(
            "--if-empty", action="store_true",
            help="Load only into an empty catalog, so starting the site never undoes edits made since.",
        )

    def handle(self, *args, fixtures_dir: Path | None, if_empty: bool = False, **options) -> None:
        if if_empty and Tool.objects.exists():
            self.stdout.write("The catalog is already loaded; `make catalog` refreshes it from the fixtures.")
            return
        try:
            results = load_all(fixtures_dir=fixtures_dir)
        except FixtureError as exc:
            raise CommandError(f"Nothing was loaded. {exc}") from exc
        for app, counts in results.items():
            for section, section_counts in counts.items():
                self.stdout.write(f"{app}.{section}: {_describe(section_counts)}")
        self.stdout.write(self.style.SUCCESS("Fixtures loaded."))


def _describe(counts) -> str:
    if isinstance(counts, dict):
        return ", ".join(f"{value} {name}" for name, value in counts.items())
    return str(counts)
