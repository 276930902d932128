"""What a user's message says for one argument, read by rules that hold for any tool:
the values an argument's own description names ("'gas' or 'diesel'", "e.g. vegan,
gluten-free"), which of a set of values the message says, and a percentage as the
argument wants it (3 % is `0.03` for a rate, `3` for an argument in percent), and a
count per year said as a word ("compounded monthly" is 12 times a year), a number of
days said in weeks ("the next week" is 7 days), a date said in words as the ISO date an
argument asks for ("March 8th, 2023" is 2023-03-08), a place with its region as written
("Paris, France") where the description asks for that form, the times of day written
("at 12pm") for a time argument, and the units written after a number ("4 inches") for
a unit argument."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Sequence
from typing import Any

_QUOTED = re.compile(r"(?<![\w'\"])(['\"])([^'\"\n]{1,40}?)\1(?![\w'\"])")
"""A value a description quotes: 'gas', "single" (not the apostrophe of "player's")."""
_LISTED = re.compile(
    r"(?:\be\.?\s?g\.?,?|\bfor example,?|\bsuch as|\blike\b|\boptions?\s*(?:are|:)|\bone of:?)"
    r"\s*(.+?)(?:\.(?:\s|$)|[;)]|$)",
    re.I,
)
"""A list of values a description gives after "e.g.", "such as", "like", "options:",
"one of"."""
_SEPARATOR = re.compile(r"\s*(?:,|/|\bor\b|\band\b|\betc\b\.?)\s*", re.I)
_PERCENT = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)\s?(?:%|percent\b)", re.I)
"""A number written as a percentage: "3%", "3 %", "3 percent"."""
_IN_PERCENT = re.compile(r"percent|%")
_AS_FRACTION = re.compile(r"decimal|fraction")


def described_values(prop: dict[str, Any]) -> list[str]:
    """The values an argument's description names: quoted ones, else those listed after
    "e.g.", "such as", "like", "options:" or "one of" (each once, in order; empty:
    none)."""
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


_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTHS = {
    name: number
    for number, month in enumerate(_MONTH_NAMES, start=1)
    for name in (month, month[:3])
} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATES = [
    # March 8th, 2023; Jun. 20 2023; Jun.20,2023
    re.compile(rf"\b{_MONTH}(?:\.\s*|\s+){_DAY}(?:,\s*|\s+){_YEAR}\b", re.I),
    # the 5th of march 2023; 1st Jun. 2022
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\.?(?:,\s*|\s+){_YEAR}\b", re.I),
    re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b"),  # 2023-03-08
]
_ISO_DATE = re.compile(r"YYYY-MM-DD", re.I)


def wants_iso_date(prop: dict[str, Any]) -> bool:
    """Whether a string argument takes a date as YYYY-MM-DD (its format or its words)."""
    if prop.get("type") not in ("string", None) or "enum" in prop:
        return False
    return prop.get("format") == "date" or bool(_ISO_DATE.search(str(prop.get("description"))))


def iso_dates(text: str) -> list[str]:
    """The whole dates `text` writes (with day, month and year; "March 8th, 2023", "the
    5th of march 2023", "2023-03-08") as YYYY-MM-DD, each once, in order; a date that
    does not exist (February 30th) is none."""
    found: list[tuple[int, str]] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            month = m.group("month")
            number = int(month) if month.isdigit() else _MONTHS[month.lower()]
            try:
                day = datetime.date(int(m.group("year")), number, int(m.group("day")))
            except ValueError:
                continue
            found.append((m.start(), day.isoformat()))
    return list(dict.fromkeys(iso for _, iso in sorted(found)))


_CLOCK = re.compile(
    r"(?<![\w:.])(\d{1,2}(?::[0-5]\d)?\s?(?:[ap]m|[ap]\.m\.)(?![\w])|(?:[01]?\d|2[0-3]):[0-5]\d)(?![\w:])",
    re.I,
)
"""A time of day as written: "12pm", "3:30 PM", "7 a.m.", "15:45"."""
_TIME_WORDS = frozenset({"time", "hour", "clock"})


_NAME_WORDS = re.compile(r"[\s_\-]+|(?<=[a-z])(?=[A-Z])")
"""Where an argument's name parts into words: `start_time`, `startTime`, `start-time`."""


def _last_word(name: str, prop: dict[str, Any]) -> str | None:
    """The last word of a text argument's name, lower case (None: not free text)."""
    if prop.get("type") != "string" or "enum" in prop:
        return None
    return _NAME_WORDS.split(name.strip())[-1].lower()


def asks_for_time(name: str, prop: dict[str, Any]) -> bool:
    """Whether a text argument takes a time of day: the last word of its name is "time",
    "hour" or "clock" (`time`, `start_time`; not `timezone` or `time_period`)."""
    return _last_word(name, prop) in _TIME_WORDS


def clock_times(text: str) -> list[str]:
    """The times of day `text` writes ("at 12pm", "3:30 PM", "15:45"), as written, each
    once, in order; a "7.5" or a "2:1" ratio is none."""
    return list(dict.fromkeys(m.group(1).strip() for m in _CLOCK.finditer(text)))


_UNIT_AFTER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?([A-Za-z]{1,12})\b")
_NOT_UNITS = frozenset(
    """a an and or of to in on at by for from with the times time more less than over under
    st nd rd th x""".split()  # noqa: SIM905
)


def asks_for_unit(name: str, prop: dict[str, Any]) -> bool:
    """Whether a text argument takes a unit of measure: its name is `unit` or `units`
    (or ends in them: `length_unit`), free text."""
    return _last_word(name, prop) in ("unit", "units")


def units_written(text: str) -> list[str]:
    """The words written right after a number ("4 inches", "2mm", "10 kg"), each once, in
    order: the units the message measures in."""
    found = (m.group(1) for m in _UNIT_AFTER.finditer(text))
    return list(dict.fromkeys(w for w in found if w.lower() not in _NOT_UNITS))


_PLACE_FORM = re.compile(r"['\"][A-Z][\w.]*(?: [A-Z][\w.]*)*, [A-Z][\w.()]*(?: [\w.()]+)*['\"]")
"""An example of a place with its region in a description: 'San Francisco, CA',
'City, Country'."""
_PLACE = re.compile(r"\b([A-Z][\w.]*(?: [A-Z][\w.]*){0,3}), ([A-Z][\w.]*(?: [A-Z][\w.]*){0,2})\b")


def places_with_region(text: str, prop: dict[str, Any]) -> list[str]:
    """Where an argument's description asks for a place with its region ("in the format
    of 'City, State', such as 'San Francisco, CA'"), the places `text` writes that way
    ("Mariposa, CA", "Paris, France"), as written, each once; empty otherwise."""
    if prop.get("type") != "string" or not _PLACE_FORM.search(str(prop.get("description"))):
        return []
    return list(dict.fromkeys(f"{m.group(1)}, {m.group(2)}" for m in _PLACE.finditer(text)))
