"""Hostile result files and uploads over real HTTP (a live server thread): a 63 MB JSONL of 21 million ``{}`` lines
is refused at the row limit with memory bounded, JSON nested without end is refused in the import as in any JSON
body, and a 200 MB upload gets 413 before its body is read, so nothing of it is spooled to disk."""
import socket
import time
import tracemalloc

import httpx
import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from lab.models import SweepRun
from probe_client.jsonlimits import MAX_JSON_DEPTH
from probe_client.sweep.imports import MAX_RESULT_ROWS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

URL = "/api/v1/probes/sweeps/import/"
MEMORY_BOUND_BYTES = 100 * 1024 * 1024


@pytest.fixture
def token(db) -> str:
    user = get_user_model().objects.create_user("importer", password="x", is_staff=True)
    return Token.objects.create(user=user).key


def _import(live_server, token: str, path) -> httpx.Response:
    with path.open("rb") as file:
        return httpx.post(f"{live_server.url}{URL}", files={"file": (path.name, file, "application/jsonl")},
                          headers={"Authorization": f"Token {token}"}, timeout=120)


def test_a_63_mb_jsonl_of_21_million_empty_objects_is_refused_at_the_row_limit_in_bounded_memory(
    live_server, token, tmp_path, settings
):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    path = tmp_path / "objects.jsonl"
    with path.open("wb") as file:
        for _ in range(21):
            file.write(b"{}\n" * 1_000_000)
    assert path.stat().st_size == 63_000_000

    tracemalloc.start()
    started = time.monotonic()
    try:
        response = _import(live_server, token, path)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert response.status_code == 400, response.text[:500]
    message = response.json()["error"]["fields"]["file"][0]
    assert f"more than {MAX_RESULT_ROWS:,} JSON lines" in message
    assert peak < MEMORY_BOUND_BYTES, f"the import peaked at {peak / 2**20:.0f} MiB"
    assert elapsed < 60
    assert not SweepRun.objects.exists()
    print(f"\n63 MB JSONL: 400 in {elapsed:.1f} s, peak traced memory {peak / 2**20:.1f} MiB")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_a_result_file_nested_deeper_than_the_limit_is_a_400_naming_it(live_server, token, tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"benchmarks": ' + "[" * depth + "]" * depth + "}")

    response = _import(live_server, token, path)

    assert response.status_code == 400, response.text[:500]
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in response.json()["error"]["fields"]["file"][0]


def test_a_json_body_nested_without_end_is_a_400_over_http(live_server, token):
    body = '{"plan": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = httpx.post(f"{live_server.url}/api/v1/probes/sweeps/", content=body, timeout=30,
                          headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
    assert response.status_code == 400, response.text[:500]
    assert f"nested deeper than {MAX_JSON_DEPTH}" in response.json()["error"]["message"]


def _send_head_and_some_body(live_server, path: str, declared: int, extra: str = "") -> bytes:
    """Declare a `declared`-byte body, send 1 MiB of it, and return what the server answers within 10 s."""
    host, port = live_server.thread.host, live_server.thread.port
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: multipart/form-data; boundary=xyz\r\n"
            f"Content-Length: {declared}\r\n{extra}\r\n".encode()
        )
        sock.sendall(b"--xyz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.json\"\r\n\r\n")
        sock.sendall(b"0" * (1024 * 1024))
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536) or b"\r\n\r\n"
        head, _, body = answer.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                       if line.startswith(b"content-length:")), 0)
        while len(body) < length:
            body += sock.recv(65536) or b" " * length
        return head + b"\r\n\r\n" + body


@pytest.mark.parametrize("path", [URL, "/admin/lab/sweeprun/import/"])
def test_a_200_mb_upload_is_a_413_before_its_body_is_read(live_server, token, tmp_path, settings, path):
    spool = tmp_path / "spool"
    spool.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(spool)
    started = time.monotonic()

    answer = _send_head_and_some_body(live_server, path, 200 * 1024 * 1024, f"Authorization: Token {token}\r\n")

    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert f"larger than {settings.REQUEST_MAX_BODY_BYTES:,} bytes".encode() in answer
    assert time.monotonic() - started < 10
    assert list(spool.iterdir()) == []


def test_an_upload_within_the_limit_still_reaches_the_import(live_server, token, tmp_path):
    path = tmp_path / "empty.json"
    path.write_text("[]")

    response = _import(live_server, token, path)

    assert response.status_code == 400
    assert "file" in response.json()["error"]["fields"]
