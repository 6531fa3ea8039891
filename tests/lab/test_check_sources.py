"""``manage.py check_sources`` against a real HTTP server on loopback (never the internet): every cited link tried
once, the dead and the moved listed with what cites them, exit code 1 when one is dead."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalog.models import Source
from lab.models import SweepRun
from lab.selectors import source_links
from tests.factories import PriceItemFactory, ReportedFigureFactory, SourceFactory, SweepRunFactory

pytestmark = pytest.mark.django_db


class _Handler(BaseHTTPRequestHandler):
    requested: list[str] = []

    def do_GET(self):  # noqa: N802 (the name http.server calls)
        self.requested.append(self.path)
        if self.path == "/old-page":
            self.send_response(302)
            self.send_header("Location", "/new-page")
        else:
            self.send_response(404 if self.path == "/gone" else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "*")
    _Handler.requested = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _cite(server: str) -> None:
    source = SourceFactory(key="pricing-page", url=f"{server}/pricing")
    PriceItemFactory(source=source, item="a-model", tool__slug="a-provider")
    SourceFactory(key="moved-doc", url=f"{server}/old-page")
    ReportedFigureFactory(key="a-figure", url=f"{server}/gone")
    SweepRunFactory(origin=SweepRun.Origin.PUBLISHED, status=SweepRun.Status.IMPORTED, target=None,
                    key="a-benchmark", url=f"{server}/gone", publisher="A publisher")
    # The sources the factories made along the way cite nothing, so that no request leaves the machine.
    Source.objects.exclude(key__in=["pricing-page", "moved-doc"]).update(url="")


def test_every_cited_link_is_listed_once_with_what_cites_it(server, django_assert_num_queries):
    _cite(server)
    with django_assert_num_queries(4):
        cited = source_links()
    assert cited == {
        f"{server}/pricing": ["source pricing-page", "price a-provider: a-model"],
        f"{server}/old-page": ["source moved-doc"],
        f"{server}/gone": ["reported figure a-figure", "published benchmark a-benchmark"],
    }


def test_dead_and_moved_links_are_reported_and_a_dead_one_fails_the_command(server):
    _cite(server)
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("check_sources", "--timeout", "2", "--concurrency", "2", stdout=out)
    assert raised.value.returncode == 1
    assert str(raised.value) == "3 links checked: 1 dead, 1 moved."
    lines = out.getvalue().splitlines()
    assert lines == [
        f"dead   {server}/gone (HTTP 404); cited by reported figure a-figure, published benchmark a-benchmark",
        f"moved  {server}/old-page -> {server}/new-page; cited by source moved-doc",
    ]
    assert sorted(_Handler.requested) == ["/gone", "/new-page", "/old-page", "/pricing"]


def test_all_links_alive_exits_cleanly(server):
    SourceFactory(key="fine", url=f"{server}/fine")
    assert list(source_links()) == [f"{server}/fine"]
    out = StringIO()
    call_command("check_sources", stdout=out)
    assert out.getvalue().strip().endswith("1 links checked: 0 dead, 0 moved.")


@pytest.mark.parametrize("args", [["--timeout", "0"], ["--concurrency", "-1"], ["--timeout", "soon"]])
def test_a_timeout_or_concurrency_that_is_not_a_positive_number_is_refused(args):
    with pytest.raises(CommandError, match=args[0]):
        call_command("check_sources", *args)
