"""One folder whose names are resolved only through the fd walk the file tools use: the
stores (wiki, knowledge, memory, skills) read, write and list their files through it, so
a symlink planted in them can never carry a read or a write outside the folder."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from raf.core.private_files import DIR_MODE
from raf.core.safe_read import read_up_to
from raf.tools.scope.walk import WalkEscape, WalkResult, walk
from raf.tools.workspace import OutsideScopeError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_LISTED = 100_000
"""Most files `files()` lists; beyond it the listing stops."""


class ConfinedPathError(OutsideScopeError):
    """A name that leads outside its store's folder, or to something not a plain file."""


class ConfinedFolder:
    """A folder (`label` names it in messages) in which every name is walked below an open
    fd, symlinks re-resolved by raf and refused when they leave it; reads take regular,
    singly-linked files only, opened without blocking."""

    def __init__(self, root: str | os.PathLike[str], *, label: str) -> None:
        self.root = Path(root)
        self.label = label
        self.real_root = Path(os.path.realpath(self.root))

    # -- the walk -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _walked(
        self, relative: str, *, create_dirs: bool = False, follow_final: bool = True
    ) -> Iterator[WalkResult]:
        parts = _parts(relative, self.label)
        root_fd = os.open(self.real_root, _DIR_FLAGS)
        try:
            _same_folder(root_fd, self.real_root, self.label)
            try:
                found = walk(
                    root_fd,
                    parts,
                    [str(self.real_root).split("/")],
                    follow_final=follow_final,
                    create_dirs=create_dirs,
                    dir_mode=DIR_MODE,  # a store's folders are private, as its files
                )
            except WalkEscape as esc:
                why = esc.reason.replace("the workspace", f"the {self.label}")
                raise ConfinedPathError(
                    f"{relative!r} leads outside the {self.label} ({why})"
                ) from None
            try:
                yield found
            finally:
                found.close()
        finally:
            os.close(root_fd)

    def stat(self, relative: str) -> os.stat_result | None:
        """The stat of `relative` after the confined walk (None when missing)."""
        with self._walked(relative) as found:
            return found.stat

    def is_file(self, relative: str) -> bool:
        """True when `relative` is a regular file inside the folder (False when it is
        missing, a folder, special, or would lead outside)."""
        try:
            st = self.stat(relative)
        except (OSError, ConfinedPathError):
            return False
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, relative: str) -> bool:
        try:
            st = self.stat(relative)
        except (OSError, ConfinedPathError):
            return False
        return st is not None and stat.S_ISDIR(st.st_mode)

    # -- reading --------------------------------------------------------------------------

    def read_bytes(self, relative: str, *, max_bytes: int) -> bytes:
        """The content of a regular file (at most `max_bytes + 1` bytes are read, so a
        caller can tell it was cut); refuses FIFOs, devices and hard-linked files."""
        with self._walked(relative) as found:
            if found.name is None or found.parent_fd < 0 or found.stat is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), relative)
            fd = os.open(found.name, _READ_FLAGS, dir_fd=found.parent_fd)
            try:
                st = os.fstat(fd)
                _require_plain(st, relative, self.label)
                os.set_blocking(fd, True)
                return read_up_to(fd, max_bytes + 1)
            finally:
                os.close(fd)

    def read_text(self, relative: str, *, max_bytes: int) -> str:
        """`read_bytes` decoded as UTF-8 (strict: a decoding error is raised)."""
        return self.read_bytes(relative, max_bytes=max_bytes).decode("utf-8")

    def files(
        self, relative: str = "", *, suffixes: frozenset[str] | None = None, hidden: bool = False
    ) -> list[str]:
        """Regular files below `relative` (paths relative to the folder, sorted), walked
        without following any symlink; hidden entries are left out unless `hidden`."""
        out: list[str] = []
        with self._walked(relative or ".") as found:
            if found.stat is None or not stat.S_ISDIR(found.stat.st_mode):
                return out
            if found.name is None:
                top = os.dup(found.parent_fd)
            else:
                top = os.open(found.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=found.parent_fd)
            base = "/".join(found.rel)
            try:
                for dirpath, dirnames, filenames, dir_fd in os.fwalk(
                    ".", dir_fd=top, follow_symlinks=False
                ):
                    dirnames[:] = sorted(d for d in dirnames if hidden or not d.startswith("."))
                    below = "" if dirpath == "." else dirpath[2:]
                    for name in sorted(filenames):
                        if name.startswith(".") and not hidden:
                            continue
                        if suffixes is not None and Path(name).suffix.lower() not in suffixes:
                            continue
                        with contextlib.suppress(OSError):
                            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                            if stat.S_ISREG(st.st_mode):
                                out.append("/".join(p for p in (base, below, name) if p))
                        if len(out) >= MAX_LISTED:
                            return sorted(out)
            finally:
                os.close(top)
        return sorted(out)

    def folders(self, relative: str = "") -> list[str]:
        """Names of the (real, not linked) folders directly in `relative`."""
        with self._walked(relative or ".") as found:
            if found.stat is None or not stat.S_ISDIR(found.stat.st_mode):
                return []
            if found.name is None:
                top = os.dup(found.parent_fd)
            else:
                top = os.open(found.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=found.parent_fd)
            try:
                names = []
                for entry in os.scandir(top):
                    if entry.is_dir(follow_symlinks=False):
                        names.append(entry.name)
                return sorted(names)
            finally:
                os.close(top)

    # -- writing --------------------------------------------------------------------------

    def write_atomic(self, relative: str, data: bytes) -> None:
        """Replace (or create) the file with `data` through a temporary name and a rename
        in the same folder, creating missing folders; never writes through a link. A new
        file is private to its owner (0600); a replaced one keeps its mode."""
        with self._walked(relative, create_dirs=True, follow_final=False) as found:
            if found.name is None or found.parent_fd < 0:
                raise IsADirectoryError(21, f"{relative!r} is the {self.label} itself")
            if found.stat is not None and stat.S_ISDIR(found.stat.st_mode):
                raise IsADirectoryError(21, f"{relative!r} is a folder")
            tmp = f".{found.name[:200]}.raf-{secrets.token_hex(4)}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            st = found.stat
            mode = (
                stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else 0o600
            )
            fd = os.open(tmp, flags, mode, dir_fd=found.parent_fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
                os.close(fd)
                fd = -1
                os.rename(tmp, found.name, src_dir_fd=found.parent_fd, dst_dir_fd=found.parent_fd)
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=found.parent_fd)
                raise

    def write_text(self, relative: str, text: str) -> None:
        self.write_atomic(relative, text.encode("utf-8"))

    def __repr__(self) -> str:
        return f"ConfinedFolder({str(self.real_root)!r}, label={self.label!r})"


def _parts(relative: str, label: str) -> list[str]:
    if not isinstance(relative, str) or "\x00" in relative:
        raise ConfinedPathError(f"{relative!r} is not a valid name in the {label}")
    if relative.startswith(("/", "~")):
        raise ConfinedPathError(f"{relative!r}: use a path relative to the {label}")
    return relative.replace("\\", "/").split("/")


def _same_folder(fd: int, real_root: Path, label: str) -> None:
    """The folder opened must still be the one configured (not swapped for a link)."""
    with contextlib.suppress(OSError):
        if os.readlink(f"/proc/self/fd/{fd}") != str(real_root):
            raise ConfinedPathError(f"the {label} folder {str(real_root)!r} was replaced")


def _require_plain(st: os.stat_result, relative: str, label: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, f"{relative!r} is a folder")
    if not stat.S_ISREG(st.st_mode):
        raise ConfinedPathError(
            f"{relative!r} in the {label} is not a regular file (a FIFO, socket or device "
            "is never read)"
        )
    if st.st_nlink > 1:
        raise ConfinedPathError(
            f"{relative!r} in the {label} has {st.st_nlink} hard links; raf cannot prove the "
            "other names are inside the folder"
        )
