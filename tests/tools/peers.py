"""Start and stop real peer servers (npm binaries, Python scripts) on loopback for tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
BIN = PEERS / "node_modules" / ".bin"
LOOPBACK_PRELOAD = PEERS / "loopback.cjs"
PY_SERVER = Path(__file__).parent / "mcp" / "mcp_py_server.py"


def npm_bin(name: str) -> str:
    """Path of an npm binary installed by scripts/test.sh; fails the test if missing."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `npm install` in tests/peers (scripts/test.sh does)")
    if shutil.which("node") is None:
        pytest.fail("node is not installed")
    return str(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


@contextlib.contextmanager
def serve(
    cmd: Sequence[str], port: int, *, env: dict[str, str] | None = None, timeout: float = 30.0
) -> Iterator[subprocess.Popen[bytes]]:
    """Run a server process until the block ends; it must listen on 127.0.0.1:port."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.Popen(
        list(cmd), env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, proc, timeout)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def node_loopback_env(port: int) -> dict[str, str]:
    """Environment that makes a Node server bind only 127.0.0.1 on `port`."""
    return {"PORT": str(port), "NODE_OPTIONS": f"--require {LOOPBACK_PRELOAD}"}


def py_server_cmd(*args: str) -> list[str]:
    return [sys.executable, str(PY_SERVER), *args]
