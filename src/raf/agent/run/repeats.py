"""Spotting a run that repeats itself (the same call with the same result, again and
again): the setting, and how two calls and their results are compared (`Run.observe_repeats`
counts them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from raf.core.contents import FunctionCallContent, FunctionResultContent, result_to_text

DEFAULT_MAX_REPEATED_CALLS = 3
"""Identical calls with identical results in a row that turn the tools off for the turn."""


def check_max_repeated_calls(value: int | None) -> int | None:
    """The setting as given; None or 0 turns the check off, 1 would stop every call."""
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"max_repeated_calls must be 2 or more, or None/0 for off; got {value!r}")
    return value


def call_of(
    result: FunctionResultContent, calls: Sequence[FunctionCallContent]
) -> FunctionCallContent | None:
    """The call `result` answers."""
    for call in calls:
        if call.call_id == result.call_id:
            return call
    return None


def annotated(result: FunctionResultContent, note: str) -> FunctionResultContent:
    if result.error is not None:
        return replace(result, error=f"{result.error}\n\n{note}")
    text = result_to_text(result.result)
    return replace(result, result=f"{text}\n\n{note}" if text else note)


def same_call(seen: tuple[Any, ...], last: tuple[Any, ...]) -> bool:
    """Whether two triples are the same call and result as JSON writes them. Plain
    equality answers most cases at no cost (a call differs from the one before); the
    JSON text is compared only when they look equal, where it tells 1 from 1.0 and True."""
    try:
        if seen != last:
            return False
    except Exception:  # a value whose comparison raises: compare the JSON alone
        pass
    return _canonical(seen) == _canonical(last)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
