"""A bound on what compiling a model's regular expression may cost, judged from the text
before any engine sees it: counted repeats (`{n}`, `{m,n}`) are unrolled by the `regex`
engine at compile time, so `(?:(?:a{1000}){1000}){1000}` would need about 10⁹ nodes."""

from __future__ import annotations

import re

MAX_PATTERN_CHARS = 4_096
"""Longest pattern accepted."""
MAX_PATTERN_SIZE = 100_000
"""Most pattern nodes a pattern may expand to once its counted repeats are unrolled."""

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


def check_pattern(pattern: str) -> None:
    """Raise ValueError when compiling `pattern` could take more memory or time than a
    tool call may spend (the message says which limit and how to stay under it)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"the pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}"
        )
    size = expanded_size(pattern)
    if size > MAX_PATTERN_SIZE:
        raise ValueError(
            f"the pattern's counted repeats ({{n}}, {{m,n}}) expand to about {size:,} "
            f"nodes; the limit is {MAX_PATTERN_SIZE:,}: use smaller counts or '+' / '*'"
        )
