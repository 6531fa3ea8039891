"""A hostile provider cannot crash the recording of a run, and a target cannot name another secret as its key."""
import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from probes.models import ProbeRun, ProbeTarget
from probes.services.runs.execute import probe_target_run_now
from probes.services.targets import probe_target_create, probe_target_update
from tests.factories import ProbeTargetFactory, ToolFactory

pytestmark = pytest.mark.django_db

RULE = "_API_KEY or _TOKEN"
FORBIDDEN_NAMES = ["DJANGO_SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "REDIS_URL", "CELERY_BROKER_URL",
                   "POSTGRES_PASSWORD", "DJANGO_API_KEY", "GROQ_KEY"]


class HostileProvider(BaseHTTPRequestHandler):
    """Answers like a provider that is broken in every way JSON allows: NUL characters, lone surrogates, NaN and
    Infinity, absurd token counts, and an echo of the caller's key with its middle masked."""

    def log_message(self, *args) -> None:
        pass

    def _masked_key(self) -> str:
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        return f"{key[:12]}...{key[-10:]}"

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if "/fail/" in self.path:
            body = (
                '{"error": {"message": "engine\\u0000 failed \\ud800 with NaN for key '
                + self._masked_key()
                + '", "type": "server_error\\u0000", "code": 500}}'
            ).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        finish = (
            '{"x_groq": {"id": "req\\u0000one"}, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],'
            ' "time_info": {"total_time": 0.5, "queue_time": NaN, "prompt_time": Infinity, "note": "a\\u0000b",'
            ' "blob": "' + "z" * 50_000 + '"}, "timings": {"predicted_ms": -Infinity, "predicted_n": 3},'
            ' "usage": {"prompt_tokens": -1, "completion_tokens": ' + str(2**40) + "}}"
        )
        events = [
            json.dumps({"choices": [{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]}),
            json.dumps({"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": None}]}),
            finish,
            "[DONE]",
        ]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in events:
            self.wfile.write(f"data: {event}\n\n".encode())
            self.wfile.flush()


@pytest.fixture
def hostile_provider():
    server = ThreadingHTTPServer(("127.0.0.1", 0), HostileProvider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def _stored_json(value) -> str:
    text = json.dumps(value, allow_nan=False, ensure_ascii=False)  # raises on NaN or Infinity
    assert "\x00" not in text
    return text


def test_hostile_timings_and_counts_are_stored_sanitized(hostile_provider, api_key):
    target = ProbeTargetFactory(base_url=f"{hostile_provider}/ok/v1")
    [run] = probe_target_run_now(target=target, suites=("speed",), workloads=["in-100"], requests=2)

    run.refresh_from_db()
    assert run.status == ProbeRun.Status.SUCCEEDED, (run.error_class, run.error_message)
    measurements = list(run.measurements.order_by("index"))
    assert len(measurements) == 2
    for measurement in measurements:
        assert measurement.output_tokens_source == "estimate"  # 2**40 is not a count we store
        assert 0 < measurement.output_tokens < 100
        assert measurement.input_tokens is not None and measurement.input_tokens >= 0
        assert measurement.request_id == "reqone"
        assert measurement.server_timings["time_info"] == {"total_time": 0.5}
        assert measurement.server_timings["timings"] == {"predicted_n": 3}
        assert len(_stored_json(measurement.server_timings)) < 2000


def test_hostile_error_text_is_stored_without_nul_or_key(hostile_provider, api_key):
    target = ProbeTargetFactory(base_url=f"{hostile_provider}/fail/v1")
    speed, compat = probe_target_run_now(
        target=target, suites=("speed", "compat"), workloads=["in-100"], requests=1
    )

    speed.refresh_from_db()
    assert speed.status == ProbeRun.Status.FAILED
    [measurement] = speed.measurements.all()
    assert measurement.error_class == "http_5xx"
    assert "engine failed" in measurement.error_message
    compat.refresh_from_db()
    outcomes = list(compat.compat_outcomes.all())
    assert outcomes and any("engine failed" in (o.message + o.detail) for o in outcomes)
    stored = [speed.error_message, measurement.error_message, compat.error_message]
    stored += [text for o in outcomes for text in (o.message, o.detail)]
    stored += [_stored_json(run.server_info) + _stored_json(run.request_params) for run in (speed, compat)]
    for text in stored:
        assert "\x00" not in text
        for size in range(8, len(api_key) + 1):
            assert api_key[:size] not in text and api_key[-size:] not in text


# --- the name of the key's variable ---


@pytest.mark.parametrize("name", FORBIDDEN_NAMES)
def test_the_model_refuses_names_of_other_secrets(name):
    target = ProbeTargetFactory.build(tool=ToolFactory(), api_key_env=name)
    with pytest.raises(ValidationError) as caught:
        target.full_clean()
    [message] = caught.value.message_dict["api_key_env"]
    assert message.startswith("api_key_env:") and RULE in message and "DJANGO_" in message


def test_the_model_accepts_key_and_token_names():
    for name in ("GROQ_API_KEY", "HF_TOKEN", ""):
        ProbeTargetFactory.build(tool=ToolFactory(), api_key_env=name).full_clean()


@pytest.mark.parametrize("name", ["DATABASE_URL", "AWS_SECRET_ACCESS_KEY"])
def test_services_refuse_names_of_other_secrets_on_create_and_update(name):
    actor = get_user_model().objects.create_user("staff-hardening", password="x", is_staff=True)
    tool = ToolFactory()
    with pytest.raises(ValidationError, match=RULE):
        probe_target_create(actor=actor, slug="evil", name="Evil", tool=tool, base_url="https://evil.example/v1",
                            model_id="m", api_key_env=name)
    assert not ProbeTarget.objects.filter(slug="evil").exists()

    target = probe_target_create(actor=actor, slug="good", name="Good", tool=tool,
                                 base_url="https://api.example.com/v1", model_id="m", api_key_env="GOOD_API_KEY")
    with pytest.raises(ValidationError, match=RULE):
        probe_target_update(actor=actor, target=target, data={"api_key_env": name})
    target.refresh_from_db()
    assert target.api_key_env == "GOOD_API_KEY"


def test_the_cli_refuses_a_secret_of_the_site_and_contacts_nobody(monkeypatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    monkeypatch.setenv("DJANGO_SECRET_KEY", "site-secret-never-sent-0123456789")
    try:
        with pytest.raises(CommandError, match=f"--api-key-env: .*{RULE}"):
            call_command("probe", "--base-url", f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "--model", "m",
                         "--api-key-env", "DJANGO_SECRET_KEY", "--suite", "speed", "--requests", "1",
                         stdout=io.StringIO())
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def test_a_stored_target_with_a_forbidden_name_fails_without_sending_the_secret(hostile_provider, monkeypatch):
    # A row written before the rule existed (or behind the validators' back) must not leak the variable either.
    monkeypatch.setenv("DJANGO_SECRET_KEY", "site-secret-never-sent-0123456789")
    target = ProbeTargetFactory(base_url=f"{hostile_provider}/ok/v1")
    ProbeTarget.objects.filter(pk=target.pk).update(api_key_env="DJANGO_SECRET_KEY")
    target.refresh_from_db()
    [run] = probe_target_run_now(target=target, suites=("speed",), workloads=["in-100"], requests=1)
    assert run.status == ProbeRun.Status.FAILED
    assert "api_key_env" in run.error_message and not run.measurements.exists()
