"""Power Fx dates and times in workflow expressions: `Now`, `Date`, `DateAdd`,
`DateDiff`, `Year` ... and `Text(date, format)`.

Inside a formula a date is a `datetime.date`, a time a `datetime.time` and a date with a
time a naive `datetime.datetime` (local time, as Power Fx keeps them); they compare with
each other and print as Power Fx prints them in English (`11/23/2015 1:37 PM`). A date
leaves the formula as ISO 8601 text (`2015-11-23T13:37:47`), so variables and checkpoints
hold only JSON; every date function reads such text back.

"Now" comes from a clock that tests (or a host) can replace with `use_clock`.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

Clock = Callable[[], datetime]
"""Returns the current moment as an aware datetime."""

_CLOCK: ContextVar[Clock] = ContextVar("raf_fx_clock", default=lambda: datetime.now(UTC))

UNITS = ("milliseconds", "seconds", "minutes", "hours", "days", "months", "quarters", "years")

ENUMS: dict[str, dict[str, str]] = {
    "timeunit": {u: u.capitalize() for u in UNITS},
    "datetimeformat": {
        name.lower(): name
        for name in (
            "LongDate",
            "LongDateTime",
            "LongDateTime24",
            "LongTime",
            "LongTime24",
            "ShortDate",
            "ShortDateTime",
            "ShortDateTime24",
            "ShortTime",
            "ShortTime24",
            "UTC",
        )
    },
    "startofweek": {
        "sunday": "1",
        "monday": "2",
        "mondayzero": "3",
        "tuesday": "12",
        "wednesday": "13",
        "thursday": "14",
        "friday": "15",
        "saturday": "16",
    },
    "sortorder": {"ascending": "Ascending", "descending": "Descending"},
    "removeflags": {"first": "First", "all": "All"},
    "matchoptions": {
        "beginswith": "^c",
        "complete": "^c$",
        "contains": "c",
        "endswith": "c$",
        "ignorecase": "i",
        "multiline": "m",
        "dotall": "s",
        "freespacing": "x",
        "numberedsubmatches": "N",
    },
    "match": {
        "any": ".",
        "comma": ",",
        "digit": r"\d",
        "email": r".+@.+\.[^\.]{2,}",
        "hyphen": r"\-",
        "leftparen": r"\(",
        "letter": r"\p{L}",
        "multipledigits": r"\d+",
        "multipleletters": r"\p{L}+",
        "multiplenonspaces": r"\S+",
        "multiplespaces": r"\s+",
        "nonspace": r"\S",
        "optionaldigits": r"\d*",
        "optionalletters": r"\p{L}*",
        "optionalnonspaces": r"\S*",
        "optionalspaces": r"\s*",
        "period": r"\.",
        "rightparen": r"\)",
        "space": r"\s",
        "tab": r"\t",
    },
}
"""Power Fx's enumerations the date, sort and pattern functions take (`TimeUnit.Days`,
`SortOrder.Descending`, `MatchOptions.IgnoreCase`, `Match.Email`), by lower-case name;
each member reads as its text (a match option as its letters, a pattern as a regular
expression)."""

_FORMATS = {
    "longdate": "dddd, mmmm d, yyyy",
    "longdatetime": "dddd, mmmm d, yyyy h:mm:ss AM/PM",
    "longdatetime24": "dddd, mmmm d, yyyy hh:mm:ss",
    "longtime": "h:mm:ss AM/PM",
    "longtime24": "hh:mm:ss",
    "shortdate": "m/d/yyyy",
    "shortdatetime": "m/d/yyyy h:mm AM/PM",
    "shortdatetime24": "m/d/yyyy hh:mm",
    "shorttime": "h:mm AM/PM",
    "shorttime24": "hh:mm",
}


@contextmanager
def use_clock(clock: Clock) -> Iterator[None]:
    """Within the block, expressions read "now" from `clock` (an aware datetime)."""
    token = _CLOCK.set(clock)
    try:
        yield
    finally:
        _CLOCK.reset(token)


def is_date(value: Any) -> bool:
    return isinstance(value, date | time)


def enum_value(parts: tuple[str, ...]) -> str | None:
    """`TimeUnit.Days` and the like as their text; None for any other name."""
    members = ENUMS.get(parts[0].lower())
    if members is None:
        return None
    if len(parts) != 2 or parts[1].lower() not in members:
        raise ValueError(f"{'.'.join(parts)} is not a member of {parts[0]}")
    return members[parts[1].lower()]


def plain(value: Any) -> Any:
    """A value as it leaves a formula: dates as ISO 8601 text, inside tables and records
    too."""
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def shown(value: date | time) -> str:
    """A date as Power Fx prints it where text is wanted."""
    if isinstance(value, datetime):
        return format_date(value, _FORMATS["shortdatetime"])
    if isinstance(value, date):
        return format_date(value, _FORMATS["shortdate"])
    return format_date(value, _FORMATS["shorttime"])


def as_datetime(value: Any) -> datetime:
    """A date, time, date-time or ISO/US text as a datetime (a time on 1899-12-30, as
    Power Fx keeps it)."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, time):
        return datetime.combine(date(1899, 12, 30), value)
    if isinstance(value, str):
        return _parse(value)
    if value is None:
        raise ValueError("expected a date, got blank")
    raise ValueError(f"expected a date, got {type(value).__name__}")


