"""Idempotency keys of tool calls: one key per call, the same on every retry of it, so a
tool with side effects (an HTTP API, a payment, a file write) can make a repeated call
have no second effect.

The key is `raf-` and 32 hex digits of SHA-256 over a scope and the call id:

- inside a durable run the scope is the durable workflow's id (`idempotency_scope`,
  set by the durable step): a worker that dies after a tool's side effect and before
  its step was recorded leaves the call to be run again by another worker, with the
  same workflow id and the same call id (the model's reply is replayed from its record),
  hence the same key;
- otherwise the scope is the session id, or, in a run without a session, the run's
  random id (`RunContext.run_id`, 128 bits drawn when first read): the key then holds
  for retries within that run only, and no two runs share one. (An object's `id()` is
  no such id: Python hands the same address to the next run once the last is freed.)

Call ids come from the model's reply and are unique within a conversation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_scope: ContextVar[str | None] = ContextVar("raf_idempotency_scope", default=None)


@contextmanager
def idempotency_scope(scope: str) -> Iterator[None]:
    """Tool calls made inside take their keys from `scope` (a durable run's id)."""
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


def tool_call_key(call_id: str, *, session_id: str | None, run_id: str = "") -> str:
    """The idempotency key of the tool call `call_id` (see the module's rules)."""
    return scoped_call_key(key_scope(session_id=session_id, run_id=run_id), call_id)


def key_scope(*, session_id: str | None, run_id: str = "") -> str:
    """The scope of the keys of calls made now (see the module's rules); read it when the
    call is made, since a durable run's scope lives in a context variable. A run without
    a session must pass its `run_id`."""
    scope = _scope.get()
    if scope is None:
        if session_id:
            scope = f"session:{session_id}"
        elif run_id:
            scope = f"run:{run_id}"
        else:
            raise ValueError("a tool call outside a session needs its run's id to be keyed")
    return scope


def scoped_call_key(scope: str, call_id: str) -> str:
    """The key of call `call_id` within `scope`."""
    digest = hashlib.sha256(f"{scope}\x00{call_id}".encode()).hexdigest()
    return f"raf-{digest[:32]}"
