"""Path rules judged by file identity (device and inode) as well as by name: a hard link or
a bind-mounted alias of a file a read rule protects is refused under its other name too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from raf.tools.workspace import Access, RuleAction, WorkspaceScope

MAX_IDENTITY_WALK = 20_000
"""Most workspace entries looked at to learn which files the read rules protect."""


def mounts_inside(root: Path) -> list[str]:
    """Mount points strictly inside `root` (from /proc/self/mountinfo; none without it)."""
    prefix = str(root).rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) > 4:
            point = _unescape(fields[4])
            if point.startswith(prefix):
                found.append(point)
    return found


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    if "\\" not in text:
        return text
    raw = text.encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "surrogateescape")


class IdentityGuard:
    """For one call: whether a file opened under one name is a file the read rules
    protect under another (computed only when the file could have another name)."""

    def __init__(self, scope: WorkspaceScope, *, approved: bool) -> None:
        self.scope = scope
        self.approved = approved
        self.active = scope.restricts([Access.READ])
        self._mounts: list[str] | None = None
        self._protected: dict[tuple[int, int], str] | None = None
        self._overflow = False

    def refusal(self, relative: str, st: os.stat_result) -> str | None:
        """Why reading the file `relative` (below the root) with stat `st` is refused, or
        None when no read rule protects it under another name."""
        if not self.active or not stat.S_ISREG(st.st_mode):
            return None
        if st.st_nlink <= 1 and not self._under_mount(relative):
            return None  # one name, no mount: its name was already judged
        protected = self._protected_files()
        if protected is None:
            return (
                f"{relative!r} may be another name of a protected file, and the workspace is "
                f"too large (over {MAX_IDENTITY_WALK} entries) to prove it is not"
            )
        other = protected.get((st.st_dev, st.st_ino))
        if other is None or other == relative:
            return None
        return f"{relative!r} is the same file as {other!r}, which a read rule protects"

    def _under_mount(self, relative: str) -> bool:
        if self._mounts is None:
            self._mounts = mounts_inside(self.scope.real_root)
        full = str(self.scope.real_root / relative)
        return any(full == m or full.startswith(m.rstrip("/") + "/") for m in self._mounts)

    def _protected_files(self) -> dict[tuple[int, int], str] | None:
        if self._protected is not None or self._overflow:
            return self._protected
        found: dict[tuple[int, int], str] = {}
        seen = 0
        root = self.scope.real_root
        for dirpath, _dirs, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
            below = os.path.relpath(dirpath, root)
            for name in filenames:
                seen += 1
                if seen > MAX_IDENTITY_WALK:
                    self._overflow = True
                    return None
                rel = name if below == "." else f"{below}/{name}"
                action = self.scope.rule_action(rel, Access.READ)
                if action is RuleAction.DENY or (
                    action is RuleAction.APPROVE and not self.approved
                ):
                    try:
                        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        found.setdefault((st.st_dev, st.st_ino), rel)
        self._protected = found
        return found
