"""Serve the site with a Celery worker and the beat scheduler, and stop all three together.

Not a Procfile runner: honcho 2.0 sends SIGTERM to each whole process group, so Celery's pool child dies
behind its parent's back (an ERROR line on every Ctrl-C), and SIGKILLs whatever still runs 5 s after the
first process ends, a fixed grace shorter than the worker's warm shutdown (5.8-8.5 s on a busy 2-core machine).
Here only each parent is signalled, and it gets STOP_GRACE_SECONDS to finish before its group is killed.
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
BIN = Path(sys.executable).parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    (ROOT / "var").mkdir(exist_ok=True)
    commands = {
        "worker": [str(BIN / "celery"), "-A", "config", "worker", "--loglevel", "INFO", "--concurrency", "1"],
        "beat": [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO"],
        "web": [
            str(BIN / "gunicorn"), "config.wsgi:application",
            "--bind", f"{args.host}:{args.port}", "--workers", "2", "--access-logfile", "-",
        ],
    }
    processes: dict[str, subprocess.Popen] = {}

    def stop(*_: object) -> None:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    # Each in a session of its own: Ctrl-C reaches this runner only, which asks each parent to stop gracefully,
    # instead of the terminal's SIGINT hitting every process at once (gunicorn's SIGINT drops requests in flight
    # and Celery's pool children would be signalled behind their parent's back).
    for name, cmd in commands.items():
        processes[name] = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    print(f"Inference Atlas on http://{args.host}:{args.port}/ (worker and beat running; Ctrl-C stops all)", flush=True)

    try:
        while all(process.poll() is None for process in processes.values()):
            time.sleep(0.5)
    finally:
        stop()
        for process in processes.values():
            try:
                process.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    failed = [name for name, process in processes.items() if process.returncode not in (0, -signal.SIGTERM)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
