"""Consolidation jobs written to disk until they have run, so a killed process loses
none: each job is a file in `.queue/` locked by the process that owns it; a file nobody
holds belongs to a dead process and is replayed."""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from raf.core.private_files import private_dir

log = logging.getLogger("raf.context.memory")

QUEUE_DIR = ".queue"


@dataclass(kw_only=True, slots=True)
class Receipt:
    """One job's file, held locked by this process while the job waits or runs."""

    path: Path
    handle: BinaryIO


@dataclass(kw_only=True, slots=True)
class Orphan:
    """A job left by a process that died before running it, now claimed by this one."""

    session_id: str
    turns: list[dict[str, str]]
    receipt: Receipt


class JobJournal:
    """The `.queue/` folder of one memory folder."""

    def __init__(self, root: Path) -> None:
        self.folder = root / QUEUE_DIR

    def record(self, session_id: str, turns: list[dict[str, str]]) -> Receipt:
        """Write a job durably and keep it locked; call before the job is queued."""
        private_dir(self.folder)
        path = self.folder / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        handle = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            handle.write(json.dumps({"session_id": session_id, "turns": turns}).encode())
            handle.flush()
            os.fsync(fd)
        except BaseException:
            handle.close()
            with contextlib.suppress(OSError):
                path.unlink()
            raise
        return Receipt(path=path, handle=handle)

    def done(self, receipt: Receipt) -> None:
        """The job ran (or failed for good): forget it."""
        with contextlib.suppress(OSError):
            receipt.path.unlink()
        receipt.handle.close()

    def release(self, receipt: Receipt) -> None:
        """The job did not run here: unlock it so a later start replays it."""
        receipt.handle.close()

    def claim_orphans(self) -> list[Orphan]:
        """Jobs whose owner is gone, oldest first, now locked by this process; a file
        that cannot be read (its owner died while writing it) is removed."""
        if not self.folder.is_dir():
            return []
        claimed: list[Orphan] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                handle = open(path, "r+b")  # noqa: SIM115 - kept open while the job waits
            except OSError:
                continue
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()  # a live process owns it
                continue
            try:
                data = json.loads(handle.read().decode("utf-8"))
                session_id = str(data["session_id"])
                turns = [dict(t) for t in data["turns"]]
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("removing unreadable consolidation job %s: %s", path, exc)
                self.done(Receipt(path=path, handle=handle))
                continue
            claimed.append(
                Orphan(
                    session_id=session_id, turns=turns, receipt=Receipt(path=path, handle=handle)
                )
            )
        return claimed
