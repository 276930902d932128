"""Where a path leads and what may be done there: checks on the text, the resolved
place, and the verdict for one access."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raf.tools.scope.path_rules import Access, RuleAction

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


@dataclass(frozen=True, kw_only=True, slots=True)
class ResolvedPath:
    """Where a path leads: the resolved location and whether it stays inside the root."""

    inside: bool
    path: Path
    reason: str = ""
    relative: str | None = None
    """POSIX path relative to the root when inside ("." for the root itself)."""
    exists: bool = False
    links: int = 1
    """Hard-link count of a non-directory (1 when unknown or a directory)."""
    error: bool = False
    """The path itself is malformed (NUL byte, too long, …): refused under every policy."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """The verdict for one access to one path."""

    action: RuleAction
    resolved: ResolvedPath
    access: Access
    reason: str


def outside_path(text: str, follow_final: bool) -> Path:
    """Where an absolute path outside the root really leads (the link itself if not
    following the final component)."""
    if follow_final:
        return Path(os.path.realpath(text))
    head, tail = os.path.split(text.rstrip("/") or "/")
    if tail in ("", ".", ".."):
        return Path(os.path.realpath(text))
    return Path(os.path.realpath(head or "/")) / tail


def _outside(real: Path, reason: str) -> ResolvedPath:
    exists = os.path.lexists(real)
    return ResolvedPath(inside=False, path=real, reason=reason, exists=exists)


GIT_CODE_PATHS = (".git/config", ".git/config.worktree", ".git/hooks")
"""Paths inside a repository whose content git runs as code (hooks, core.fsmonitor…);
the whole rule, with nested repositories and other tools' files, is
`raf.tools.scope.runs_later`."""


def _check_text(text: Any) -> str:
    if not isinstance(text, str):
        return "the path must be text"
    if not text:
        return "the path is empty"
    if "\x00" in text:
        return "the path contains a NUL byte"
    if len(text) > MAX_PATH_CHARS:
        return f"the path is longer than {MAX_PATH_CHARS} characters"
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        return "the path is not valid Unicode (lone surrogate)"
    if any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        return f"a path component is longer than {MAX_NAME_BYTES} bytes"
    return ""


def _is_case_insensitive(real: Path) -> bool:
    text = str(real)
    swapped = text.swapcase()
    if swapped == text:
        return False
    try:
        return os.path.samefile(text, swapped)
    except OSError:
        return False
