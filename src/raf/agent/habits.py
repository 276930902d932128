"""What `Agent(...)` says to the habits of other frameworks: a positional model string,
`model=`, `client=`, `system_prompt=`, a misspelt keyword. Each gets a `TypeError` (a
call that cannot bind, as Python's own) whose message says what to write instead."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

RENAMED: dict[str, str] = {
    "model": "chat_client",
    "client": "chat_client",
    "llm": "chat_client",
    "model_client": "chat_client",
    "system_prompt": "instructions",
    "system_message": "instructions",
    "prompt": "instructions",
    "output_schema": "output_type",
    "response_format": "output_type",
    "result_type": "output_type",
    "retries": "output_retries",
}
"""Keywords of other frameworks and the `Agent` keyword that means the same."""


def _shown(value: Any) -> str:
    """The value as the user would write it, when short and literal; else `...`."""
    text = repr(value)
    return text if isinstance(value, str | int | float) and len(text) <= 60 else "..."


@functools.cache
def _keywords(init: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(init).parameters) - {"self"}


def refuse_habits(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], init: Callable[..., Any]
) -> None:
    """Raise a `TypeError` that says what to write, for a call to `Agent(...)` that
    `init` (its `__init__`) would refuse with a bare one; return for any other call."""
    if args:
        first = args[0]
        if isinstance(first, str) or hasattr(first, "get_response"):
            raise TypeError(
                "Agent() takes its settings by keyword: write "
                f"Agent(chat_client={_shown(first)}, ...) (a model string such as "
                "'openai:gpt-4o-mini', or a chat client)"
            )
        raise TypeError(
            f"Agent() takes its settings by keyword, got {len(args)} positional "
            f"argument(s) ({_shown(first)}); write Agent(chat_client=..., instructions=..., "
            "tools=[...])"
        )
    known = _keywords(init)
    for key, value in kwargs.items():
        if key in known:
            continue
        instead = RENAMED.get(key)
        if instead is not None:
            raise TypeError(
                f"Agent() has no argument {key!r}: write {instead}={_shown(value)} instead"
                + (
                    " (a model string such as 'openai:gpt-4o-mini', or a chat client)"
                    if instead == "chat_client"
                    else ""
                )
            )
        close = difflib.get_close_matches(key, sorted(known), n=1)
        if close:
            raise TypeError(f"Agent() has no argument {key!r}; did you mean {close[0]}=...?")
