"""Sessions hold every piece of a conversation's state; stores keep them."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raf.core.contents import (
    ApprovalRequestContent,
    TextContent,
    content_from_dict,
    content_to_dict,
)
from raf.core.errors import ApprovalError, SessionFormatError
from raf.core.messages import ChatMessage
from raf.core.usage import UsageTotals

SESSION_FORMAT = 1
"""Version of the JSON form of a session; a newer stored version is refused."""


_SORTED_JSON = json.JSONEncoder(sort_keys=True)
"""`json.dumps(value, sort_keys=True)` without building an encoder on every call."""


_ID_BYTES = 16
_POOL_IDS = 64
_id_pool: list[str] = []
"""Session ids drawn but not yet handed out: one system call serves 64 of them."""


def _forget_id_pool() -> None:
    """A forked child must not hand out the ids its parent will also hand out."""
    _id_pool.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_id_pool)


def _id_mask(byte_6: int, byte_8: int, rest: int) -> int:
    """One number for a pool's worth of ids: in each id's 16 bytes, `byte_6` and
    `byte_8` at the bytes holding the UUID version and variant, `rest` elsewhere."""
    one = bytearray([rest] * _ID_BYTES)
    one[6], one[8] = byte_6, byte_8
    return int.from_bytes(bytes(one) * _POOL_IDS, "big")


_KEEP = _id_mask(0x0F, 0x3F, 0xFF)
_SET = _id_mask(0x40, 0x80, 0x00)


def _draw_ids() -> None:
    """Fill the pool: random bytes from `os.urandom`, the version and variant bits of
    every id set at once, cut into 32 hex digits each."""
    size = _ID_BYTES * _POOL_IDS
    number = int.from_bytes(os.urandom(size), "big") & _KEEP | _SET
    _id_pool.extend(number.to_bytes(size, "big").hex(" ", _ID_BYTES).split(" "))


def new_session_id() -> str:
    """A random (version 4) UUID as 32 hex digits, built without the uuid module, which
    is slow to import and to call. The random bytes come from `os.urandom`, drawn for
    many ids at once."""
    if not _id_pool:
        _draw_ids()
    return _id_pool.pop()


@dataclass(kw_only=True, slots=True)
class AgentSession:
    """One conversation: its messages, metadata, provider state and pending approvals."""

    id: str = field(default_factory=new_session_id)
    messages: list[ChatMessage] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    provider_state: dict[str, Any] = field(default_factory=dict)
    pending_approvals: list[ApprovalRequestContent] = field(default_factory=list)
    spent_approvals: list[str] = field(default_factory=list)
    """Call ids whose approval was used; an approval for one of them again is a replay."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    """What every run of this session used so far (checked against session limits)."""
    request_hash: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    revision: str | None = None
    """The stored revision this copy was loaded from or last saved as; None if never stored.
    A store saves only when its revision still matches (else `SessionConflictError`)."""
    stored_text: str | None = field(default=None, repr=False, compare=False)
    """The JSON the store held at `revision`: the base a conflicting turn is re-applied on."""

    def pin(self, fact: str) -> ChatMessage:
        """Add `fact` to the conversation as a pinned user message, which compression
        keeps word for word however long the conversation grows; the message is returned
        (set its `pinned` to False to unpin it). Refused while the session waits on
        approvals: a message then would part a tool call from its result."""
        if not isinstance(fact, str) or not fact.strip():
            raise ValueError(f"a pinned fact must be non-empty text, not {fact!r}")
        if self.pending_approvals:
            raise ApprovalError(
                f"session {self.id!r} waits on approvals; answer them before pinning a fact"
            )
        message = ChatMessage.user(fact, pinned=True)
        self.messages.append(message)
        self.updated_at = time.time()
        return message

    @property
    def pinned(self) -> list[ChatMessage]:
        """The pinned messages of the conversation, in order."""
        return [m for m in self.messages if m.pinned]

    def get_provider_state(self, name: str, default: Any = None) -> Any:
        """State a context provider keeps in this session (JSON values only)."""
        return self.provider_state.get(name, default)

    def set_provider_state(self, name: str, value: Any) -> None:
        self.provider_state[name] = value

    def touch_request_hash(self, messages: Sequence[ChatMessage]) -> str:
        """Record a hash of the request about to run (lets stores spot replays)."""
        digest = hashlib.sha256()
        for message in messages:
            contents = message.contents
            if (
                len(contents) == 1
                and type(contents[0]) is TextContent
                and message.author_name is None
                and message.message_id is None
                and not message.pinned
            ):  # the usual request, hashed without building its JSON
                # (`_value_` is what `.value` returns, read without the enum's property;
                # a lone surrogate, which a model or tool may produce, is hashed as is)
                text = f"t{message.role._value_}\x00{contents[0].text}\x00"
                digest.update(text.encode("utf-8", "surrogatepass"))
            else:
                digest.update(b"j" + _SORTED_JSON.encode(message.to_dict()).encode())
        self.request_hash = digest.hexdigest()
        self.updated_at = time.time()
        return self.request_hash

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": SESSION_FORMAT,
            "id": self.id,
            "messages": [m.to_dict() for m in self.messages],
            "metadata": self.metadata,
            "provider_state": self.provider_state,
            "pending_approvals": [content_to_dict(a) for a in self.pending_approvals],
            **({"spent_approvals": list(self.spent_approvals)} if self.spent_approvals else {}),
            **({"usage": self.usage.to_dict()} if self.usage.requests else {}),
            "request_hash": self.request_hash,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "revision": self.revision,
        }

    @classmethod
    def from_dict(cls, data: Any) -> AgentSession:
        if not isinstance(data, dict):
            raise SessionFormatError(f"a session must be a JSON object, got {type(data).__name__}")
        version = data.get("format")
        if not isinstance(version, int):
            raise SessionFormatError("not a raf session: the 'format' number is missing")
        if version > SESSION_FORMAT:
            raise SessionFormatError(
                f"session {data.get('id', '?')!r} was written in format {version}, newer than "
                f"this raf understands ({SESSION_FORMAT}); upgrade raf-agents to read it"
            )
        if "id" not in data:
            raise SessionFormatError("a session lacks its 'id'")
        pending = []
        for item in data.get("pending_approvals", []):
            content = content_from_dict(item)
            if not isinstance(content, ApprovalRequestContent):
                raise SessionFormatError("pending approvals must be approval requests")
            pending.append(content)
        return cls(
            id=str(data["id"]),
            messages=[ChatMessage.from_dict(m) for m in data.get("messages", [])],
            metadata=dict(data.get("metadata") or {}),
            provider_state=dict(data.get("provider_state") or {}),
            pending_approvals=pending,
            spent_approvals=[str(c) for c in data.get("spent_approvals") or []],
            usage=UsageTotals.from_dict(data.get("usage")),
            request_hash=data.get("request_hash"),
            created_at=float(data.get("created_at", time.time())),
            updated_at=float(data.get("updated_at", time.time())),
            revision=revision if isinstance(revision := data.get("revision"), str) else None,
        )

    def to_json(self, *, revision: str | None = None) -> str:
        """The JSON form; `revision` (when given) replaces the copy's own revision."""
        data = self.to_dict()
        if revision is not None:
            data["revision"] = revision
        return json.dumps(data, ensure_ascii=False)

    def mark_stored(self, revision: str, text: str) -> None:
        """Record that a store holds `text` as this session at `revision` (stores call it
        after every load and save)."""
        self.revision = revision
        self.stored_text = text

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "session") -> AgentSession:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SessionFormatError(
                f"{source} is not valid JSON (truncated or damaged?): {exc}"
            ) from None
        return cls.from_dict(data)

    def snapshot(self) -> AgentSession:
        """A deep copy, so a failed run can be rolled back."""
        return copy.deepcopy(self)


