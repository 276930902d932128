"""What a sandboxed command may not change in its workspace, and the check after it.

A command is opaque: raf cannot know which paths it will write. Paths that exist are held
by mounts (bubblewrap's, or the container's): covered where a rule forbids reading them,
read-only where a rule, or the rule of paths that run code later
(`raf.tools.scope.runs_later`), forbids changing them, and a version-control folder is
made a mount point so it cannot be removed, renamed or replaced. At the workspace root,
each protected name that does not exist is held by a read-only stand-in made just for
the command, so it cannot be created there at all. What a mount cannot hold — a
protected name or a path a write rule covers, created deeper in the tree — is found
after the command, once every process of it is gone (the sandbox's PID namespace or
the container died with it), and moved out of the workspace before the call returns."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from raf.tools.scope.runs_later import ROOT_STAND_INS, VCS_FOLDERS, is_vcs_folder
from raf.tools.workspace import Access, ResolvedPath, RuleAction, WorkspaceScope

MAX_MASKS = 1_000
"""Most mounts made to enforce path rules in the sandbox; beyond it a command needs approval."""
GIT_DATA = frozenset({"objects", "refs", "logs", "lfs"})
"""Folders of a version-control folder that hold only data: not walked (they can be huge,
and nothing in them runs)."""
_CHANGING = (Access.WRITE, Access.DELETE)


def restricts(action: RuleAction, approved: bool) -> bool:
    """True when `action` keeps a command from a path (approve: unless it was approved)."""
    return action is RuleAction.DENY or (action is RuleAction.APPROVE and not approved)


def writes_need_approval(scope: WorkspaceScope) -> bool:
    """True when a rule asks a person before some path is changed or deleted: a command
    may then need that person whatever it does, since raf cannot tell beforehand which
    paths it writes."""
    return any(r.action is RuleAction.APPROVE and r.access & set(_CHANGING) for r in scope.rules)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    """What changes when a path is replaced or (for a file or link) written."""
    if stat.S_ISDIR(st.st_mode):
        return (st.st_dev, st.st_ino, st.st_mode)
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)


def _kept(scope: WorkspaceScope, where: ResolvedPath, approved: bool) -> bool:
    """True when a command may not change or delete `where` (a rule, or runs-code-later)."""
    return any(restricts(scope.decide_resolved(where, a).action, approved) for a in _CHANGING)


def _ruled(scope: WorkspaceScope, relative: str, approved: bool) -> bool:
    """True when a path rule itself (not the runs-code-later rule) keeps `relative`."""
    actions = (scope.rule_action(relative, a) or RuleAction.ALLOW for a in _CHANGING)
    return any(restricts(action, approved) for action in actions)


def _entries(root: Path) -> Iterator[tuple[Path, list[str], list[str], int]]:
    """The workspace's folders (os.fwalk, links not followed), without the data folders
    of version-control folders."""
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
        here = Path(dirpath)
        if any(part in VCS_FOLDERS for part in here.relative_to(root).parts):
            dirnames[:] = [d for d in dirnames if d not in GIT_DATA]
        yield here, dirnames, filenames, dir_fd


def _absolute_masks(scope: WorkspaceScope, approved: bool) -> list[str] | None:
    """Mounts for rules on absolute paths outside the root (None: one would cover it)."""
    masks: list[str] = []
    for rule in scope.rules:
        if not restricts(rule.action, approved) or not rule.access & {Access.READ, *_CHANGING}:
            continue
        pattern = os.path.expanduser(rule.pattern)
        if not pattern.startswith("/"):
            continue
        real = Path(os.path.realpath(_literal_prefix(pattern)))
        if real.is_relative_to(scope.real_root):
            continue  # a rule inside the root: judged per path by the walk
        if scope.real_root.is_relative_to(real):
            return None  # covering it would cover the workspace (or all of /)
        if not os.path.lexists(real):
            continue
        if Access.READ in rule.access and real.is_dir():
            masks += ["--tmpfs", str(real)]
        elif Access.READ in rule.access:
            masks += ["--ro-bind", "/dev/null", str(real)]
        else:  # write/delete: read-only (it already is, except under allow_all)
            masks += ["--ro-bind", str(real), str(real)]
    return masks


@dataclass(kw_only=True, slots=True)
class _Walked:
    masks: list[str]
    watched: dict[str, tuple[int, ...]]


def _walk(scope: WorkspaceScope, approved: bool) -> _Walked | None:
    """The mounts that hold the rules for what exists now, and the identity of every path
    a command may not change (to compare after it); None past MAX_MASKS mounts."""
    masks = _absolute_masks(scope, approved)
    if masks is None:
        return None
    root = scope.real_root
    pinned: dict[Path, None] = {}  # folders made mount points, parents first
    watched: dict[str, tuple[int, ...]] = {}
    for here, dirnames, filenames, dir_fd in _entries(root):
        keep: list[str] = []
        for name in [*dirnames, *filenames]:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            path = here / name
            rel = path.relative_to(root).as_posix()
            where = ResolvedPath(inside=True, path=path, relative=rel, exists=True)
            if stat.S_ISLNK(st.st_mode):
                if _kept(scope, where, approved):
                    watched[rel] = _identity(st)  # a link cannot be bound; it is compared
                continue  # a link leads to a path that is judged (and covered) itself
            is_dir = stat.S_ISDIR(st.st_mode)
            if restricts(scope.decide_resolved(where, Access.READ).action, approved):
                masks += ["--tmpfs", str(path)] if is_dir else ["--ro-bind", "/dev/null", str(path)]
            elif is_dir and is_vcs_folder(rel) and not _ruled(scope, rel, approved):
                pinned[path] = None  # kept in place; its code parts are bound below
                watched[rel] = _identity(st)
                keep.append(name)
            elif _kept(scope, where, approved):
                masks += ["--ro-bind", str(path), str(path)]
                watched[rel] = _identity(st)
            else:
                if is_dir:
                    keep.append(name)
                continue
            for parent in reversed(path.relative_to(root).parents[:-1]):
                pinned.setdefault(root / parent, None)
            if len(masks) + 3 * len(pinned) > 3 * MAX_MASKS:
                return None
        dirnames[:] = keep
    ordered = sorted(pinned, key=lambda p: len(p.parts))  # a parent before its children
    pins = [arg for folder in ordered for arg in ("--bind", str(folder), str(folder))]
    return _Walked(masks=[*pins, *masks], watched=watched)


def rule_masks(scope: WorkspaceScope, approved: bool) -> list[str] | None:
    """bubblewrap mounts that make the scope's path rules, and the rule of paths that run
    code later, hold for a command over what exists: a path it may not read is covered
    (an empty tmpfs over a folder, /dev/null over a file), one it may not change or
    delete is bound read-only, a version-control folder and every folder above such a
    path is made a mount point, so that renaming it (EBUSY) cannot carry the path out
    from under its rule. None when that takes more than MAX_MASKS mounts or an absolute
    read rule can only be covered with the workspace itself (the command then needs
    approval). Over-covering is safe; a rule that merely allows needs nothing."""
    walked = _walk(scope, approved)
    return walked.masks if walked is not None else None


_stand_ins_lock = threading.Lock()
_stand_ins: dict[Path, list[int]] = {}
"""Stand-ins in place, by path: [commands using it, its inode]. The last command to end
removes it; removing it earlier would undo the others' mounts on it."""


