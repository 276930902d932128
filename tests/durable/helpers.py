"""Running tests/durable/app.py in subprocesses, each with a timeout and stopped by the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

APP = Path(__file__).with_name("app.py")


def start_app(args: Sequence[str], **env: str) -> subprocess.Popen[str]:
    """Start the app in a new process (stdout and stderr piped)."""
    return subprocess.Popen(
        [sys.executable, str(APP), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> str:
    """Wait for the process to exit 0 and return its stdout; kill it on timeout."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"the app did not finish in {timeout}s:\n{err[-3000:]}") from None
    assert process.returncode == 0, f"the app failed ({process.returncode}):\n{err[-3000:]}"
    return out


def stop(process: subprocess.Popen[str]) -> None:
    """Kill a process still running (teardown)."""
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def wait_for(path: Path, timeout: float = 60) -> None:
    """Wait until `path` exists."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path.name} did not appear in {timeout}s")
        time.sleep(0.05)


def kill9(process: subprocess.Popen[str]) -> None:
    """SIGKILL: no cleanup of any kind runs in the process."""
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