def next_revision(previous: str | None) -> str:
    """A fresh revision after `previous`: a counter for people, a random part for safety
    (a session deleted and created again never reuses a revision)."""
    count = 0
    if previous:
        head = previous.split(".", 1)[0]
        count = int(head) if head.isdigit() else 0
    return f"{count + 1}.{os.urandom(6).hex()}"


@runtime_checkable
class SessionStore(Protocol):
    """Keeps sessions between runs and processes: four methods."""

    async def save(self, session: AgentSession) -> None:
        """Store the session only if the stored revision is still `session.revision`
        (nothing stored when it is None), atomically; then `session.mark_stored(...)`
        with a fresh revision. Otherwise raise `SessionConflictError`, storing nothing."""

    async def load(self, session_id: str) -> AgentSession:
        """The stored session, marked with its revision; `SessionNotFoundError` when
        there is none."""

    async def delete(self, session_id: str) -> bool:
        """Remove a session; False when there was none."""

    async def list(self) -> list[str]:
        """Ids of the stored sessions, most recently updated first."""


@dataclass(kw_only=True, slots=True, frozen=True)
class SessionLease:
    """Who holds a session's run lock, and until when: one run at a time per session,
    for every process that shares the store."""

    session_id: str
    holder: str
    """The run holding it (a random run id, unique across processes)."""
    expires_at: float
    """When it lapses unless renewed, in seconds since the epoch by the store's clock
    (`math.inf` for a store of this process only, whose holders cannot die apart from it)."""
    cancel: str | None = None
    """Why another process asked the holder to stop its run, once one did."""


@runtime_checkable
class SessionLeases(Protocol):
    """A run lock per session kept in the store itself, so that every process sharing the
    store sees it: taken for a run, renewed while the run lasts, given back when it ends,
    and free again once a holder that died stops renewing it."""

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        """Take the session's lease for `seconds` when it is free or lapsed, or renew it
        when `holder` holds it already. The lease that stands is returned: the caller has
        it when its `holder` is the caller's."""

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Give the lease back, when `holder` still holds it."""

    async def read_lease(self, session_id: str) -> SessionLease | None:
        """The lease standing on the session; None when it is free."""

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        """Ask the lease's holder to stop its run: it reads `reason` when it next renews.
        The lease, or None when the session is free."""
