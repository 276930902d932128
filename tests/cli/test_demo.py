"""`raf demo`, the README's first command, shows a tool call and an approval."""

from __future__ import annotations

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raf.cli", "demo", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_demo_shows_a_tool_call_and_an_approved_call() -> None:
    proc = _run()
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[tool call] order_status({'order_id': 'A-1002'})" in out
    assert "[tool result] processing" in out
    assert "[run paused: awaiting approval]" in out
    assert "[tool result] order A-1002 cancelled" in out
    assert "'A-1002': 'cancelled'" in out


def test_demo_with_a_denial_leaves_the_order_alone() -> None:
    proc = _run("--deny")
    assert proc.returncode == 0, proc.stderr
    assert "[tool result] Error: the user denied this call: keep the order" in proc.stdout
    assert "'A-1002': 'processing'" in proc.stdout
    assert "I left order A-1002 as it is" in proc.stdout
