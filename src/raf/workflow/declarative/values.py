"""Values of expressions: how they read as text, as true or false, compare and index."""

from __future__ import annotations

import json
from typing import Any


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
    return bool(a == b)


def index(container: Any, key: Any) -> Any:
    """`container[key]`: a list by number, a record by name; blank when missing."""
    if container is None:
        return None
    if isinstance(container, list):
        if isinstance(key, int | float) and not isinstance(key, bool):
            i = int(key)
            return container[i] if -len(container) <= i < len(container) else None
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
    """A value as text: blank is "", numbers without a needless ".0", lists and records
    as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(tidy(value))
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


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
    return type(value).__name__
