"""Reading a file a user names (an attachment, a token file) the way the file tools read:
a regular file only, never a FIFO, a device, a socket or a kernel file (`/proc`,
`/sys`, `/dev`), reached without following a link out of the allowed places, and read
through a bounded reader that stops at the limit.

The name is resolved once (every link followed) and checked; the file is then opened
one folder at a time from `/`, each step by directory descriptor and following no link,
so a folder on the path swapped for a link between the check and the open is refused
instead of followed out of the root.

The size `stat()` reports is not trusted: `/proc/self/environ` says 0 bytes and holds
the environment, `/dev/zero` never ends. A FIFO is opened without blocking, so naming
one is a refusal, not a hang.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from functools import lru_cache

__all__ = ["FileRefusedError", "FileTooLargeError", "read_regular_file", "read_up_to"]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_FOLDER_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
"""A folder passed through on the walk: only looked up in (`O_PATH` where there is one,
so a folder the user may search but not list is passed as `open` passes it)."""
_KERNEL_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "debugfs",
        "tracefs",
        "securityfs",
        "cgroup",
        "cgroup2",
        "configfs",
        "efivarfs",
        "bpf",
        "fusectl",
        "pstore",
        "mqueue",
        "binfmt_misc",
        "autofs",
        "hugetlbfs",
    }
)
"""File systems whose files are the kernel's, not a user's (their sizes lie, reading
them can leak the process's secrets or never end)."""
_KERNEL_PLACES = ("/proc", "/sys", "/dev")
"""Where those live on every Linux system, also when the mount table cannot be read."""


class FileRefusedError(ValueError):
    """A file raf will not read: its message names the file and the reason."""


class FileTooLargeError(FileRefusedError):
    """A file refused for holding more bytes than the limit."""


@lru_cache(maxsize=1)
def _kernel_mounts() -> tuple[str, ...]:
    """Mount points of kernel file systems, longest first (empty where there is no
    mount table to read)."""
    points: list[str] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            for line in table:
                fields = line.split()
                if " - " not in line or len(fields) < 5:
                    continue
                fstype = line.split(" - ", 1)[1].split()[0]
                if fstype in _KERNEL_FILESYSTEMS:
                    points.append(fields[4].replace("\\040", " "))
    except OSError:
        return ()
    return tuple(sorted(set(points), key=len, reverse=True))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _kernel_place(real: str) -> str | None:
    for place in (*_KERNEL_PLACES, *_kernel_mounts()):
        if place != "/" and _under(real, place):
            return place
    return None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(
    path: str | os.PathLike[str],
    *,
    limit: int,
    root: str | os.PathLike[str] | None = None,
    opened: Callable[[os.stat_result], None] | None = None,
) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them.

    `root`: when given, the file (after every link is followed) must lie inside it; a
    link that leads out is refused. Kernel files are refused wherever a link leads.
    `opened`: called with the opened file's status before a byte is read (a check of
    its mode that must see the very file read, not whatever the name holds a moment
    later); what it raises is raised. Raises `FileRefusedError` naming the file and the
    reason, or `OSError` when it cannot be opened (missing, no permission)."""
    shown = os.fspath(path)
    real = os.path.realpath(shown)
    if root is not None:
        allowed = os.path.realpath(os.fspath(root))
        if not _under(real, allowed):
            raise FileRefusedError(
                f"{shown!r} leads to {real!r}, outside {allowed!r}, the folder files are read from"
            )
    place = _kernel_place(real)
    if place is not None:
        led = f" (it leads to {real!r})" if real != os.path.abspath(shown) else ""
        raise FileRefusedError(
            f"{shown!r} is a kernel file under {place}{led}, not a file of yours; raf reads "
            "regular files only"
        )
    fd = _open_resolved(real, shown)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefusedError(
                f"{shown!r} is {_kind(info.st_mode)}; raf reads regular files only"
            )
        if opened is not None:
            opened(info)
        if info.st_size > limit:
            raise FileTooLargeError(
                f"{shown!r} is {info.st_size} bytes; the most read is {limit} bytes"
            )
        data = read_up_to(fd, limit + 1)  # one byte past the limit tells a file that grew
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileTooLargeError(f"{shown!r} holds more than {limit} bytes (it grew while read)")
    return data


def _open_resolved(real: str, shown: str) -> int:
    """Open the resolved absolute path `real` one folder at a time from `/`, following
    no link: the file opened is the one at `real` itself, whatever changes on the path
    meanwhile. A step that meets a link (one swapped in after `real` was resolved) is a
    `FileRefusedError` naming it; other failures are the `OSError` of that step. Where
    the system opens nothing relative to a folder, the path is opened whole."""
    if os.open not in os.supports_dir_fd:
        return os.open(real, _OPEN_FLAGS)
    parts = [part for part in real.split("/") if part]
    folder = os.open("/", _FOLDER_FLAGS)
    try:
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            try:
                step = os.open(part, _OPEN_FLAGS if last else _FOLDER_FLAGS, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, folder):
                    raise FileRefusedError(
                        f"{shown!r} changed while it was opened: {part!r} on its path "
                        f"(in {'/' + '/'.join(parts[:index])!r}) became a link; refused"
                    ) from None
                raise
            os.close(folder)
            folder = step
        if not parts:
            return os.open("/", _OPEN_FLAGS)
        opened, folder = folder, -1
        return opened
    finally:
        if folder >= 0:
            os.close(folder)


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


def read_up_to(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from the open file `fd`, read in pieces of 1 MiB."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
