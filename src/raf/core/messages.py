"""Chat messages: a role and an ordered list of typed contents."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from raf.core.contents import (
    ApprovalRequestContent,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    content_from_dict,
    content_to_dict,
)
from raf.core.errors import SessionFormatError


class Role(StrEnum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


# The roles the run reads on its hot path, bound once beside their enum: Python 3.11
# reads a member off its class in about 70 ns, a module name in about 6 (3.13: 20 and
# 8); see the speed decision record and benchmarks/run_instructions.py.
ROLE_SYSTEM = Role.SYSTEM
ROLE_USER = Role.USER
ROLE_ASSISTANT = Role.ASSISTANT
ROLE_TOOL = Role.TOOL

_HEX_AT_ONCE = 64
_HEX_FORMAT = "%x " * _HEX_AT_ONCE


def _hex_counter() -> Iterator[str]:
    """1, 2, 3, ... written in hex. Formatting numbers costs more than the rest of an
    id, and formatting 64 of them in one `%` costs less per number than one at a time,
    so the numbers are written 64 at once and handed out one by one. Every step is a
    C iterator (no Python code runs inside `next`), so threads drawing at the same
    time still each get their own number, as with a plain `itertools.count`."""
    starts = itertools.count(1, _HEX_AT_ONCE)
    ends = itertools.count(1 + _HEX_AT_ONCE, _HEX_AT_ONCE)
    numbers = map(tuple, map(range, starts, ends))
    return itertools.chain.from_iterable(map(str.split, map(_HEX_FORMAT.__mod__, numbers)))


_ID_PREFIX = os.urandom(5).hex()
_id_counter = _hex_counter()


def _new_id_prefix() -> None:
    """A forked child draws its own prefix: otherwise parent and child (and every sibling)
    would hand out the same ids from the same counter."""
    global _ID_PREFIX, _id_counter
    _ID_PREFIX = os.urandom(5).hex()
    _id_counter = _hex_counter()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_id_prefix)


def new_id(prefix: str) -> str:
    """A unique id with a readable prefix: random per process, then a counter in hex
    (fast)."""
    return f"{prefix}_{_ID_PREFIX}{next(_id_counter)}"


class _Factory:
    """Marks a `contents` left out (a fresh list each time); reads as a dataclass
    default factory does in signatures and help."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FRESH_LIST: Any = _Factory()


