"""Power Fx's regular-expression functions for workflow expressions: IsMatch, Match and
MatchAll. Patterns run on the `regex` engine with a time limit, so a pattern that
backtracks without end is stopped (the standard `re` cannot be)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import regex

from raf.workflow.declarative.values import MAX_ROWS, text

MAX_PATTERN = 1_000
"""Longest pattern, in characters."""
MATCH_SECONDS = 1.0
"""Longest time the matches of one formula may take together."""
_DEADLINE: ContextVar[float | None] = ContextVar("raf_pattern_deadline", default=None)


@contextmanager
def match_time_budget() -> Iterator[None]:
    """Within the block, every match shares one `MATCH_SECONDS`, so a formula that
    matches once per row of a table is bounded as a whole."""
    token = _DEADLINE.set(time.monotonic() + MATCH_SECONDS)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _time_left() -> float:
    deadline = _DEADLINE.get()
    if deadline is None:
        return MATCH_SECONDS
    return max(deadline - time.monotonic(), 0.001)


_OPTIONS = set("^c$imsxN")
MAX_REPEAT = 10_000
"""The most a pattern's counted repeats (`a{1000}`, nested or not, escaped too) may
multiply to: the engine builds each repeat when it compiles, so `a{1000000000}` would
take gigabytes and `(a{1000}){1000}` most of a second."""
_COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def _compile(pattern: Any, options: str) -> Any:
    source = text(pattern)
    if _DEADLINE.get() is not None and _time_left() <= 0.001:
        raise _timed_out(pattern)  # the formula's time for patterns is spent
    if len(source) > MAX_PATTERN:
        raise ValueError(f"the pattern is {len(source)} characters; the limit is {MAX_PATTERN}")
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ValueError(
            f"unknown match option {''.join(unknown)!r}; use MatchOptions (Complete, "
            "Contains, BeginsWith, EndsWith, IgnoreCase, Multiline, ...) joined with &"
        )
    product = 1
    for low, high in _COUNTED.findall(source):
        count = max(int(low[:9]), int(high[:9]) if high else 0, 1)
        product *= count if len(low) < 9 and len(high) < 9 else MAX_REPEAT + 1
        if product > MAX_REPEAT:
            raise ValueError(
                f"the pattern's counted repeats ({{n}}) come to more than {MAX_REPEAT:,}"
            )
    flags = regex.IGNORECASE if "i" in options else 0
    flags |= regex.MULTILINE if "m" in options else 0
    flags |= regex.DOTALL if "s" in options else 0
    flags |= regex.VERBOSE if "x" in options else 0
    start = r"\A(?:" if "^" in options else "(?:"
    end = r")\Z" if "$" in options else ")"
    try:
        return regex.compile(start + source + end, flags)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ValueError(f"{source!r} is not a valid pattern: {exc}") from None


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
        return compiled.search(text(value), timeout=_time_left()) is not None
    except TimeoutError:
        raise _timed_out(pattern) from None


def match(value: Any, pattern: Any, options: Any = None) -> dict[str, Any] | None:
    """Match(text, pattern[, options]): the first match as a record (FullMatch,
    StartMatch, SubMatches and one field per named group), or blank."""
    compiled = _compile(pattern, _options(options, "c"))
    try:
        found = compiled.search(text(value), timeout=_time_left())
    except TimeoutError:
        raise _timed_out(pattern) from None
    return _record(found) if found is not None else None


def match_all(value: Any, pattern: Any, options: Any = None) -> list[dict[str, Any]]:
    """MatchAll(text, pattern[, options]): every match, a table of match records."""
    compiled = _compile(pattern, _options(options, "c"))
    out: list[dict[str, Any]] = []
    try:
        for found in compiled.finditer(text(value), timeout=_time_left()):
            if len(out) >= MAX_ROWS:
                raise ValueError(f"more than {MAX_ROWS} matches")
            out.append(_record(found))
    except TimeoutError:
        raise _timed_out(pattern) from None
    return out


PATTERN_FUNCTIONS = {"ismatch": is_match, "match": match, "matchall": match_all}
"""The pattern functions, by lower-case name."""