_US = (
    "%m/%d/%Y",
    "%m/%d/%Y %I:%M %p",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%B %d, %Y",
    "%b %d, %Y",
    "%A, %B %d, %Y",
    "%Y-%m-%d %H:%M:%S",
)


def _parse(raw: str) -> datetime:
    s = raw.strip()
    if len(s) > 64:
        raise ValueError(f"{raw[:64]!r}… is not a date")
    try:
        found = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        for pattern in _US:
            try:
                return datetime.strptime(s, pattern)
            except ValueError:
                continue
        raise ValueError(f"{raw!r} is not a date") from None
    if found.tzinfo is not None:
        found = found.astimezone().replace(tzinfo=None)  # Power Fx keeps local time
    return found


def _time_of(raw: str) -> time:
    s = raw.strip().upper()
    for pattern in ("%H:%M", "%H:%M:%S", "%H:%M:%S.%f", "%I:%M %p", "%I:%M:%S %p"):
        try:
            return datetime.strptime(s, pattern).time()
        except ValueError:
            continue
    return as_datetime(raw).time()


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str | None):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    n = float(value or 0)
    if abs(n) > 1e7:
        raise ValueError(f"{value} is out of range for a date")
    return int(n)


def make_date(year: Any, month: Any, day: Any) -> date:
    """Date(year, month, day): months and days past their range roll over (month 13 is
    January of the next year, day 0 the last day of the month before); years 0-1899 add
    1900."""
    y, m, d = _int(year), _int(month), _int(day)
    if 0 <= y < 1900:
        y += 1900
    y += (m - 1) // 12
    m = (m - 1) % 12 + 1
    if not 1 <= y <= 9999:
        raise ValueError(f"year {y} is out of range")
    try:
        return date(y, m, 1) + timedelta(days=d - 1)
    except OverflowError:
        raise ValueError("the date is out of range") from None


def make_time(hour: Any, minute: Any, second: Any = 0, ms: Any = 0) -> time:
    """Time(hour, minute, second[, millisecond]), wrapping past midnight."""
    total = (_int(hour) * 3600 + _int(minute) * 60 + _int(second)) * 1000 + _int(ms)
    total %= 86_400_000
    return (datetime(2000, 1, 1) + timedelta(milliseconds=total)).time()


def make_datetime(
    year: Any, month: Any, day: Any, hour: Any = 0, minute: Any = 0, second: Any = 0, ms: Any = 0
) -> datetime:
    start = datetime.combine(make_date(year, month, day), time())
    offset = (_int(hour) * 3600 + _int(minute) * 60 + _int(second)) * 1000 + _int(ms)
    try:
        return start + timedelta(milliseconds=offset)
    except OverflowError:
        raise ValueError("the date is out of range") from None


def _now() -> datetime:
    return _CLOCK.get()().astimezone().replace(tzinfo=None)


def _utc_now() -> datetime:
    return _CLOCK.get()().astimezone(UTC).replace(tzinfo=None)


def _unit(value: Any) -> str:
    unit = str(value or "Days").strip().lower()
    if unit not in UNITS:
        raise ValueError(
            f"{value!r} is not a time unit ({', '.join(u.capitalize() for u in UNITS)})"
        )
    return unit