@dataclass(kw_only=True, slots=True, init=False)
class ChatMessage:
    """One message of a conversation."""

    role: Role
    contents: list[Content] = field(default_factory=list)
    author_name: str | None = None
    message_id: str | None = None
    pinned: bool = False
    """Kept word for word by compression, and counted against its budget first. One
    slot (a pointer to the shared `False` until a message is pinned); in the JSON form
    only when true."""

    # Written by hand, not generated: the dataclass __init__ would call a separate
    # __post_init__ for every message made, and messages are made on every step of a
    # run. The fields (and so fields(), replace(), ==, repr and pickling) are the
    # dataclass's; this only does the generated assignments and the normalising below.
    def __init__(
        self,
        *,
        role: Role,
        contents: list[Content] = _FRESH_LIST,
        author_name: str | None = None,
        message_id: str | None = None,
        pinned: bool = False,
    ) -> None:
        # Accept the spellings people write by hand: role="user", contents="hi".
        if type(role) is not Role:
            role = _to_role(role)
        if contents is _FRESH_LIST:
            contents = []
        elif isinstance(contents, str):
            contents = [TextContent(text=contents)]
        else:
            for content in contents:  # a plain loop: this runs for every message made
                if isinstance(content, str):
                    contents = [_as_content(c) for c in contents]
                    break
        self.role = role
        self.contents = contents
        self.author_name = author_name
        self.message_id = message_id
        self.pinned = pinned

    @classmethod
    def user(cls, text: str, *, pinned: bool = False) -> ChatMessage:
        """A user's text; `pinned=True` asks compression to keep it word for word."""
        made = cls(role=ROLE_USER, contents=[TextContent(text=text)])
        if pinned:
            made.pinned = True
        return made

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls(role=ROLE_SYSTEM, contents=[TextContent(text=text)])

    @classmethod
    def assistant(cls, text: str = "", *, calls: Iterable[FunctionCallContent] = ()) -> ChatMessage:
        contents: list[Content] = [TextContent(text=text)] if text else []
        contents.extend(calls)
        return cls(role=Role.ASSISTANT, contents=contents)

    # The readers below are plain loops, not comprehensions: a comprehension is a
    # function call of its own, and these are read on every step of a run.

    @property
    def text(self) -> str:
        """All text contents joined; reasoning and tool traffic are left out."""
        contents = self.contents
        if len(contents) == 1:
            # One content, plain text: join would hand back this very string.
            only = contents[0]
            if type(only) is TextContent and type(only.text) is str:
                return only.text
        texts = []
        for content in contents:
            if isinstance(content, TextContent):
                texts.append(content.text)
        return "".join(texts)

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        out = []
        for content in self.contents:
            if isinstance(content, FunctionCallContent):
                out.append(content)
        return out

    @property
    def function_results(self) -> list[FunctionResultContent]:
        out = []
        for content in self.contents:
            if isinstance(content, FunctionResultContent):
                out.append(content)
        return out

    @property
    def approval_requests(self) -> list[ApprovalRequestContent]:
        out = []
        for content in self.contents:
            if isinstance(content, ApprovalRequestContent):
                out.append(content)
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": self.role.value,
            "contents": [content_to_dict(c) for c in self.contents],
        }
        if self.author_name is not None:
            out["author_name"] = self.author_name
        if self.message_id is not None:
            out["message_id"] = self.message_id
        if self.pinned:
            out["pinned"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatMessage:
        if not isinstance(data, dict):
            raise SessionFormatError(f"a message must be a JSON object, got {type(data).__name__}")
        try:
            role = Role(data["role"])
        except KeyError:
            raise SessionFormatError("a message lacks its 'role'") from None
        except ValueError:
            raise SessionFormatError(f"unknown message role {data.get('role')!r}") from None
        contents = data.get("contents", [])
        if not isinstance(contents, list):
            raise SessionFormatError("a message's 'contents' must be a list")
        pinned = data.get("pinned", False)
        if type(pinned) is not bool:
            raise SessionFormatError(f"a message's 'pinned' must be true or false, not {pinned!r}")
        return cls(
            role=role,
            contents=[content_from_dict(c) for c in contents],
            author_name=data.get("author_name"),
            message_id=data.get("message_id"),
            pinned=pinned,
        )


def _to_role(role: Any) -> Role:
    try:
        return Role(role)
    except ValueError:
        roles = ", ".join(r.value for r in Role)
        raise ValueError(f"unknown message role {role!r}; use one of {roles}") from None


def _as_content(item: Any) -> Any:
    return TextContent(text=item) if isinstance(item, str) else item


# Calling a class with keywords is the dearest part of making a small object (the
# keywords are packed into a dict and unpacked again), so the messages raf builds
# itself from values it knows are already in shape are made directly: the same
# objects the constructors make, the same fields set to the same values.


MessageInput = str | ChatMessage | Sequence[ChatMessage | str] | None
"""What `Agent.run` accepts as the request: text, a message, a list of them, or nothing."""


def to_messages(value: MessageInput) -> list[ChatMessage]:
    """Normalise a request to a list of messages; plain strings become user messages."""
    if value is None:
        return []
    if isinstance(value, str):
        return [ChatMessage.user(value)]
    if isinstance(value, ChatMessage):
        return [value]
    out: list[ChatMessage] = []
    for item in value:
        if isinstance(item, str):
            out.append(ChatMessage.user(item))
        elif isinstance(item, ChatMessage):
            out.append(item)
        else:
            raise TypeError(f"a request holds strings or ChatMessage, not {type(item).__name__}")
    return out
