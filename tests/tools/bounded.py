"""Run a piece of attack code in a child Python with capped memory, time and processes,
so that an attack that works on broken code fails its test instead of the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
from typing import Any

MEMORY_CAP = 1 << 30
"""Address space of the child (1 GiB): enough for raf, far below what a bomb needs."""


def _limits(memory: int) -> Any:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_bounded(code: str, *, timeout_s: float = 60.0, memory: int = MEMORY_CAP) -> Any:
    """Run `code` (which must print one JSON value as its last line) in a capped child;
    its decoded output, or an AssertionError that says how the child died."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            preexec_fn=_limits(memory),
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the attack ran past {timeout_s}s") from exc
    if done.returncode != 0:
        raise AssertionError(f"the child died ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def require_bubblewrap() -> None:
    """Fail (never skip) when bubblewrap does not work here: the test command installs it,
    so a sandbox test that silently passed without it would prove nothing."""
    from raf.tools.sandbox import SandboxKind, detect_sandbox

    assert detect_sandbox() is SandboxKind.BWRAP, (
        "bubblewrap does not work on this machine; scripts/test.sh installs it"
    )
