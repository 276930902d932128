"""Changing one record of a session store that other workers may write too: read it,
change it, save it under the store's revision check, and do it all again from a fresh
read when another writer saved it in between."""

from __future__ import annotations

from collections.abc import Callable

from raf.core.errors import SessionConflictError, SessionNotFoundError
from raf.core.sessions import AgentSession, SessionStore

SAVE_TRIES = 5
"""Read-change-save rounds tried on one record while other writers keep saving it
first; the last conflict is raised."""


async def change_record(
    store: SessionStore,
    key: str,
    change: Callable[[AgentSession], bool],
    *,
    tries: int = SAVE_TRIES,
) -> None:
    """Apply `change` to the record `key` of `store` (a new, empty one when none is kept)
    and save it; `change` alters the record in place and answers False to leave the
    kept record as it is. A save that loses to another writer starts again from a
    fresh read, `tries` rounds at most, then raises its `SessionConflictError`; any
    other error of the store is raised as it comes."""
    if tries < 1:
        raise ValueError(f"change_record needs at least one try, not {tries}")
    for attempt in range(1, tries + 1):
        try:
            record = await store.load(key)
        except SessionNotFoundError:
            record = AgentSession(id=key)
        if not change(record):
            return
        try:
            await store.save(record)
            return
        except SessionConflictError:
            if attempt >= tries:
                raise


__all__ = ["SAVE_TRIES", "change_record"]
