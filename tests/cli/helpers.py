"""Run the `raf` program in a subprocess with a private data folder and a scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 60


def raf_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["RAF_DATA_DIR"] = str(tmp_path / "data")
    env.pop("RAF_MODEL", None)
    env.pop("RAF_SESSION_STORE", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def script(tmp_path: Path, replies: list[Any], name: str = "script.json") -> str:
    """A scripted model file; returns the `--model` value that plays it."""
    path = tmp_path / name
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def raf(
    tmp_path: Path,
    *args: str,
    stdin: str | None = None,
    timeout: float = TIMEOUT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `raf ARGS…`; `env` adds variables to the private environment."""
    return subprocess.run(
        [sys.executable, "-m", "raf.cli", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env={**raf_env(tmp_path), **(env or {})},
        cwd=tmp_path,
        timeout=timeout,
        check=False,
    )


def write_agent(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


APPROVING_AGENT = """
name: filer
instructions: You read files.
contexts:
  - kind: workspace
    name: project
    config: {root: ., policy: approve}
tools:
  - kind: file
    name: read_file
"""
"""An agent whose read_file asks for approval outside its folder."""