def _keep_kind(original: Any, moved: datetime) -> date | datetime:
    if isinstance(original, date) and not isinstance(original, datetime) and moved.time() == time():
        return moved.date()
    return moved


def date_add(value: Any, count: Any, unit: Any = "Days") -> date | datetime:
    """DateAdd(date, n[, unit]): months, quarters and years keep the day where the month
    has it, else its last day."""
    start = as_datetime(value)
    n = float(count or 0)
    if abs(n) > 1e9:
        raise ValueError(f"{count} is out of range")
    u = _unit(unit)
    try:
        if u in ("months", "quarters", "years"):
            months = int(n) * {"months": 1, "quarters": 3, "years": 12}[u]
            index = start.year * 12 + start.month - 1 + months
            y, m = divmod(index, 12)
            if not 1 <= y <= 9999:
                raise ValueError("the date is out of range")
            d = min(start.day, calendar.monthrange(y, m + 1)[1])
            moved = start.replace(year=y, month=m + 1, day=d)
        else:
            scale = {"milliseconds": 1, "seconds": 1e3, "minutes": 6e4, "hours": 3.6e6}
            moved = start + timedelta(milliseconds=n * scale.get(u, 8.64e7))
    except OverflowError:
        raise ValueError("the date is out of range") from None
    return _keep_kind(value, moved)