def _place_stand_ins(root: Path) -> list[Path]:
    """Make a stand-in for each ROOT_STAND_INS name missing at `root` (an empty folder,
    or an empty file for .envrc), or share one another command of this process made."""
    out: list[Path] = []
    with _stand_ins_lock:
        for name, folder in ROOT_STAND_INS.items():
            path = root / name
            held = _stand_ins.get(path)
            if held is not None:
                held[0] += 1
                out.append(path)
                continue
            try:
                if folder:
                    os.mkdir(path, 0o755)
                else:
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                inode = os.lstat(path).st_ino
            except OSError:
                continue  # it exists (then it is walked and held), or cannot be made
            _stand_ins[path] = [1, inode]
            out.append(path)
    return out


def _release_stand_ins(paths: list[Path]) -> None:
    """Drop this command's hold on its stand-ins; remove those no one holds any more
    (when still the empty folder or file raf made)."""
    with _stand_ins_lock:
        for path in paths:
            held = _stand_ins.get(path)
            if held is None:
                continue
            held[0] -= 1
            if held[0] > 0:
                continue
            del _stand_ins[path]
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if st.st_ino != held[1]:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    os.rmdir(path)  # fails (and is kept) unless still empty
                elif stat.S_ISREG(st.st_mode) and st.st_size == 0:
                    os.unlink(path)


