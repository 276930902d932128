"""New sessions get random version-4 UUIDs, written as 32 hex digits."""

from __future__ import annotations

import uuid

from raf import AgentSession
from raf.core.sessions import new_session_id


def test_session_ids_are_distinct_version_4_uuids_beyond_one_draw() -> None:
    ids = [new_session_id() for _ in range(500)]  # several draws of random bytes
    assert len(set(ids)) == len(ids)
    for session_id in ids:
        parsed = uuid.UUID(hex=session_id)
        assert parsed.hex == session_id
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_each_new_session_gets_its_own_id() -> None:
    first, second = AgentSession(), AgentSession()
    assert first.id != second.id
    assert uuid.UUID(hex=first.id).version == 4


def test_a_request_with_a_lone_surrogate_is_hashed() -> None:
    from raf.core.messages import ChatMessage
    from raf.core.sessions import AgentSession

    session = AgentSession()
    first = session.touch_request_hash([ChatMessage.user("odd \ud800 text")])
    assert len(first) == 64
    assert session.touch_request_hash([ChatMessage.user("odd \udc00 text")]) != first
