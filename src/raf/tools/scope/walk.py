"""A race-safe path walk below a directory fd: each step is opened with O_NOFOLLOW and
every symlink is read and re-resolved here, so nothing the kernel follows can leave it."""

from __future__ import annotations

import contextlib
import os
import stat
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_SYMLINKS = 40
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WalkEscape(Exception):
    """The path leaves the directory the walk started from."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(kw_only=True, slots=True)
class WalkResult:
    """The final component's parent (an open fd we own), its name, and its path below root.

    `name` is None when the path is the root itself; `parent_fd` is then the root fd
    (not owned). `stat` is the lstat of the final component (after following symlinks
    when asked), None when it does not exist.
    """

    parent_fd: int
    name: str | None
    rel: list[str]
    stat: os.stat_result | None
    owned: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.owned:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.owned.clear()


def root_relative(
    parts: Sequence[str], prefixes: Sequence[Sequence[str]], *, fold: bool = False
) -> list[str] | None:
    """The components after a root prefix (component-wise, no normalisation), or None.
    With `fold` (a case-insensitive filesystem) the prefix is compared casefolded."""
    for prefix in prefixes:
        trimmed = [p.casefold() if fold else p for p in prefix if p]
        given = [p.casefold() if fold else p for p in parts if p not in ("", ".")]
        if len(given) >= len(trimmed) and given[: len(trimmed)] == trimmed:
            # keep the raw remainder so that '..' is interpreted by the walk, not lexically
            count = 0
            for index, part in enumerate(parts):
                if part in ("", "."):
                    continue
                if count == len(trimmed):
                    return list(parts[index:])
                count += 1
            return []
    return None


def walk(
    root_fd: int,
    parts: Sequence[str],
    prefixes: Sequence[Sequence[str]],
    *,
    follow_final: bool = True,
    create_dirs: bool = False,
    dir_mode: int = 0o777,
    fold: bool = False,
) -> WalkResult:
    """Walk `parts` below `root_fd`; raise WalkEscape if they lead outside.

    Missing intermediate folders are created (with `dir_mode`, less the umask) when
    `create_dirs`, else the walk records
    a missing parent (stat None, parent_fd -1) without touching anything.
    """
    fds: list[int] = []  # open dir fds of rel, parallel to rel (-1: missing folder)
    rel: list[str] = []
    pending: deque[str] = deque(parts)
    links = 0

    def current() -> int:
        return fds[-1] if fds else root_fd

    def close_all() -> None:
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        fds.clear()
        rel.clear()

    try:
        final: str | None = None
        final_stat: os.stat_result | None = None
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if not rel:
                    raise WalkEscape("'..' climbs above the workspace root")
                rel.pop()
                fd = fds.pop()
                if fd >= 0:
                    os.close(fd)
                continue
            is_last = all(p in ("", ".") for p in pending)
            parent = current()
            if parent < 0:
                if is_last:
                    final = name
                    break
                fds.append(-1)
                rel.append(name)
                continue
            try:
                st = os.stat(name, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if is_last:
                    final = name
                    break
                if create_dirs:
                    os.mkdir(name, dir_mode, dir_fd=parent)
                    pending.appendleft(name)
                    continue
                fds.append(-1)
                rel.append(name)
                continue
            if stat.S_ISLNK(st.st_mode) and (follow_final or not is_last):
                links += 1
                if links > MAX_SYMLINKS:
                    raise OSError(40, f"too many levels of symbolic links at {name!r}")
                target = os.readlink(name, dir_fd=parent)
                tparts = target.split("/")
                if target.startswith("/"):
                    sub = root_relative(tparts, prefixes, fold=fold)
                    if sub is None:
                        shown = "/".join([*rel, name])
                        raise WalkEscape(f"symlink {shown!r} points outside the workspace")
                    close_all()
                    pending.extendleft(reversed(sub))
                else:
                    pending.extendleft(reversed(tparts))
                continue
            if is_last:
                final = name
                final_stat = st
                break
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(20, f"{'/'.join([*rel, name])!r} is not a folder")
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
            except OSError as exc:
                if exc.errno in (40, 20):  # ELOOP / ENOTDIR: swapped since the stat; look again
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise
                    pending.appendleft(name)
                    continue
                raise
            fds.append(fd)
            rel.append(name)
        if final is None:
            # the path names a folder already open (the root, or ends in '..' / '.')
            if not rel:
                return WalkResult(parent_fd=root_fd, name=None, rel=[], stat=os.fstat(root_fd))
            final = rel.pop()
            fd = fds.pop()
            final_stat = os.fstat(fd) if fd >= 0 else None
            if fd >= 0:
                os.close(fd)
        parent = current()
        owned = [fd for fd in fds if fd >= 0]
        return WalkResult(
            parent_fd=parent, name=final, rel=[*rel, final], stat=final_stat, owned=owned
        )
    except BaseException:
        close_all()
        raise