def date_diff(start: Any, end: Any, unit: Any = "Days") -> int:
    """DateDiff(start, end[, unit]): how many unit boundaries lie between them (so
    December 31 to January 1 is one year); negative when `end` comes first."""
    a, b = as_datetime(start), as_datetime(end)
    u = _unit(unit)
    if u == "years":
        return b.year - a.year
    if u == "quarters":
        return (b.year * 4 + (b.month - 1) // 3) - (a.year * 4 + (a.month - 1) // 3)
    if u == "months":
        return (b.year * 12 + b.month) - (a.year * 12 + a.month)
    if u == "days":
        return (b.date() - a.date()).days
    size = {"hours": 3600, "minutes": 60, "seconds": 1, "milliseconds": 0.001}[u]
    epoch = datetime(1, 1, 1)

    def ticks(x: datetime) -> int:
        return int((x - epoch) // timedelta(seconds=size))

    return ticks(b) - ticks(a)


def weekday(value: Any, start: Any = 1) -> int:
    """Weekday(date[, start]): 1 for Sunday by default; 2 counts from Monday = 1, 3 from
    Monday = 0, 11-17 from Monday ... Sunday = 1."""
    day = as_datetime(value).isoweekday() % 7  # Sunday 0 ... Saturday 6
    code = int(float(start or 1))
    first = {1: 0, 2: 1, 3: 1, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6, 17: 0}.get(code)
    if first is None:
        raise ValueError(f"{start!r} is not a start of week")
    return (day - first) % 7 + (0 if code == 3 else 1)


def week_num(value: Any, start: Any = 1) -> int:
    """WeekNum(date[, start]): the week of the year, the week holding 1 January being
    week 1 and weeks starting on Sunday (or the start of week given, as Weekday takes it;
    21 is ISO's numbering)."""
    when = as_datetime(value).date()
    code = int(float(start or 1))
    if code == 21:
        return when.isocalendar().week
    first = {1: 0, 2: 1, 3: 1, 11: 1, 12: 2, 13: 3, 14: 4, 15: 5, 16: 6, 17: 0}.get(code)
    if first is None:
        raise ValueError(f"{start!r} is not a start of week")
    january = date(when.year, 1, 1)
    lead = (january.isoweekday() % 7 - first) % 7  # days of week 1 before 1 January
    return (when.timetuple().tm_yday - 1 + lead) // 7 + 1


_CODE = re.compile(
    r'"[^"]*"|\\.|yyyy|yy|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|nn|n|ss|s|f{1,3}|AM/PM|am/pm|A/P|a/p',
    re.IGNORECASE,
)
_MONTHS = [calendar.month_name[i] for i in range(13)]
_DAYS = [calendar.day_name[(i - 1) % 7] for i in range(7)]  # Sunday first


def format_date(value: date | time, pattern: str) -> str:
    """Text(date, format): Power Fx's format codes (yyyy, yy, mmmm, mmm, mm, m, dddd,
    ddd, dd, d, hh, h, mm/m as minutes after an hour or before seconds, ss, s, f, AM/PM,
    A/P) and the DateTimeFormat names; "quoted" text and \\x are kept as written."""
    if len(pattern) > 200:
        raise ValueError("the date format is longer than 200 characters")
    named = _FORMATS.get(pattern.strip().lower())
    if named is not None:
        pattern = named
    if pattern.strip().lower() == "utc":
        moment = as_datetime(value).astimezone(UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    at = as_datetime(value)
    tokens = [m for m in _CODE.finditer(pattern)]
    twelve = any(m.group().lower() in ("am/pm", "a/p") for m in tokens)
    out: list[str] = []
    last = 0
    for i, match in enumerate(tokens):
        out.append(pattern[last : match.start()])
        last = match.end()
        code = match.group()
        low = code.lower()
        if code.startswith('"'):
            out.append(code[1:-1])
        elif code.startswith("\\"):
            out.append(code[1])
        elif low in ("m", "mm") and _is_minute(tokens, i):
            out.append(f"{at.minute:0{len(low)}d}")
        elif low in ("am/pm", "a/p"):  # the marker's case follows the code's
            marker = code.split("/")[0 if at.hour < 12 else 1]
            out.append(marker if len(marker) == 1 else marker[0] + code[1])
        else:
            out.append(_part(at, low, twelve))
    out.append(pattern[last:])
    return "".join(out)


def _is_minute(tokens: list[re.Match[str]], i: int) -> bool:
    before = [t.group().lower() for t in tokens[:i] if not t.group().startswith(('"', "\\"))]
    after = [t.group().lower() for t in tokens[i + 1 :] if not t.group().startswith(('"', "\\"))]
    return bool(before and before[-1] in ("h", "hh")) or bool(after and after[0] in ("s", "ss"))


def _part(at: datetime, code: str, twelve: bool) -> str:
    hour = (at.hour % 12 or 12) if twelve else at.hour
    parts: dict[str, Callable[[], str]] = {
        "yyyy": lambda: f"{at.year:04d}",
        "yy": lambda: f"{at.year % 100:02d}",
        "mmmm": lambda: _MONTHS[at.month],
        "mmm": lambda: _MONTHS[at.month][:3],
        "mm": lambda: f"{at.month:02d}",
        "m": lambda: str(at.month),
        "dddd": lambda: _DAYS[at.isoweekday() % 7],
        "ddd": lambda: _DAYS[at.isoweekday() % 7][:3],
        "dd": lambda: f"{at.day:02d}",
        "d": lambda: str(at.day),
        "hh": lambda: f"{hour:02d}",
        "h": lambda: str(hour),
        "nn": lambda: f"{at.minute:02d}",
        "n": lambda: str(at.minute),
        "ss": lambda: f"{at.second:02d}",
        "s": lambda: str(at.second),
    }
    if code.startswith("f"):
        return f"{at.microsecond // 1000:03d}"[: len(code)]
    return parts[code]()


def _parts(name: str) -> Callable[[Any], int]:
    def part(value: Any) -> int:
        return int(getattr(as_datetime(value), name))

    return part


DATE_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "now": _now,
    "utcnow": _utc_now,
    "today": lambda: _now().date(),
    "utctoday": lambda: _utc_now().date(),
    "istoday": lambda v: as_datetime(v).date() == _now().date(),
    "date": make_date,
    "time": make_time,
    "datetime": make_datetime,
    "datevalue": lambda v: as_datetime(v).date(),
    "timevalue": lambda v: _time_of(v) if isinstance(v, str) else as_datetime(v).time(),
    "datetimevalue": as_datetime,
    "dateadd": date_add,
    "datediff": date_diff,
    "year": _parts("year"),
    "month": _parts("month"),
    "day": _parts("day"),
    "hour": _parts("hour"),
    "minute": _parts("minute"),
    "second": _parts("second"),
    "weekday": weekday,
    "weeknum": week_num,
    "isoweeknum": lambda v: as_datetime(v).date().isocalendar().week,
}
"""The date functions, by lower-case name."""
