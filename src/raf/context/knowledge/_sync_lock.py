"""The cross-process lock that lets one process at a time sync a knowledge index file."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sync_lock(path: str) -> Iterator[None]:
    """One sync at a time on this index file, across processes (`<path>.lock`)."""
    if path == ":memory:":
        yield
        return
    with open(f"{path}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
