"""Private database servers for tests and benchmarks: a PostgreSQL cluster and a Redis
server from the Debian packages, each on loopback, a free port and a temporary folder.

Real servers rather than mocks: the stores' compare-and-swap depends on what the server
really does. Both are started as a child process and stopped by `stop()` (or at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT = 60.0
"""Seconds a server may take to accept connections before the start counts as failed."""

PG_USER = "raf"
PG_PASSWORD = "raf-test-secret"
"""A password, so that tests can check it never shows in an error."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def postgres_bin(name: str) -> str:
    """A PostgreSQL program from the newest Debian install (/usr/lib/postgresql/N/bin)."""
    found = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return found[-1]
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise RuntimeError(
        f"PostgreSQL's {name} was not found in /usr/lib/postgresql/*/bin or on PATH: "
        "install the Debian package 'postgresql' (scripts/test.sh does)"
    )


def _as_unprivileged() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the 'postgres' user the
    Debian package creates."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise RuntimeError("running as root needs setpriv (util-linux) to drop to 'postgres'")
    return [setpriv, "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]


@dataclass(kw_only=True)
class Server:
    """A running server: how to reach it and how to stop it."""

    name: str
    url: str
    """How a client reaches it (with the password, for PostgreSQL)."""
    process: subprocess.Popen[bytes]
    folder: Path
    log: Path
    stopped: bool = field(default=False)
    command: list[str] = field(default_factory=list)
    """How it was started: `resume` starts it so again, on its own data."""

    def halt(self) -> None:
        """Stop the server as an operator would (PostgreSQL's fast shutdown), keeping
        its data for `resume`."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=30)

    def resume(self) -> None:
        """Start a halted server again, on the same port and data; returns once it
        accepts connections (and, for PostgreSQL, logins)."""
        assert self.command, f"{self.name} cannot be started again"
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        _wait_for_port(self, port)
        if self.name == "PostgreSQL":
            _wait_for_postgres(self)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.process.poll() is None:
            # SIGINT is PostgreSQL's "fast" shutdown; Redis treats it like SIGTERM.
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)

    def log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


def _wait_for_port(server: Server, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            server.stop()
            raise RuntimeError(f"{server.name} exited at start:\n{server.log_tail()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    server.stop()
    raise RuntimeError(f"{server.name} did not accept connections in {START_TIMEOUT:.0f}s")


def start_postgres(*, durable: bool = False) -> Server:
    """A fresh cluster with a password-protected superuser `raf` and a database `raf`.
    `durable=False` turns fsync off (fast tests); benchmarks pass True for real figures."""
    drop = _as_unprivileged()
    # The 'postgres' user must reach the folder: $TMPDIR may lie inside root's home.
    folder = Path(tempfile.mkdtemp(prefix="raf-pg-", dir="/tmp" if drop else None))
    data, log = folder / "data", folder / "postgres.log"
    pwfile = folder / "pw"
    pwfile.write_text(PG_PASSWORD + "\n")
    if drop:
        shutil.chown(folder, user="postgres", group="postgres")
        shutil.chown(pwfile, user="postgres", group="postgres")
    os.chmod(folder, 0o700)
    made = subprocess.run(
        [
            *drop,
            postgres_bin("initdb"),
            "-D",
            str(data),
            "-U",
            PG_USER,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ],
        capture_output=True,
        timeout=START_TIMEOUT,
    )
    pwfile.unlink()
    if made.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {made.stderr.decode(errors='replace')[-3000:]}")
    port = free_port()
    settings = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(folder),
        "max_connections": "200",
        "shared_buffers": "32MB",
        "fsync": "on" if durable else "off",
        "synchronous_commit": "on" if durable else "off",
        "full_page_writes": "on" if durable else "off",
    }
    args = [postgres_bin("postgres"), "-D", str(data)]
    for key, value in settings.items():
        args += ["-c", f"{key}={value}"]
    with open(log, "wb") as out:
        if drop:
            shutil.chown(log, user="postgres", group="postgres")
        process = subprocess.Popen(
            [*drop, *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(
        name="PostgreSQL",
        url=f"postgresql://{PG_USER}:{PG_PASSWORD}@127.0.0.1:{port}/{PG_USER}",
        process=process,
        folder=folder,
        log=log,
        command=[*drop, *args],
    )
    atexit.register(server.stop)
    _wait_for_port(server, port)
    _wait_for_postgres(server)
    create = subprocess.run(
        [*drop, postgres_bin("createdb"), "-h", str(folder), "-p", str(port), "-U", PG_USER, "raf"],
        env={**os.environ, "PGPASSWORD": PG_PASSWORD},
        capture_output=True,
        timeout=START_TIMEOUT,
    )
    if create.returncode != 0:
        server.stop()
        raise RuntimeError(f"createdb failed: {create.stderr.decode(errors='replace')}")
    return server


def _wait_for_postgres(server: Server) -> None:
    """The port opens before the cluster accepts logins (startup recovery)."""
    deadline = time.monotonic() + START_TIMEOUT
    ready = postgres_bin("pg_isready")
    while time.monotonic() < deadline:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        done = subprocess.run(
            [ready, "-h", "127.0.0.1", "-p", port, "-t", "2"], capture_output=True, timeout=10
        )
        if done.returncode == 0:
            return
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"PostgreSQL did not become ready:\n{server.log_tail()}")


def start_redis(*, password: str | None = None) -> Server:
    """A Redis server that keeps nothing on disk (asking for `password` when given)."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).exists():
        raise RuntimeError(
            "redis-server was not found: install the Debian package 'redis-server' "
            "(scripts/test.sh does)"
        )
    folder = Path(tempfile.mkdtemp(prefix="raf-redis-"))
    log = folder / "redis.log"
    port = free_port()
    args = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(folder),
        "--logfile",
        str(log),
    ]
    if password:
        args += ["--requirepass", password]
    process = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    server = Server(
        name="Redis",
        url=f"redis://{f':{password}@' if password else ''}127.0.0.1:{port}/0",
        process=process,
        folder=folder,
        log=log,
    )
    atexit.register(server.stop)
    _wait_for_port(server, port)
    return server
