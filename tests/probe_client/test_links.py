"""The link check against a real HTTP server on loopback: statuses, redirects, timeouts, refused connections, and
how many requests are in flight at once."""
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from probe_client.links import check_links

SLOW_SECONDS = 2.0


class _Handler(BaseHTTPRequestHandler):
    in_flight = 0
    most_in_flight = 0
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 (the name http.server calls)
        if self.path.startswith("/held/"):
            self._held()
        else:
            self._answer()

    def _held(self):
        with self.lock:
            type(self).in_flight += 1
            type(self).most_in_flight = max(type(self).most_in_flight, type(self).in_flight)
        time.sleep(0.3)
        with self.lock:
            type(self).in_flight -= 1
        self._send(200)

    def _answer(self):
        path = self.path
        if path == "/slow":
            time.sleep(SLOW_SECONDS)
            return self._send(200)
        redirects = {"/old": "/new", "/dir": "/dir/", "/elsewhere": "http://localhost:{port}/ok"}
        if path in redirects:
            self.send_response(301)
            self.send_header("Location", redirects[path].format(port=self.server.server_address[1]))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self._send({"/ok": 200, "/new": 200, "/dir/": 200, "/gone": 404, "/broken": 500}.get(path, 404))

    def _send(self, status):
        body = b"x" * 10_000
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except BrokenPipeError:
            pass  # the client gave up waiting (the timeout case): nothing left to answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_statuses_redirects_and_failures_are_told_apart(server, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "*")
    refused = f"http://127.0.0.1:{_closed_port()}/nothing"
    urls = [f"{server}/ok", f"{server}/gone", f"{server}/broken", f"{server}/old", f"{server}/dir",
            f"{server}/elsewhere", f"{server}/slow", refused, f"{server}/ok#section"]
    results = check_links(urls, timeout=0.5, concurrency=4)
    by_url = {result.url: result for result in results}
    assert [result.url for result in results] == urls
    assert [(url, result.dead, result.moved) for url, result in by_url.items()] == [
        (f"{server}/ok", False, False),
        (f"{server}/gone", True, False),
        (f"{server}/broken", True, False),
        (f"{server}/old", False, True),
        (f"{server}/dir", False, False),
        (f"{server}/elsewhere", False, True),
        (f"{server}/slow", True, False),
        (refused, True, False),
        (f"{server}/ok#section", False, False),
    ]
    assert (by_url[f"{server}/gone"].status, by_url[f"{server}/broken"].status) == (404, 500)
    assert by_url[f"{server}/old"].final_url == f"{server}/new"
    assert by_url[f"{server}/slow"].error == "timed out"
    assert by_url[refused].status is None and by_url[refused].error.startswith("ConnectError")


def test_no_more_requests_are_in_flight_than_the_concurrency_allows(server, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "*")
    _Handler.most_in_flight = 0
    results = check_links([f"{server}/held/{number}" for number in range(9)], timeout=5, concurrency=3)
    assert not any(result.dead for result in results)
    assert _Handler.most_in_flight == 3
