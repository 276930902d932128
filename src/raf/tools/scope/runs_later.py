"""Paths whose content a tool on the user's machine runs later without asking (git's
config and hooks, an editor's folder settings, direnv's .envrc): the one rule, used by the
file tools and by every command sandbox, that no raf tool ever creates or changes them."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

VCS_FOLDERS: dict[str, tuple[str, ...]] = {
    ".git": ("config", "config.worktree", "hooks"),
    ".hg": ("hgrc",),
}
"""Version-control folders, and the parts of each that the tool runs as code (git's
core.fsmonitor, core.hooksPath, aliases and hooks; Mercurial's [hooks] and
[extensions]). Shell prompts and editors run `git status` in every folder the user
enters or opens, so a planted folder runs at once. The folder's name may never be
created, replaced or removed; its other parts (objects, refs, the index) stay the
tool's own data, which commands such as `git commit` change."""
GIT_NESTED = ("modules", "worktrees")
"""Folders inside `.git` that hold the git folders of submodules and linked worktrees
(their config and hooks are run by `git status` in the superproject)."""
TOOL_CONFIG = (".envrc", ".vscode", ".idea")
"""Names whose whole subtree configures programs that run when the folder is opened or
entered: direnv's .envrc (run on `cd` under direnv's common whitelist setting), VS
Code's folder settings and tasks (interpreter and tool paths it runs on open, tasks
that run on folder open), JetBrains IDEs' project folder (run configurations and
startup tasks)."""
ROOT_STAND_INS: dict[str, bool] = {
    ".git": True,
    ".hg": True,
    ".vscode": True,
    ".idea": True,
    ".envrc": False,
}
"""The protected names a command may not create at the workspace root (True: a folder),
held by a read-only stand-in while the command runs where the name does not exist."""


def _parts(relative: str) -> list[str]:
    text = unicodedata.normalize("NFKC", relative).casefold()
    return [p for p in text.split("/") if p not in ("", ".")]


def runs_code_later(relative: str) -> bool:
    """True for a path (relative to the workspace root, POSIX separators) that no tool may
    write or delete: a version-control folder itself (`.git`, `.hg`, at any depth), the
    parts of one that run code, and anything at or below a TOOL_CONFIG name. Matched in
    any case and Unicode form, so a look-alike that a case-insensitive disk maps onto
    the real name is caught too."""
    parts = _parts(relative)
    for i, part in enumerate(parts):
        if part in TOOL_CONFIG:
            return True
        code = VCS_FOLDERS.get(part)
        if code is None:
            continue
        rest = parts[i + 1 :]
        if not rest or rest[0] in code:
            return True
        if part == ".git" and rest[0] in GIT_NESTED and any(p in code for p in rest[1:]):
            return True
    return False


def is_vcs_folder(relative: str) -> bool:
    """True when the path's last part is a version-control folder's name (`.git`, `.hg`)."""
    parts = _parts(relative)
    return bool(parts) and parts[-1] in VCS_FOLDERS


def creates_vcs_folder(root: Path, relative: str) -> bool:
    """True when writing `relative` would first create a `.git` or `.hg` folder that does
    not exist yet (`sub/.git/HEAD` where `sub/.git` is missing): a new repository in a
    folder is planted code's first step, whatever file comes next."""
    given = [p for p in relative.split("/") if p not in ("", ".")]
    folded = _parts(relative)
    if len(folded) != len(given):
        return any(p in VCS_FOLDERS for p in folded)  # NFKC changed the shape: refuse
    for i, part in enumerate(folded[:-1]):
        if part in VCS_FOLDERS and not os.path.lexists(root.joinpath(*given[: i + 1])):
            return True
    return False
