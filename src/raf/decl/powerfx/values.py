"""Values of expressions: how they read as text, as true or false, compare and index."""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from raf.decl.powerfx.dates import as_datetime, shown

MAX_TEXT = 1_000_000
"""Longest text one expression step may make, in characters."""
MAX_ROWS = 10_000
"""Most rows of one table an expression may make."""
MAX_CELLS = 1_000_000
"""Most table cells (and texts, eight characters to a cell) one formula run may make in
all."""
MAX_NUMBER = 1e300
"""Largest magnitude of a number an expression may make."""


def check_size(value: Any) -> int:
    """How many cells `value` adds (its own length, not its parts', which were counted
    when they were made; a text counts a cell per eight characters); a `ValueError` when
    one is too large."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise ValueError(f"the text would be longer than {MAX_TEXT} characters")
        return len(value) // 8 + 1
    if isinstance(value, list):
        if len(value) > MAX_ROWS:
            raise ValueError(f"the table would have more than {MAX_ROWS} rows")
        return len(value) + 1
    if isinstance(value, dict):
        return len(value) + 1
    if isinstance(value, float | int) and not isinstance(value, bool):
        number_result(value)
    return 1


def number_result(value: float | int) -> float | int:
    """A computed number, refused when it is not finite or beyond the limit; whole
    numbers below 2**53 as ints."""
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) < 2**53:
            return value
        if value.bit_length() > 1024:
            raise ValueError(f"the number is larger than {MAX_NUMBER:g}")
        value = float(value)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise ValueError(f"the number is out of range (limit {MAX_NUMBER:g})")
    return tidy(value)


def message_record(role: str, said: str) -> dict[str, Any]:
    """A message as expressions see it (`.Role`, `.Text`, `.Content`), the shape the
    message functions and agent actions make."""
    return {"Role": role, "Text": said, "Content": [{"Type": "Text", "Value": said}]}


def is_message(value: Any) -> bool:
    """A message record, as the message functions and agent actions make it."""
    return isinstance(value, dict) and "Role" in value and "Text" in value


def tidy(value: float | int) -> float | int:
    """A whole float as an int (3.0 is 3)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def equal(a: Any, b: Any) -> bool:
    """Equality as expressions see it: numbers by value, blank equal to ""."""
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if a is None or b is None:
        return (a in (None, "")) and (b in (None, ""))
    if isinstance(a, date | time) or isinstance(b, date | time):
        try:
            return as_datetime(a) == as_datetime(b)
        except ValueError:
            return False
    return bool(a == b)


def index(container: Any, key: Any) -> Any:
    """`container[key]`: a list by number (or by a field name, for that column), a
    record by name; blank when missing."""
    if container is None:
        return None
    if not isinstance(container, list | dict) and key == "Value":
        return container  # a row of a one-column table
    if isinstance(container, list):
        if isinstance(key, int | float) and not isinstance(key, bool):
            i = int(key)
            return container[i] if -len(container) <= i < len(container) else None
        if isinstance(key, str):
            return [index(row, key) for row in container]  # a column of the table
        raise TypeError(f"a list is indexed by a number, not {type_word(key)}")
    if isinstance(container, dict):
        return container.get(str(key))
    raise TypeError(f"cannot read {key!r} of {type_word(container)}")


def truthy(value: Any) -> bool:
    """Blank, false, 0, "" and "false" are false; everything else true."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0")
    return bool(value)


def text(value: Any) -> str:
    """A value as text: blank is "", numbers without a needless ".0", a message (or a
    table of messages) as its text, other lists and records as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, date | time):
        return shown(value)
    if is_message(value):
        return text(value["Text"])
    if isinstance(value, list) and value and all(is_message(v) for v in value):
        return "\n".join(text(v["Text"]) for v in value)
    return json.dumps(value, ensure_ascii=False, default=json_default)


def _number_text(value: float) -> str:
    """A number as Power Fx shows it: at most 15 significant digits (0.1 + 0.2 is "0.3"),
    written out in full (0.000001, not 1e-06) unless it is very large or very small."""
    whole = tidy(value)
    if isinstance(whole, int):
        return str(whole)
    shown = format(value, ".15g")
    if "e" in shown:
        exponent = int(shown.split("e")[1])
        if -20 < exponent < 21:
            return format(Decimal(shown), "f")
        return shown.upper()
    return shown


def json_default(value: Any) -> Any:
    """Dates in JSON, as ISO 8601 text."""
    if isinstance(value, date | time):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def type_word(value: Any) -> str:
    """A user's word for a value's type."""
    if value is None:
        return "blank"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a record"
    if isinstance(value, datetime):
        return "a date and time"
    if isinstance(value, date):
        return "a date"
    if isinstance(value, time):
        return "a time"
    return type(value).__name__
