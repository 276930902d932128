"""Files and folders that hold a user's data (sessions, checkpoints, indexes, run
databases) are created readable by their owner only: mode 0600, folders 0700.

Only what raf creates is affected: an existing file or folder keeps the mode it has, so
a store a user deliberately shared stays shared.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o600
"""Mode of a store file raf creates."""
DIR_MODE = 0o700
"""Mode of a folder raf creates for a store."""


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create `path` and any missing parents with mode 0700 (the umask may only remove
    more); an existing folder is left as it is, a file in its place is an error."""
    folder = Path(path)
    missing: list[Path] = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for item in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.mkdir(item, DIR_MODE)
    if not folder.is_dir():
        raise FileExistsError(17, f"{str(folder)!r} is there and is not a folder", str(folder))
    return folder


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create an empty file at `path` with mode 0600 unless one is there (its folder
    too, 0700), so that a database opened on it afterwards (SQLite, and the journal and
    WAL files SQLite gives the database's mode) is private from the start."""
    file = Path(path)
    if str(file) in ("", ":memory:"):
        return file
    private_dir(file.parent)
    try:
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return file
    os.close(fd)
    return file


def open_private(path: str | os.PathLike[str]) -> BinaryIO:
    """Open `path` (a lock file, a log) to read and append bytes, creating it 0600 (its
    folder 0700) when missing."""
    file = Path(path)
    private_dir(file.parent)
    fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    return os.fdopen(fd, "a+b")


def atomic_write_text(
    path: Path, text: str, *, mode: int | None = None, keep_mode: bool = False
) -> None:
    """Write to a temporary file beside `path`, flush it to disk, then rename over it: a
    reader sees the old file or the new one, never a part. `mode`: the file's
    permissions; None keeps it private (0600, as `mkstemp` makes it; a new folder 0700).
    `keep_mode`: a file already at `path` keeps its permissions (a new one: `mode`)."""
    if keep_mode and path.exists():
        mode = path.stat().st_mode & 0o777
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
