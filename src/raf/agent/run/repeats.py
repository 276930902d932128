"""Spotting a run that repeats itself: the same call with the same result, again and again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from raf.core.contents import FunctionCallContent, FunctionResultContent, result_to_text

if TYPE_CHECKING:
    from raf.agent.run.run import Run

DEFAULT_MAX_REPEATED_CALLS = 3
"""Identical calls with identical results in a row that turn the tools off for the turn."""


def check_max_repeated_calls(value: int | None) -> int | None:
    """The setting as given; None or 0 turns the check off, 1 would stop every call."""
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise ValueError(f"max_repeated_calls must be 2 or more, or None/0 for off; got {value!r}")
    return value


def observe_repeats(
    run: Run, calls: Sequence[FunctionCallContent], results: Sequence[FunctionResultContent]
) -> list[FunctionResultContent]:
    """`results` in order, the one whose (tool, arguments, result) makes the latest run of
    identical triples reach the run's limit carrying a note to the model (the tools are
    off for the rest of the turn from then on: `run.repeat_note`)."""
    limit = run.repeat_limit
    if limit is None or run.repeat_note is not None:
        return list(results)
    out = []
    count = len(calls)
    for index, result in enumerate(results):
        # usually the call at the same place in the batch
        call = calls[index] if index < count else None
        if call is None or call.call_id != result.call_id:
            call = _call_of(result, calls)
        arguments: Any = dict(call.arguments) if call is not None else None
        seen = [result.name, arguments, result.result, result.error]
        if run.repeat_last is not None and _same(seen, run.repeat_last):
            run.repeat_count += 1
        else:
            run.repeat_last, run.repeat_count = seen, 1
        if run.repeat_count >= limit and run.repeat_note is None:
            run.repeat_note = (
                f"{result.name!r} was called {run.repeat_count} times in a row with the same "
                "arguments and returned the same result each time; tools are off for the "
                "rest of this turn: answer with what you have"
            )
            result = _annotated(result, f"[stopped repeating: {run.repeat_note}]")
        out.append(result)
    return out


def _call_of(
    result: FunctionResultContent, calls: Sequence[FunctionCallContent]
) -> FunctionCallContent | None:
    """The call `result` answers."""
    for call in calls:
        if call.call_id == result.call_id:
            return call
    return None


def _annotated(result: FunctionResultContent, note: str) -> FunctionResultContent:
    if result.error is not None:
        return replace(result, error=f"{result.error}\n\n{note}")
    text = result_to_text(result.result)
    return replace(result, result=f"{text}\n\n{note}" if text else note)


def _same(seen: list[Any], last: list[Any]) -> bool:
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
