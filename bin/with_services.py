"""Run a command with PostgreSQL and Redis that answer, starting throw-away servers when none do.

    bin/with_services.py -- COMMAND [ARG...]

The command gets DATABASE_URL and REDIS_URL. A server is used as it is when it answers: the URL in
DATABASE_URL / REDIS_URL when set, otherwise the default address (overridable with
SERVICES_DEFAULT_DATABASE_URL / SERVICES_DEFAULT_REDIS_URL). Otherwise the Debian packages are installed
when missing and this run starts its own server on a free loopback port with trust authentication and
nothing kept on disk; it is stopped and its files removed when the command ends, fails, or the run is
interrupted (Ctrl-C, SIGTERM, SIGHUP). A server that already runs is never stopped or changed.
"""
import argparse
import ctypes
import functools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
RUNS_DIR = ROOT / "var" / "services"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/inference_atlas"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
START_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 30
PR_SET_PDEATHSIG = 1


class ServiceError(Exception):
    """A service could neither be found nor started; the message says what to do."""


def say(message: str) -> None:
    print(f"with_services: {message}", file=sys.stderr, flush=True)


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def die_with_parent(signum: int):
    """A preexec hook: the kernel sends `signum` to the server if this run is killed without a chance to clean up.

    Linux only; elsewhere a killed run leaves its servers behind."""
    if not sys.platform.startswith("linux"):
        return None

    def hook() -> None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum)
    return hook


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def postgres_problem(url: str) -> str | None:
    """Why the PostgreSQL server of `url` cannot be used, or None when it answers.

    The maintenance database is asked, not the URL's: the test runner creates its own database."""
    import psycopg

    parts = urlsplit(url)
    try:
        with psycopg.connect(urlunsplit(parts._replace(path="/postgres")), connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def redis_problem(url: str) -> str | None:
    """Why the Redis server of `url` cannot be used, or None when it answers."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3).ping()
        return None
    except redis.RedisError as exc:
        return str(exc) or type(exc).__name__


def apt_get(*args: str) -> None:
    prefix = [] if os.geteuid() == 0 else ["sudo"]
    if prefix and shutil.which("sudo") is None:
        raise ServiceError(f"`apt-get {' '.join(args)}` needs root and there is no sudo")
    # Through env(1): sudo resets the environment, and debconf must not ask questions.
    command = [*prefix, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", *args]
    if subprocess.run(command).returncode != 0:
        raise ServiceError(f"`{' '.join(command)}` failed")


@functools.cache
def apt_update() -> None:
    apt_get("update", "-qq")


def apt_install(package: str) -> None:
    if shutil.which("apt-get") is None:
        raise ServiceError(
            f"{package} is not installed and there is no apt-get to install it: install it, or point "
            "DATABASE_URL / REDIS_URL at servers that answer"
        )
    say(f"installing the Debian package {package}")
    apt_update()
    apt_get("install", "-y", "-qq", package)


def postgres_bin_dir() -> Path | None:
    """Debian keeps the server binaries out of PATH, one folder per major version; take the newest."""
    versions = sorted(
        (path for path in Path("/usr/lib/postgresql").glob("*/bin") if (path / "initdb").exists()),
        key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
    )
    if versions:
        return versions[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def wait_until(ready, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceError(f"{what} exited with code {process.returncode}:\n{log.read_text(errors='replace')}")
        if ready():
            return
        time.sleep(0.2)
    raise ServiceError(f"{what} did not answer within {START_TIMEOUT_SECONDS} s:\n{log.read_text(errors='replace')}")


def stop_process(process: subprocess.Popen, signum: int) -> None:
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@dataclass
class Owner:
    """The account a throw-away PostgreSQL runs as: PostgreSQL refuses to run as root."""

    uid: int | None = None
    gid: int | None = None

    @classmethod
    def for_postgres(cls) -> "Owner":
        if os.geteuid() != 0:
            return cls()
        try:
            account = pwd.getpwnam("postgres")
        except KeyError as exc:
            raise ServiceError("running as root needs the `postgres` account (Debian's postgresql package)") from exc
        return cls(uid=account.pw_uid, gid=account.pw_gid)

    @property
    def popen_args(self) -> dict:
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def start_postgres(stack: ExitStack, run_dir: Path, wanted_url: str) -> str:
    import psycopg
    from psycopg import sql

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        apt_install("postgresql")
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise ServiceError("the postgresql package installed no initdb")
    owner = Owner.for_postgres()
    # Run as root, the server runs as the postgres account, which may not enter the checkout (a `mktemp -d`
    # clone is mode 0700), so the cluster lives in a private temporary folder of its own, handed to that
    # account, and var/ holds a link to it; opening up the checkout's folders instead would loosen permissions
    # that are not this run's to change. The short path also keeps the server's socket under the 107-byte limit.
    cluster_dir = Path(tempfile.mkdtemp(prefix="atlas-test-postgres-"))
    stack.callback(shutil.rmtree, cluster_dir, ignore_errors=True)
    if owner.uid is not None:
        os.chown(cluster_dir, owner.uid, owner.gid)
    handle = run_dir / "postgres"
    handle.symlink_to(cluster_dir)
    data_dir = cluster_dir / "data"
    log = cluster_dir / "server.log"
    with log.open("ab") as log_file:
        initdb = subprocess.run(
            [str(bin_dir / "initdb"), "--pgdata", str(data_dir), "--username", "postgres", "--auth", "trust",
             "--encoding", "UTF8", "--locale", "C.UTF-8", "--no-sync"],
            cwd=cluster_dir, stdout=log_file, stderr=subprocess.STDOUT, **owner.popen_args,
        )
    if initdb.returncode != 0:
        raise ServiceError(f"initdb failed:\n{log.read_text(errors='replace')}")

    for _attempt in range(3):
        port = free_loopback_port()
        with log.open("ab") as log_file:
            server = subprocess.Popen(
                # Durability is worth nothing to a server removed at the end of the run.
                [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                 "-c", f"unix_socket_directories={cluster_dir}", "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off"],
                cwd=cluster_dir, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGQUIT), **owner.popen_args,
            )
        admin_url = f"postgres://postgres@127.0.0.1:{port}/postgres"
        try:
            wait_until(lambda: postgres_problem(admin_url) is None, server, log, "PostgreSQL")
        except ServiceError:
            stop_process(server, signal.SIGQUIT)
            if "could not bind" in log.read_text(errors="replace"):
                continue  # another program took the free port between the check and the bind
            raise
        # Fast shutdown: ends the sessions a killed test run may have left open.
        stack.callback(stop_process, server, signal.SIGINT)
        break
    else:
        raise ServiceError(f"PostgreSQL found no free port:\n{log.read_text(errors='replace')}")

    database = urlsplit(wanted_url).path.lstrip("/") or "postgres"
    if database != "postgres":
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    say(f"started a throw-away PostgreSQL on 127.0.0.1:{port} (files in {cluster_dir})")
    return f"postgres://postgres@127.0.0.1:{port}/{database}"


def start_redis(stack: ExitStack, run_dir: Path, wanted_url: str) -> str:
    if shutil.which("redis-server") is None:
        apt_install("redis-server")
    data_dir = run_dir / "redis"
    data_dir.mkdir()
    stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
    log = data_dir / "server.log"
    for _attempt in range(3):
        port = free_loopback_port()
        with log.open("ab") as log_file:
            server = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(data_dir), "--daemonize", "no"],
                cwd=data_dir, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        try:
            wait_until(lambda: redis_problem(f"redis://127.0.0.1:{port}/0") is None, server, log, "Redis")
        except ServiceError:
            stop_process(server, signal.SIGTERM)
            if "Address already in use" in log.read_text(errors="replace"):
                continue
            raise
        stack.callback(stop_process, server, signal.SIGTERM)
        break
    else:
        raise ServiceError(f"Redis found no free port:\n{log.read_text(errors='replace')}")
    database = urlsplit(wanted_url).path.lstrip("/") or "0"
    say(f"started a throw-away Redis on 127.0.0.1:{port}")
    return f"redis://127.0.0.1:{port}/{database}"


def remove_abandoned_runs() -> None:
    """Delete the files of earlier runs that were killed before they could clean up.

    Their servers already stopped with them (see die_with_parent); a run folder is named after its process id."""
    if not RUNS_DIR.exists():
        return
    for run_dir in RUNS_DIR.iterdir():
        if run_dir.name.isdigit() and not process_exists(int(run_dir.name)):
            handle = run_dir / "postgres"
            if handle.is_symlink():
                shutil.rmtree(handle.resolve(), ignore_errors=True)
            shutil.rmtree(run_dir, ignore_errors=True)


def provide(stack: ExitStack) -> dict[str, str]:
    """DATABASE_URL and REDIS_URL of servers that answer, starting the missing ones under `stack`."""
    remove_abandoned_runs()
    run_dir = RUNS_DIR / str(os.getpid())
    urls = {}
    starters = {
        "DATABASE_URL": (DEFAULT_DATABASE_URL, postgres_problem, start_postgres),
        "REDIS_URL": (DEFAULT_REDIS_URL, redis_problem, start_redis),
    }
    for variable, (default, problem_of, start) in starters.items():
        url = os.environ.get(variable) or os.environ.get(f"SERVICES_DEFAULT_{variable}") or default
        if variable == "DATABASE_URL" and not urlsplit(url).scheme.startswith("postgres"):
            say("DATABASE_URL is not PostgreSQL; using it as it is")
            urls[variable] = url
            continue
        problem = problem_of(url)
        if problem is None:
            say(f"using the server at {redacted(url)}")
            urls[variable] = url
            continue
        say(f"{redacted(url)} cannot be used ({problem})")
        if not run_dir.exists():
            run_dir.mkdir(parents=True)
            stack.callback(shutil.rmtree, run_dir, ignore_errors=True)
        urls[variable] = start(stack, run_dir, url)
    return urls


def redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@")))


def run_command(command: list[str], urls: dict[str, str]) -> int:
    """Run the command to its end; a SIGTERM or SIGHUP to this run is passed on and still leads to clean-up.

    Ctrl-C reaches the command from the terminal directly (same process group), so this run only waits for
    it to finish its own teardown, like a shell does. Handlers, unlike ignored signals, are reset by exec, so
    the command starts with the default ones."""
    child: subprocess.Popen | None = None
    received: list[int] = []

    def pass_on(signum: int, _frame) -> None:
        received.append(signum)
        if child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)

    def leave_to_command(_signum: int, _frame) -> None:
        pass

    handlers = {signal.SIGTERM: pass_on, signal.SIGHUP: pass_on, signal.SIGINT: leave_to_command}
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        child = subprocess.Popen(command, env={**os.environ, **urls})
        if received:
            child.send_signal(signal.SIGTERM)
        returncode = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        return 128 + received[0]
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")

    def stop_starting(signum: int, _frame) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop_starting)
    with ExitStack() as stack:
        try:
            urls = provide(stack)
        except ServiceError as exc:
            say(f"error: {exc}")
            return 1
        except KeyboardInterrupt:
            say("interrupted while starting the services")
            return 128 + signal.SIGINT
        returncode = run_command(command, urls)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
