"""A session records a hash of the request each run starts with."""

from __future__ import annotations

import hashlib

from raf import AgentSession, ChatMessage
from raf.core.contents import TextContent
from raf.core.messages import Role


def _hash(*messages: ChatMessage) -> str:
    return AgentSession().touch_request_hash(list(messages))


def test_the_same_request_hashes_alike_and_any_difference_shows() -> None:
    assert _hash(ChatMessage.user("go")) == _hash(ChatMessage.user("go"))
    variants = {
        _hash(ChatMessage.user("go")),
        _hash(ChatMessage.user("go!")),
        _hash(ChatMessage.system("go")),
        _hash(ChatMessage.user("go"), ChatMessage.user("")),
        _hash(ChatMessage(role=Role.USER, contents=[TextContent(text="go")], author_name="a")),
        _hash(ChatMessage(role=Role.USER, contents=[TextContent(text="g"), TextContent(text="o")])),
        _hash(ChatMessage.user("g\x00tuser\x00o")),
    }
    assert len(variants) == 7
    session = AgentSession()
    session.touch_request_hash([ChatMessage.user("go")])
    assert session.to_dict()["request_hash"] == _hash(ChatMessage.user("go"))


def test_a_plain_text_request_hashes_to_the_same_value_as_before() -> None:
    # stored sessions keep their hashes: the value of the usual request must not drift
    expected = hashlib.sha256(b"tuser\x00go\x00tassistant\x00ok\x00").hexdigest()
    assert _hash(ChatMessage.user("go"), ChatMessage.assistant("ok")) == expected
