"""Peers for client tests: llm-katan (OpenAI and Anthropic wire formats) and a fault server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.faultserver import FaultServer

KATAN_MODEL = "echo-model"
KATAN_KEY = "sk-katan-test-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _katan_binary() -> str:
    beside = Path(sys.executable).parent / "llm-katan"
    found = str(beside) if beside.exists() else shutil.which("llm-katan")
    assert found, "llm-katan is not installed: pip install -e '.[dev]'"
    return found


@pytest.fixture(scope="session")
def katan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llm-katan in echo mode on loopback; yields its base URL (without /v1)."""
    port = _free_port()
    home = tmp_path_factory.mktemp("katan")
    log = (home / "katan.log").open("w")
    proc = subprocess.Popen(
        [
            _katan_binary(),
            "--model",
            KATAN_MODEL,
            "--backend",
            "echo",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--providers",
            "openai,anthropic",
            "--stats-file",
            str(home / "stats.json"),
            "--log-level",
            "warning",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HOME": str(home)},
    )
    deadline = time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, (home / "katan.log").read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, "llm-katan did not start within 60s"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()
