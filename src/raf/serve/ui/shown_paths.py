"""Paths as the UI's API shows them: relative to a folder the caller knows (raf's data
folder, the folder the server was started in), never the server's absolute layout,
which tells a caller the account name, the home folder and where else to look."""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: str | os.PathLike[str], *bases: str | os.PathLike[str]) -> str:
    """`path` relative to the first of `bases` that holds it (`.` for a base itself);
    outside all of them, `…/` and its last part only."""
    target = Path(os.path.abspath(path))
    for base in bases:
        try:
            relative = target.relative_to(os.path.abspath(base))
        except ValueError:
            continue
        return relative.as_posix() or "."
    return f"…/{target.name}"
