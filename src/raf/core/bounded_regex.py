"""Regular expressions from outside raf (a model's search pattern, a Power Fx formula's,
a JSON Schema's `pattern`) on the `regex` engine, bounded twice: what compiling one may
cost is judged from its text before any engine sees it (counted repeats `{n}`, `{m,n}`
are unrolled at compile time, so `(?:(?:a{1000}){1000}){1000}` would need about 10⁹
nodes), and every match runs under a time limit, so a pattern that backtracks without
end is stopped (the standard `re` cannot be).

The engine counts its limit in CPU seconds of the whole process, checked every few
milliseconds of matching; it releases the GIL while it matches a `str`, so a match on a
worker thread leaves the event loop free."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

MAX_PATTERN_CHARS = 4_096
"""Longest pattern accepted."""
MAX_PATTERN_SIZE = 100_000
"""Most pattern nodes a pattern may expand to once its counted repeats are unrolled."""
MATCH_SECONDS = 1.0
"""Longest time the matches of one piece of work (a formula, a value checked against a
schema) may take together."""

_COUNTED = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_BRACED_ESCAPES = frozenset("pPNxuUg")


def expanded_size(pattern: str) -> int:
    """An upper estimate of the nodes `pattern` expands to: every atom counts one, a
    counted repeat multiplies what it repeats by its largest count (its least count when
    open-ended), and alternatives add up. Overestimating is safe; the walk never
    underestimates a nesting of counted repeats."""
    frames: list[list[int]] = [[0, 0]]  # per open group: [size so far, size of last atom]
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        frame = frames[-1]
        if c == "\\":
            j = i + 2
            if i + 1 < n and pattern[i + 1] in _BRACED_ESCAPES and j < n and pattern[j] in "{<":
                close = pattern.find("}" if pattern[j] == "{" else ">", j)
                j = n if close == -1 else close + 1
            frame[0] += 1
            frame[1] = 1
            i = j
            continue
        if c == "[":
            i = _class_end(pattern, i)
            frame[0] += 1
            frame[1] = 1
            continue
        if c == "(":
            frames.append([0, 0])
            i += 1
            continue
        if c == ")":
            if len(frames) > 1:
                inner = frames.pop()
                group = max(inner[0], 1)
                frames[-1][0] += group
                frames[-1][1] = group
            i += 1
            continue
        if c == "{":
            counted = _COUNTED.match(pattern, i)
            if counted is not None and (counted.group(1) or counted.group(3)):
                low = int(counted.group(1) or 0)
                high = int(counted.group(3) or 0) if counted.group(2) else low
                times = max(low, high, 1)
                frame[0] += frame[1] * (times - 1)
                frame[1] *= times
                i = counted.end()
                continue
        if c in "*+?|":
            i += 1
            continue
        frame[0] += 1
        frame[1] = 1
        i += 1
    while len(frames) > 1:  # an unclosed group: the engine refuses it, count it anyway
        inner = frames.pop()
        frames[-1][0] += inner[0]
    return frames[0][0]


def _class_end(pattern: str, start: int) -> int:
    """The index after the `]` closing the character class opened at `start`."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading ']' is a literal
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return len(pattern)


def check_pattern(
    pattern: str, *, max_chars: int = MAX_PATTERN_CHARS, max_size: int = MAX_PATTERN_SIZE
) -> None:
    """Raise ValueError when compiling `pattern` could take more memory or time than its
    caller may spend (the message says which limit and how to stay under it)."""
    if len(pattern) > max_chars:
        raise ValueError(f"the pattern is {len(pattern)} characters; the limit is {max_chars}")
    size = expanded_size(pattern)
    if size > max_size:
        raise ValueError(
            f"the pattern's counted repeats ({{n}}, {{m,n}}) expand to about {size:,} "
            f"nodes; the limit is {max_size:,}: use smaller counts or '+' / '*'"
        )


def compile_pattern(
    pattern: str,
    flags: int = 0,
    *,
    around: tuple[str, str] = ("", ""),
    max_chars: int = MAX_PATTERN_CHARS,
    max_size: int = MAX_PATTERN_SIZE,
) -> Any:
    """`pattern` (between the two texts of `around`, such as anchors) compiled by the
    `regex` engine once `check_pattern` allows it; ValueError saying why when it cannot
    be. Matching with it takes a `timeout=`."""
    check_pattern(pattern, max_chars=max_chars, max_size=max_size)
    import regex

    try:
        return regex.compile(around[0] + pattern + around[1], flags)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise ValueError(f"{pattern!r} is not a valid pattern: {exc}") from None


SCHEMA_PATTERN_CHARS = 1_000
"""Longest `pattern` (or `patternProperties` name) of a JSON Schema."""
SCHEMA_PATTERN_SIZE = 10_000
"""Most nodes a JSON Schema pattern may expand to once its counted repeats are unrolled."""


@lru_cache(maxsize=512)
def schema_pattern(pattern: str) -> Any:
    """A JSON Schema `pattern`, compiled within the schema limits (and kept: a schema
    checks many values against the same few patterns)."""
    return compile_pattern(pattern, max_chars=SCHEMA_PATTERN_CHARS, max_size=SCHEMA_PATTERN_SIZE)


_DEADLINE: ContextVar[float | None] = ContextVar("raf_match_deadline", default=None)


@contextmanager
def match_budget(seconds: float = MATCH_SECONDS) -> Iterator[None]:
    """Within the block, every `search_within` shares `seconds` (an enclosing budget
    that ends sooner wins): a value with many strings to match is bounded as a whole."""
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


class MatchTimedOut(ValueError):
    """A match ran out of its time and was stopped."""


def search_within(compiled: Any, text: str) -> bool:
    """Whether `compiled` matches somewhere in `text`, within the time the enclosing
    `match_budget` has left (`MATCH_SECONDS` without one); `MatchTimedOut` past it."""
    deadline = _DEADLINE.get()
    left = MATCH_SECONDS if deadline is None else deadline - time.monotonic()
    if left <= 0:
        raise MatchTimedOut(_timed_out(compiled))
    try:
        # the engine reads a timeout of 0 as none: the least it is given is a millisecond
        return compiled.search(text, timeout=max(left, 0.001)) is not None
    except TimeoutError:
        raise MatchTimedOut(_timed_out(compiled)) from None


def _timed_out(compiled: Any) -> str:
    return (
        f"matching the pattern {compiled.pattern[:80]!r} took longer than "
        f"{MATCH_SECONDS:g} s and was stopped"
    )
