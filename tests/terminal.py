"""Run a manage.py command with its stderr on a pseudo-terminal, as a person at a shell would, and keep what it
drew there (progress bars are drawn only on a terminal)."""
import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_with_stderr_on_a_terminal(*arguments: str, columns: int) -> tuple[int, bytes, bytes]:
    """(exit code, stdout, what was drawn on the terminal) of `manage.py arguments...`."""
    controller, terminal = pty.openpty()
    # A fresh pty is 0 columns wide, and tqdm draws nothing into zero columns; give it a real size.
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    drawn = bytearray()

    def drain() -> None:  # read while the command runs: a pty drops what is unread once it closes
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:
                return
            if not chunk:
                return
            drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    process = subprocess.Popen([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=terminal)
    os.close(terminal)
    stdout, _ = process.communicate(timeout=120)
    reader.join(timeout=10)
    os.close(controller)
    return process.returncode, stdout, bytes(drawn)
