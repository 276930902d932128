"""What a user's message says for one argument, read by rules that hold for any tool:
the values an argument's own description names ("'gas' or 'diesel'", "e.g. vegan,
gluten-free"), which of a set of values the message says, and a percentage as the
argument wants it (3 % is `0.03` for a rate, `3` for an argument in percent), and a
count per year said as a word ("compounded monthly" is 12 times a year), a number of
days said in weeks ("the next week" is 7 days)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

_QUOTED = re.compile(r"(?<![\w'\"])(['\"])([^'\"\n]{1,40}?)\1(?![\w'\"])")
"""A value a description quotes: 'gas', "single" (not the apostrophe of "player's")."""
_LISTED = re.compile(
    r"(?:\be\.?\s?g\.?,?|\bfor example,?|\bsuch as|\boptions?\s*(?:are|:)|\bone of:?)"
    r"\s*(.+?)(?:\.(?:\s|$)|[;)]|$)",
    re.I,
)
"""A list of values a description gives after "e.g.", "such as", "options:", "one of"."""
_SEPARATOR = re.compile(r"\s*(?:,|/|\bor\b|\band\b|\betc\b\.?)\s*", re.I)
_PERCENT = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)\s?(?:%|percent\b)", re.I)
"""A number written as a percentage: "3%", "3 %", "3 percent"."""
_IN_PERCENT = re.compile(r"percent|%")
_AS_FRACTION = re.compile(r"decimal|fraction")


def described_values(prop: dict[str, Any]) -> list[str]:
    """The values an argument's description names: quoted ones, else those listed after
    "e.g.", "such as", "options:" or "one of" (each once, in order; empty: none)."""
    text = str(prop.get("description") or "")
    quoted = [m.group(2).strip() for m in _QUOTED.finditer(text)]
    found = quoted or [
        part.strip(" '\"")
        for listed in _LISTED.finditer(text)
        for part in _SEPARATOR.split(listed.group(1))
    ]
    return list(dict.fromkeys(v for v in found if v and len(v.split()) <= 4))


def says(text: str, value: str) -> bool:
    """Whether `text` says `value` as words of its own (not inside a word), any case;
    `_`, `-` and spaces in the value are one ("pet friendly" says `pet_friendly`)."""
    words = [re.escape(w) for w in re.split(r"[\s_\-]+", value.strip().lower()) if w]
    if not words:
        return False
    pattern = r"[\s_\-]+".join(words)
    return re.search(rf"(?<!\w){pattern}(?!\w)", text.lower()) is not None


def said(text: str, values: Iterable[Any]) -> list[Any]:
    """Of `values`, the strings `text` says (see `says`), in their order."""
    return [v for v in values if isinstance(v, str) and says(text, v)]


def percents(text: str) -> set[int | float]:
    """The numbers `text` writes as percentages ("3%": 3), as `numbers` reads them."""
    out: set[int | float] = set()
    for match in _PERCENT.findall(text):
        value = float(match)
        out.add(int(value) if value.is_integer() else value)
    return out


def as_fraction(prop: dict[str, Any]) -> bool:
    """Whether a percentage said for this argument is given as a fraction (3 % as 0.03):
    a number that is not whole, unless its description says it is in percent, and not
    when it says it is a decimal or fraction."""
    described = str(prop.get("description") or "").lower()
    if _AS_FRACTION.search(described):
        return True
    return prop.get("type") == "number" and not _IN_PERCENT.search(described)


def in_kind(
    values: Sequence[int | float], kind: str, fraction: bool, written: set[int | float]
) -> list[int | float]:
    """The numbers an argument of `kind` ("number" or "integer") may take: a percentage
    (one of `written`) as a fraction when `fraction`, whole numbers only for an integer."""
    out: dict[int | float, None] = {}
    for value in values:
        if fraction and value in written:
            value = round(value / 100, 10)
        if kind == "number" or isinstance(value, int):
            out[value] = None
    return list(out)


_PER_YEAR = {
    "annually": 1,
    "yearly": 1,
    "semiannually": 2,
    "semi-annually": 2,
    "biannually": 2,
    "quarterly": 4,
    "monthly": 12,
    "weekly": 52,
    "daily": 365,
}
_HOW_OFTEN = re.compile(r"\b(" + "|".join(_PER_YEAR) + r")\b", re.I)
_COUNTS_PER = re.compile(r"\b(?:times|periods|frequency)\b.*\bper\b|\bper (?:year|annum)\b")


def times_a_year(text: str, name: str, prop: dict[str, Any]) -> int | None:
    """The count a year that `text` says as a word ("compounded quarterly": 4), for a
    whole-number argument that counts times per year or per period (its description or
    name says "times ... per", "periods per year", "frequency"); None otherwise."""
    if prop.get("type") != "integer":
        return None
    described = f"{name.replace('_', ' ')} {prop.get('description') or ''}".lower()
    if not _COUNTS_PER.search(described):
        return None
    found = {_PER_YEAR[m.group(1).lower()] for m in _HOW_OFTEN.finditer(text)}
    return found.pop() if len(found) == 1 else None


_WEEKS = re.compile(r"\b(?:(a|one|next|this|\d+|two|three|four)\s+)?weeks?\b", re.I)
_WEEK_COUNTS = {"two": 2, "three": 3, "four": 4}
_IN_DAYS = re.compile(r"\bdays?\b")


def days_in_weeks(text: str, name: str, prop: dict[str, Any]) -> int | None:
    """The days `text` says in weeks ("for the next week": 7, "2 weeks": 14), for a
    whole-number argument counted in days (its name or description says "days") when
    the message says no days of its own; None otherwise."""
    if prop.get("type") != "integer" or _IN_DAYS.search(text.lower()):
        return None
    described = f"{name.replace('_', ' ')} {prop.get('description') or ''}".lower()
    if not _IN_DAYS.search(described):
        return None
    found = set()
    for match in _WEEKS.finditer(text):
        count = (match.group(1) or "a").lower()
        found.add(7 * (int(count) if count.isdigit() else _WEEK_COUNTS.get(count, 1)))
    return found.pop() if len(found) == 1 else None
