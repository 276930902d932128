"""The hand-made constructors of raf's hot paths, in one place.

Each makes exactly what its public constructor makes, without the work that constructor
does for callers in general: Python 3.11 packs a class call's keywords into a dict, and
`ChatMessage(...)` normalises what people write by hand (a role given as text, plain
strings as contents). raf's own code on its hot paths passes a `Role` and a list of
contents already, so a message, a text message and a tool call's result are made by
setting their fields. They are kept only where `benchmarks/run_instructions.py` shows
they pay (the speed decision record has the figures), and
`tests/core/test_builders.py` checks each one, field by field, against its public
constructor: a field added to one of these classes fails that test until its builder
sets it.
"""

from __future__ import annotations

from typing import Any

from raf.core.contents import Content, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role

_new = object.__new__


def message(role: Role, contents: list[Content], message_id: str | None = None) -> ChatMessage:
    """`ChatMessage(role=role, contents=contents, message_id=message_id)`: `role` a
    `Role`, `contents` a list of contents (no plain strings), kept as given."""
    made = _new(ChatMessage)
    made.role = role
    made.contents = contents
    made.author_name = None
    made.message_id = message_id
    made.pinned = False
    return made


def text_message(role: Role, text: str) -> ChatMessage:
    """`ChatMessage(role=role, contents=[TextContent(text=text)])` for a `Role`."""
    content = _new(TextContent)
    content.text = text
    content.type = "text"
    return message(role, [content])


def function_result(call_id: str, name: str | None, result: Any) -> FunctionResultContent:
    """`FunctionResultContent(call_id=call_id, name=name, result=result)`."""
    made = _new(FunctionResultContent)
    made.call_id = call_id
    made.result = result
    made.error = None
    made.name = name
    made.type = "function_result"
    return made
