"""Power Fx's regular-expression functions for workflow expressions: IsMatch, Match and
MatchAll. Patterns run on the `regex` engine with a time limit, so a pattern that
backtracks without end is stopped (the standard `re` cannot be).

The engine counts its time limit in CPU seconds of the whole process, checked every few
milliseconds of matching: a process that gets little of a busy machine's CPU would let a
match run for several times its limit in wall time. So the runtime evaluates a formula
that matches on a worker thread and gives it up, told to stop, once its wall time is
spent (see `raf.decl.powerfx.evaluation`); the engine's own limit bounds the CPU
the given-up match may still use."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import regex

from raf.core.bounded_regex import MATCH_SECONDS, compile_pattern
from raf.decl.powerfx.values import MAX_ROWS, text

MAX_PATTERN = 1_000
"""Longest pattern, in characters."""
_DEADLINE: ContextVar[float | None] = ContextVar("raf_pattern_deadline", default=None)
_TRY_END: ContextVar[float | None] = ContextVar("raf_pattern_try_end", default=None)


class MatchDeferred(Exception):
    """A formula tried on the event loop would match for longer than it may hold the
    loop: the caller evaluates it again, from its start, on a worker thread. Not an
    `ExpressionError`, so no IfError or IsError in the formula can catch it."""


@contextmanager
def match_time_budget(try_seconds: float | None = None) -> Iterator[None]:
    """Within the block, every match shares one `MATCH_SECONDS`, so a formula that
    matches once per row of a table is bounded as a whole. With `try_seconds`, the
    matches may take only that long together, after which `MatchDeferred` is raised."""
    now = time.monotonic()
    token = _DEADLINE.set(now + MATCH_SECONDS)
    try_token = _TRY_END.set(now + try_seconds if try_seconds is not None else None)
    try:
        yield
    finally:
        _TRY_END.reset(try_token)
        _DEADLINE.reset(token)


def _time_left() -> float:
    """Seconds the formula's matches have left (at most `MATCH_SECONDS`; 0 or less when
    spent), the try on the event loop included."""
    now = time.monotonic()
    deadline = _DEADLINE.get()
    left = MATCH_SECONDS if deadline is None else deadline - now
    try_end = _TRY_END.get()
    return left if try_end is None else min(left, try_end - now)


def _timeout() -> float:
    """The engine's time limit for the next match: what is left, but above zero, which
    the engine reads as no limit."""
    return max(_time_left(), 0.001)


def _stopped(pattern: Any) -> Exception:
    """The error of a match that ran out of time: during a try on the event loop, the
    formula is moved to a thread, where the whole budget applies."""
    if _TRY_END.get() is not None:
        return MatchDeferred()
    return _timed_out(pattern)


_OPTIONS = set("^c$imsxN")
MAX_REPEAT = 10_000
"""The most nodes a pattern may expand to once its counted repeats (`a{1000}`, nested or
not) are unrolled: the engine builds each repeat when it compiles, so `a{1000000000}`
would take gigabytes and `(a{1000}){1000}` most of a second."""


def _compile(pattern: Any, options: str) -> Any:
    source = text(pattern)
    if _time_left() <= 0.001:
        raise _stopped(pattern)  # the formula's time for patterns is spent
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown match option {''.join(unknown)!r}; use MatchOptions (Complete, "
            "Contains, BeginsWith, EndsWith, IgnoreCase, Multiline, ...) joined with &"
        )
    flags = regex.IGNORECASE if "i" in options else 0
    flags |= regex.MULTILINE if "m" in options else 0
    flags |= regex.DOTALL if "s" in options else 0
    flags |= regex.VERBOSE if "x" in options else 0
    start = r"\A(?:" if "^" in options else "(?:"
    end = r")\Z" if "$" in options else ")"
    return compile_pattern(
        source, flags, around=(start, end), max_chars=MAX_PATTERN, max_size=MAX_REPEAT
    )


def _options(options: Any, default: str) -> str:
    """The match options; without an anchor among them (`c`), `default`'s anchor."""
    given = text(options) if options is not None else ""
    if "c" not in given:
        given = default + given
    return given


def _record(found: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "FullMatch": found.group(0),
        "StartMatch": found.start() + 1,
        "SubMatches": [{"Value": g} for g in found.groups()],
    }
    record.update(found.groupdict())
    return record


def _timed_out(pattern: Any) -> ValueError:
    return ValueError(
        f"matching {text(pattern)[:80]!r} took longer than the formula's {MATCH_SECONDS:g} s "
        "for patterns and was stopped"
    )


def is_match(value: Any, pattern: Any, options: Any = None) -> bool:
    """IsMatch(text, pattern[, options]): whether the pattern matches the whole text
    (or, by the options, its start, its end or any part of it)."""
    compiled = _compile(pattern, _options(options, "^c$"))
    try:
        return compiled.search(text(value), timeout=_timeout()) is not None
    except TimeoutError:
        raise _stopped(pattern) from None


def match(value: Any, pattern: Any, options: Any = None) -> dict[str, Any] | None:
    """Match(text, pattern[, options]): the first match as a record (FullMatch,
    StartMatch, SubMatches and one field per named group), or blank."""
    compiled = _compile(pattern, _options(options, "c"))
    try:
        found = compiled.search(text(value), timeout=_timeout())
    except TimeoutError:
        raise _stopped(pattern) from None
    return _record(found) if found is not None else None


def match_all(value: Any, pattern: Any, options: Any = None) -> list[dict[str, Any]]:
    """MatchAll(text, pattern[, options]): every match, a table of match records."""
    compiled = _compile(pattern, _options(options, "c"))
    out: list[dict[str, Any]] = []
    try:
        for found in compiled.finditer(text(value), timeout=_timeout()):
            if len(out) >= MAX_ROWS:
                raise ValueError(f"more than {MAX_ROWS} matches")
            out.append(_record(found))
    except TimeoutError:
        raise _stopped(pattern) from None
    return out


PATTERN_FUNCTIONS = {"ismatch": is_match, "match": match, "matchall": match_all}
"""The pattern functions, by lower-case name."""
