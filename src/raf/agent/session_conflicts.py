"""Saving a session that other processes may save too: a turn is re-applied, or refused
when it cannot be."""

from __future__ import annotations

import logging
from dataclasses import fields
from typing import Any

from raf.core.errors import SessionConflictError
from raf.core.sessions import AgentSession, SessionStore

log = logging.getLogger("raf.sessions")


async def save_turn(store: SessionStore, session: AgentSession, retries: int) -> None:
    """Save `session`; on a conflict, up to `retries` times reload the stored session,
    re-apply this turn's appended messages and state changes to it, and save again.
    A session deleted elsewhere, or a turn that is not a plain append, raises the
    conflict unchanged (nothing is overwritten, nothing deleted comes back)."""
    attempt = 0
    while True:
        try:
            await store.save(session)
            return
        except SessionConflictError as conflict:
            if attempt >= retries or conflict.stored_revision is None:
                raise
            attempt += 1
            fresh = await store.load(session.id)
            merged = reapply_turn(session, fresh)
            if merged is None:
                raise
            log.info(
                "session %r changed elsewhere; re-applying this turn (try %d)", session.id, attempt
            )
            for item in fields(AgentSession):
                setattr(session, item.name, getattr(merged, item.name))


def reapply_turn(ours: AgentSession, fresh: AgentSession) -> AgentSession | None:
    """`fresh` plus what `ours` changed since it was loaded, or None when the two changed
    the same thing (a rewritten history, approvals waiting, one state key changed twice)."""
    base = (
        AgentSession.from_json(ours.stored_text)
        if ours.stored_text is not None
        else AgentSession(id=ours.id, created_at=fresh.created_at)
    )
    o, b, f = ours.to_dict(), base.to_dict(), fresh.to_dict()
    if o["pending_approvals"] or b["pending_approvals"] or f["pending_approvals"]:
        return None
    known = len(b["messages"])
    if o["messages"][:known] != b["messages"]:
        return None
    merged = dict(f)
    merged["messages"] = f["messages"] + o["messages"][known:]
    for key in ("provider_state", "metadata"):
        combined = _merge_keys(o[key], b[key], f[key])
        if combined is None:
            return None
        merged[key] = combined
    spent = list(f.get("spent_approvals", []))
    spent += [c for c in o.get("spent_approvals", []) if c not in spent]
    if spent:
        merged["spent_approvals"] = spent
    usage = _added_usage(o.get("usage", {}), b.get("usage", {}), f.get("usage", {}))
    if usage:
        merged["usage"] = usage
    merged["request_hash"] = o["request_hash"]
    merged["updated_at"] = o["updated_at"]
    result = AgentSession.from_dict(merged)
    result.stored_text = fresh.stored_text
    return result


def _merge_keys(
    ours: dict[str, Any], base: dict[str, Any], theirs: dict[str, Any]
) -> dict[str, Any] | None:
    """A three-way merge of one level of keys; None when a key changed on both sides."""
    merged = dict(theirs)
    missing = object()
    for key in set(ours) | set(base):
        mine, was = ours.get(key, missing), base.get(key, missing)
        if mine == was:
            continue
        other = theirs.get(key, missing)
        if other != was and other != mine:
            return None
        if mine is missing:
            merged.pop(key, None)
        else:
            merged[key] = mine
    return merged


def _added_usage(
    ours: dict[str, int], base: dict[str, int], theirs: dict[str, int]
) -> dict[str, int]:
    """The stored totals plus what this turn added: both processes' spending counts."""
    names = set(ours) | set(base) | set(theirs)
    return {n: theirs.get(n, 0) + ours.get(n, 0) - base.get(n, 0) for n in sorted(names)}
