"""Peers for client tests: llm-katan (OpenAI, Anthropic and Google APIs) and a fault server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def run_katan(home: Path, providers: str, *extra: str) -> Iterator[str]:
    """llm-katan in echo mode on loopback serving `providers`; yields its base URL."""
    port = _free_port()
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
            providers,
            "--stats-file",
            str(home / "stats.json"),
            "--log-level",
            "warning",
            *extra,
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


@pytest.fixture(scope="session")
def katan(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llm-katan speaking OpenAI, Anthropic and Google (Vertex AI); yields its base URL."""
    with run_katan(tmp_path_factory.mktemp("katan"), "openai,anthropic,vertexai") as url:
        yield url


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()
