"""Serve the site with a Celery worker and the beat scheduler; restart any of them that dies; stop all on Ctrl-C.

Not a Procfile runner: honcho 2.0 sends SIGTERM to each whole process group, so Celery's pool child dies
behind its parent's back (an ERROR line on every Ctrl-C), and SIGKILLs whatever still runs 5 s after the
first process ends, a fixed grace shorter than the worker's warm shutdown (5.8-8.5 s on a busy 2-core machine).
Here only each parent is signalled, and it gets STOP_GRACE_SECONDS to finish before its group is killed.

A process that dies while the runner is not stopping (the OS killed the worker for memory, beat crashed) is
started again after a pause that doubles with each death in a row, up to MAX_RESTART_DELAY_SECONDS, and goes
back to the first once it has run for STABLE_AFTER_SECONDS: the others, the site among them, keep serving.
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE_SECONDS = 15
FIRST_RESTART_DELAY_SECONDS = 1.0
MAX_RESTART_DELAY_SECONDS = 30.0
STABLE_AFTER_SECONDS = 60.0
BIN = Path(sys.executable).parent


class Supervised:
    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.command = command
        self.process: subprocess.Popen | None = None
        self.started_at = 0.0
        self.deaths_in_a_row = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        # A session of its own: Ctrl-C reaches this runner only, which asks each parent to stop gracefully,
        # instead of the terminal's SIGINT hitting every process at once (gunicorn's SIGINT drops requests in
        # flight and Celery's pool children would be signalled behind their parent's back).
        self.process = subprocess.Popen(self.command, cwd=ROOT, start_new_session=True)
        self.started_at = time.monotonic()
        self.restart_at = None

    def watch(self, now: float) -> None:
        """Start again a process that died, once its pause is over."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                print(f"serve: starting {self.name} again", flush=True)
                self.start()
            return
        if self.process.poll() is None:
            return
        stable = now - self.started_at >= STABLE_AFTER_SECONDS
        self.deaths_in_a_row = 1 if stable else self.deaths_in_a_row + 1
        delay = min(FIRST_RESTART_DELAY_SECONDS * 2 ** (self.deaths_in_a_row - 1), MAX_RESTART_DELAY_SECONDS)
        print(f"serve: {self.name} exited with {self.process.returncode}; restarting in {delay:g} s", flush=True)
        self.restart_at = now + delay

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()

    def wait_stopped(self) -> None:
        try:
            self.process.wait(timeout=STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    (ROOT / "var").mkdir(exist_ok=True)
    services = [
        Supervised("worker", [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO",
                              "--concurrency", "1"]),
        Supervised("beat", [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO"]),
        Supervised("web", [str(BIN / "gunicorn"), "config.wsgi:application", "-c", str(ROOT / "config" / "gunicorn.py"),
                           "--bind", f"{args.host}:{args.port}", "--workers", "2", "--access-logfile", "-"]),
    ]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    for service in services:
        service.start()
    print(f"Inference Atlas on http://{args.host}:{args.port}/ (worker and beat running; Ctrl-C stops all)", flush=True)

    try:
        while not stopping:
            now = time.monotonic()
            for service in services:
                service.watch(now)
            time.sleep(0.5)
    finally:
        for service in services:
            service.stop()
        for service in services:
            service.wait_stopped()
    failed = [service.name for service in services if service.process.returncode not in (0, -signal.SIGTERM)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
