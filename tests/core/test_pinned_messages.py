"""A message's `pinned` flag: its JSON form, a session's `pin`, and the request hash."""

from __future__ import annotations

import pytest

from raf.core.contents import ApprovalRequestContent
from raf.core.errors import ApprovalError, SessionFormatError
from raf.core.messages import ChatMessage, Role
from raf.core.sessions import AgentSession


def test_pinned_is_written_only_when_true_and_read_back() -> None:
    plain = ChatMessage.user("hi")
    assert plain.pinned is False and "pinned" not in plain.to_dict()
    pinned = ChatMessage.user("my id is 42", pinned=True)
    assert pinned.to_dict() == {
        "role": "user",
        "contents": [{"type": "text", "text": "my id is 42"}],
        "pinned": True,
    }
    again = ChatMessage.from_dict(pinned.to_dict())
    assert again.pinned is True and again == pinned
    assert ChatMessage.from_dict(plain.to_dict()).pinned is False


@pytest.mark.parametrize("bad", ["yes", 1, None, {"a": 1}])
def test_a_pinned_that_is_not_true_or_false_is_refused(bad: object) -> None:
    data = {"role": "user", "contents": [], "pinned": bad}
    with pytest.raises(SessionFormatError, match="'pinned' must be true or false"):
        ChatMessage.from_dict(data)


def test_a_session_pins_a_fact_and_lists_its_pins() -> None:
    session = AgentSession()
    session.messages.append(ChatMessage.user("hello"))
    fact = session.pin("The meeting is in room 4.12.")
    assert session.messages[-1] is fact and fact.role is Role.USER and fact.pinned
    assert session.pinned == [fact]
    session.messages[0].pinned = True
    assert session.pinned == [session.messages[0], fact]
    restored = AgentSession.from_json(session.to_json())
    assert [m.text for m in restored.pinned] == ["hello", "The meeting is in room 4.12."]
    fact.pinned = False
    assert session.pinned == [session.messages[0]]


@pytest.mark.parametrize("bad", ["", "   ", 7])
def test_a_fact_must_be_text(bad: object) -> None:
    with pytest.raises(ValueError, match="non-empty text"):
        AgentSession().pin(bad)  # type: ignore[arg-type]


def test_no_fact_is_pinned_while_approvals_wait() -> None:
    session = AgentSession()
    session.pending_approvals.append(ApprovalRequestContent(call_id="c1", name="delete"))
    with pytest.raises(ApprovalError, match="waits on approvals"):
        session.pin("a fact")
    assert session.messages == []


def test_a_pinned_request_hashes_apart_from_the_same_request_unpinned() -> None:
    session = AgentSession()
    plain = session.touch_request_hash([ChatMessage.user("remember 42")])
    pinned = session.touch_request_hash([ChatMessage.user("remember 42", pinned=True)])
    assert plain != pinned
