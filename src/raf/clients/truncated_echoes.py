"""Finding a known secret that a provider echoed cut short: its first characters, a cut
mark and its last ones (`sk-proj-abc***...xyz`, `sk-...JMbA`), or a start or end of it
left where the rest was cut off.

A piece of a secret is masked when it stands against a cut mark (a run of `*`, `...`,
`…` or bullets) and shows at least `MARKED` of its characters, or when it is at least
`UNMARKED` characters of the secret's start or end anywhere. The pieces are one word:
one with whitespace in it is not a key's echo. Only secrets of `MIN_SECRET` characters
or more are looked for in pieces.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

__all__ = ["MARKED", "MIN_SECRET", "UNMARKED", "mask_truncated"]

MARKED = 3
"""Characters of a secret's start (before a cut mark) or end (after one) that are masked."""
UNMARKED = 8
"""Characters of a secret's start or end that are masked with no cut mark beside them."""
MIN_SECRET = 8
"""Shorter secrets are only masked whole."""

_MARK = re.compile(r"(?:[*\u2026\u2022\u25cf]|\.\.)[*.\u2026\u2022\u25cf]*")
"""Where a key was cut short: a run of stars, dots (two or more), ellipses or bullets."""
_TRIES = 32
"""Places in a secret tried for one piece beside a cut mark: a random key holds a few
characters' run once or twice; the bound keeps a secret that repeats itself cheap."""
_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
"""Case folding that keeps every index where it was (str.lower can change lengths)."""


def _one_word(text: str) -> bool:
    return not any(char.isspace() for char in text)


def _start_before(text: str, end: int, secret: str) -> int:
    """How many characters ending at `end` are the start of `secret` (0 if fewer than
    `MARKED`)."""
    gram = text[end - MARKED : end] if end >= MARKED else ""
    at = secret.rfind(gram) if gram else -1
    for _ in range(_TRIES):  # the longest start first: the first that fits is the best
        if at == -1:
            break
        size = at + MARKED
        if size <= end and text[end - size : end] == secret[:size]:
            return size if _one_word(text[end - size : end]) else 0
        at = secret.rfind(gram, 0, at + MARKED - 1)
    return 0


def _end_after(text: str, begin: int, secret: str) -> int:
    """How many characters from `begin` are the end of `secret` (0 if fewer than
    `MARKED`)."""
    gram = text[begin : begin + MARKED]
    at = secret.find(gram) if len(gram) == MARKED else -1
    for _ in range(_TRIES):  # the longest end first: the first that fits is the best
        if at == -1:
            break
        size = len(secret) - at
        if text[begin : begin + size] == secret[at:]:
            return size if _one_word(text[begin : begin + size]) else 0
        at = secret.find(gram, at + 1)
    return 0


def _spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Where in `text` (folded) pieces of `secret` (folded) stand."""
    spans: list[tuple[int, int]] = []
    for mark in _MARK.finditer(text):
        before = _start_before(text, mark.start(), secret)
        after = _end_after(text, mark.end(), secret)
        if before or after:
            spans.append((mark.start() - before, mark.end() + after))
    head, tail = secret[:UNMARKED], secret[-UNMARKED:]
    at = text.find(head)
    while at != -1:  # a start of the secret, the rest cut off
        size = UNMARKED
        while size < len(secret) and text[at + size : at + size + 1] == secret[size]:
            size += 1
        spans.append((at, at + size))
        at = text.find(head, at + size)
    at = text.find(tail)
    while at != -1:  # an end of the secret, its start cut off
        end, size = at + UNMARKED, UNMARKED
        while size < len(secret) and end - size > 0 and text[end - size - 1] == secret[-size - 1]:
            size += 1
        spans.append((end - size, end))
        at = text.find(tail, end)
    return spans


def mask_truncated(text: str, secrets: Iterable[str]) -> str:
    """`text` with every cut-short echo of the given secrets (and its cut mark) as `***`."""
    folded = text.translate(_LOWER)
    spans: list[tuple[int, int]] = []
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            spans += _spans(folded, secret.translate(_LOWER))
    if not spans:
        return text
    out: list[str] = []
    done = 0
    for start, end in sorted(spans):
        if end <= done:
            continue
        out.append(text[done:start] if start > done else "")
        if start >= done:
            out.append("***")
        done = end
    out.append(text[done:])
    return "".join(out)