@dataclass(kw_only=True, slots=True)
class CommandGuard:
    """The mounts for one command and what to compare after it (see the module)."""

    scope: WorkspaceScope
    approved: bool
    masks: list[str]
    """bubblewrap mount arguments (the container turns them into its mounts)."""
    watched: dict[str, tuple[int, ...]] = field(default_factory=dict)
    stand_ins: list[Path] = field(default_factory=list)

    @classmethod
    def prepare(cls, scope: WorkspaceScope, approved: bool) -> CommandGuard | None:
        """Place the stand-ins and walk the workspace; None when the rules cannot be held
        by mounts (more than MAX_MASKS, or a rule that would cover the workspace)."""
        stand_ins = _place_stand_ins(scope.real_root)
        try:
            walked = _walk(scope, approved)
        except BaseException:
            _release_stand_ins(stand_ins)
            raise
        if walked is None:
            _release_stand_ins(stand_ins)
            return None
        held = [arg for path in stand_ins for arg in ("--ro-bind", str(path), str(path))]
        return cls(
            scope=scope,
            approved=approved,
            masks=[*walked.masks, *held],
            watched=walked.watched,
            stand_ins=stand_ins,
        )

    def finish(self) -> str | None:
        """After the command (all of its processes gone): move every kept path it
        created or changed out of the workspace, release the stand-ins, and say what
        was moved where (None when nothing was)."""
        try:
            found = self._changed()
            if not found:
                return None
            return _quarantine(self.scope, found)
        finally:
            _release_stand_ins(self.stand_ins)

    def _changed(self) -> list[tuple[str, str]]:
        """(path, reason) of each kept path that is new or not what it was; a folder is
        named once, not with what lies below it."""
        scope, root = self.scope, self.scope.real_root
        out: list[tuple[str, str]] = []
        for here, dirnames, filenames, dir_fd in _entries(root):
            keep: list[str] = []
            for name in [*dirnames, *filenames]:
                try:
                    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                rel = (here / name).relative_to(root).as_posix()
                is_dir = stat.S_ISDIR(st.st_mode)
                before = self.watched.get(rel)
                if before is not None and before == _identity(st):
                    if is_dir and is_vcs_folder(rel):
                        keep.append(name)  # its code parts are looked at below
                    continue  # bound read-only (or a link that stayed the same)
                where = ResolvedPath(inside=True, path=here / name, relative=rel, exists=True)
                for access in _CHANGING:
                    decision = scope.decide_resolved(where, access)
                    if restricts(decision.action, self.approved):
                        out.append((rel, decision.reason))
                        break
                else:
                    if is_dir:
                        keep.append(name)
            dirnames[:] = keep
        return out


def _quarantine(scope: WorkspaceScope, found: list[tuple[str, str]]) -> str:
    """Move `found` out of the workspace, into a new folder of the system's temporary
    folder (nothing is lost), and say so."""
    folder = Path(tempfile.mkdtemp(prefix="raf-quarantine-"))
    moved: list[str] = []
    stuck: list[str] = []
    for rel, reason in found:
        target = folder / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(scope.real_root / rel), str(target))
        except OSError as exc:
            stuck.append(f"{rel!r} ({reason}; could not be moved: {exc.strerror or exc})")
            continue
        moved.append(f"{rel!r} ({reason})")
    text = ""
    if moved:
        text = (
            f"the command created or changed paths no command may write: {'; '.join(moved)}. "
            f"They were moved out of the workspace, to {folder}"
        )
    if stuck:
        text += (". " if text else "") + (
            "the command created or changed paths no command may write, and raf could not "
            f"move them out: {'; '.join(stuck)}. Remove them before running any tool there"
        )
    return text


def _literal_prefix(pattern: str) -> str:
    """The folders of an absolute glob before its first wildcard."""
    out: list[str] = []
    for part in pattern.split("/"):
        if any(c in part for c in "*?["):
            break
        out.append(part)
    return "/".join(out) or "/"
