"""``manage.py check_sources``: try every link the site cites as a source and report the dead and the moved."""
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.selectors import source_links
from probe_client.links import check_links


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise ValueError(text)
        return value
    parse.__name__ = kind.__name__
    return parse


class Command(BaseCommand):
    help = (
        "Fetch every source link (catalog sources and the prices they state, reported figures, published "
        "benchmarks) once, a few at a time, and list the dead ones (HTTP 4xx/5xx, timeout, connection error) and "
        "the moved ones (redirected to another host or path), each with what cites it. Exits 1 when a link is dead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=_positive(float), default=10.0,
                            help="Seconds allowed to connect and between reads, per link (default 10).")
        parser.add_argument("--concurrency", type=_positive(int), default=8,
                            help="Links fetched at once (default 8).")

    def handle(self, *args, timeout: float, concurrency: int, **options) -> None:
        cited = source_links()
        results = check_links(sorted(cited), timeout=timeout, concurrency=concurrency)
        dead = [result for result in results if result.dead]
        moved = [result for result in results if result.moved]
        for result in dead:
            reason = result.error or f"HTTP {result.status}"
            self.stdout.write(f"dead   {result.url} ({reason}); cited by {', '.join(cited[result.url])}")
        for result in moved:
            self.stdout.write(f"moved  {result.url} -> {result.final_url}; cited by {', '.join(cited[result.url])}")
        summary = f"{len(results)} links checked: {len(dead)} dead, {len(moved)} moved."
        if dead:
            raise CommandError(summary, returncode=1)
        self.stdout.write(self.style.SUCCESS(summary))
