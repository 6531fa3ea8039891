"""``manage.py load_catalog``: every app's fixture loader, in dependency order, in one transaction."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import Tool
from core.loading import FieldChange, FixtureError, LoadOptions, default_fixtures_dir, load_all

SHOWN_CHARACTERS = 70


class Command(BaseCommand):
    help = (
        "Load fixtures/catalog/*.yaml, then the fixtures of the apps built on the catalog (use cases, probe "
        "target presets). Idempotent: rows are upserted by natural key; rows not in the fixtures are left alone. "
        "Every field of an existing row that the load changes is listed, and a change that undoes an edit made "
        "since the last load says so; --keep-edits leaves those edits in place."
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
        parser.add_argument(
            "--keep-edits", action="store_true",
            help="Leave every field edited since the last load (in the admin, the API, the database) as it is.",
        )

    def handle(self, *args, fixtures_dir: Path | None, if_empty: bool = False, keep_edits: bool = False,
               **options) -> None:
        if if_empty and Tool.objects.exists():
            self.stdout.write("The catalog is already loaded; `make catalog` refreshes it from the fixtures.")
            return
        load = LoadOptions(keep_edits=keep_edits)
        try:
            results = load_all(fixtures_dir=fixtures_dir, options=load)
        except FixtureError as exc:
            raise CommandError(f"Nothing was loaded. {exc}") from None
        for app, counts in results.items():
            for section, section_counts in counts.items():
                self.stdout.write(f"{app}.{section}: {_describe(section_counts)}")
        for change in load.changed:
            verb = "reverted an edit" if change.edited else "updated from the fixture"
            self.stdout.write(self.style.WARNING(f"{verb}: {_change(change)}") if change.edited
                              else f"{verb}: {_change(change)}")
        for change in load.kept:
            self.stdout.write(f"kept an edit (--keep-edits): {_change(change)}")
        self.stdout.write(self.style.SUCCESS("Fixtures loaded."))


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN_CHARACTERS else text[: SHOWN_CHARACTERS - 1] + "…"


def _change(change: FieldChange) -> str:
    return f"{change.row}: {change.field}: {_shown(change.old)} → {_shown(change.new)}"


def _describe(counts) -> str:
    if isinstance(counts, dict):
        return ", ".join(f"{value} {name}" for name, value in counts.items())
    return str(counts)
