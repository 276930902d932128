"""What an attacker's command plants for the user's next `git status`, and a real git run
that shows whether the plant runs (it touches FLAG when it does)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

FSMONITOR = "[core]\\n\\tfsmonitor = touch FLAG\\n"
PLANT_REPOSITORY = (
    "mkdir -p .git/hooks .git/objects .git/refs && echo 'ref: refs/heads/main' > .git/HEAD "
    f"&& printf '{FSMONITOR}' > .git/config"
)
"""The command that made a folder that is no repository run code at the next git status."""
PLANT_NESTED = (
    "mkdir -p sub/.git/hooks sub/.git/objects sub/.git/refs && "
    "echo 'ref: refs/heads/main' > sub/.git/HEAD && "
    f"printf '{FSMONITOR}' > sub/.git/config"
)
"""The same, in a folder below the root."""
INIT_NESTED = "mkdir -p new && git init -q new && git -C new config core.fsmonitor 'touch FLAG'"
"""`git init` in a new folder and a config that runs code."""
REPLANT_CONFIG = f"printf '{FSMONITOR}' >> sub/.git/config"
"""An existing nested repository's config given a command to run."""


def git_runs_code(folder: Path) -> bool:
    """Run the user's `git status` in `folder` (no global or system config; any owner is
    trusted, so git's ownership check cannot hide a plant) and say whether FLAG appeared
    anywhere below the folder's workspace."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.directory",
        "GIT_CONFIG_VALUE_0": "*",
    }
    subprocess.run(
        ["git", "status"], cwd=folder, env=env, capture_output=True, timeout=60, check=False
    )
    return (folder / "FLAG").exists()


def make_repository(folder: Path) -> None:
    """A git repository with one commit's worth of config (no remote)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
