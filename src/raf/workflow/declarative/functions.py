"""The functions expressions may call: text, logic, numbers and tables (lists of values
or records). Names are matched without regard to case."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from raf.workflow.declarative.values import text, truthy, type_word


def _concat(*args: Any) -> str:
    return "".join(text(a) for a in args)


def _blank(value: Any = None) -> bool:
    return value is None or value == ""


def _empty(value: Any = None) -> bool:
    return value is None or (isinstance(value, list | dict | str) and len(value) == 0)


def _number(value: Any) -> float | int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        found = float(value.strip())
        return int(found) if found.is_integer() else found
    raise ValueError(f"expected a number, got {type_word(value)}")


def _table(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise ValueError(f"expected a list, got {type_word(value)}")


def _numbers(args: tuple[Any, ...]) -> list[float | int]:
    values: list[Any] = []
    for arg in args:
        values.extend(arg if isinstance(arg, list) else [arg])
    return [_number(v) for v in values]


def _round(value: Any, digits: Any = 0) -> float | int:
    n = _number(value)
    places = int(_number(digits))
    scaled = math.floor(abs(n) * 10**places + 0.5) / 10**places
    out = math.copysign(scaled, n)
    return int(out) if places <= 0 or out.is_integer() else out


def _mid(value: Any, start: Any, count: Any = None) -> str:
    s = text(value)
    begin = max(int(_number(start)) - 1, 0)
    return s[begin:] if count is None else s[begin : begin + int(_number(count))]


def _find(needle: Any, haystack: Any) -> int | None:
    found = text(haystack).find(text(needle))
    return found + 1 if found >= 0 else None


def _parse_json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc.args[0]}") from None


def _coalesce(*args: Any) -> Any:
    return next((a for a in args if not _blank(a)), None)


def _last_n(value: Any, count: Any) -> list[Any]:
    n = int(_number(count))
    return _table(value)[-n:] if n > 0 else []


def _text(value: Any, fmt: Any = None) -> str:
    if fmt is not None and isinstance(value, int | float) and not isinstance(value, bool):
        digits = text(fmt).split(".")
        if len(digits) == 2:
            return f"{value:.{len(digits[1])}f}"
    return text(value)


def _distinct(value: Any) -> list[Any]:
    out: list[Any] = []
    for item in _table(value):
        if item not in out:
            out.append(item)
    return out


def _column(value: Any, name: Any) -> list[Any]:
    key = text(name)
    return [item.get(key) if isinstance(item, dict) else None for item in _table(value)]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    # text
    "concat": _concat,
    "concatenate": _concat,
    "text": _text,
    "upper": lambda v: text(v).upper(),
    "lower": lambda v: text(v).lower(),
    "trim": lambda v: " ".join(text(v).split()),
    "len": lambda v: len(v) if isinstance(v, list | dict) else len(text(v)),
    "left": lambda v, n: text(v)[: int(_number(n))],
    "right": lambda v, n: text(v)[-int(_number(n)) :] if int(_number(n)) > 0 else "",
    "mid": _mid,
    "find": _find,
    "replace": lambda v, old, new: text(v).replace(text(old), text(new)),
    "substitute": lambda v, old, new: text(v).replace(text(old), text(new)),
    "startswith": lambda v, p: text(v).startswith(text(p)),
    "endswith": lambda v, p: text(v).endswith(text(p)),
    "contains": lambda v, p: (p in v) if isinstance(v, list) else text(p) in text(v),
    "split": lambda v, sep: text(v).split(text(sep)) if text(v) else [],
    "join": lambda v, sep=", ": text(sep).join(text(x) for x in _table(v)),
    # logic
    "if": lambda *a: None,  # evaluated lazily by the evaluator
    "not": lambda v: not truthy(v),
    "and": lambda *a: all(truthy(v) for v in a),
    "or": lambda *a: any(truthy(v) for v in a),
    "isblank": _blank,
    "isempty": _empty,
    "coalesce": _coalesce,
    "blank": lambda: None,
    # numbers
    "value": _number,
    "int": lambda v: math.floor(_number(v)),
    "round": _round,
    "abs": lambda v: abs(_number(v)),
    "min": lambda *a: min(_numbers(a)),
    "max": lambda *a: max(_numbers(a)),
    "sum": lambda *a: sum(_numbers(a)),
    "average": lambda *a: sum(_numbers(a)) / len(_numbers(a)),
    "mod": lambda a, b: _number(a) % _number(b),
    # tables
    "countrows": lambda v: len(_table(v)),
    "count": lambda v: len(_table(v)),
    "countif": lambda *a: None,  # evaluated per record by the evaluator
    "filter": lambda *a: None,  # evaluated per record by the evaluator
    "lookup": lambda *a: None,  # evaluated per record by the evaluator
    "forall": lambda *a: None,  # evaluated per record by the evaluator
    "first": lambda v: _table(v)[0] if _table(v) else None,
    "last": lambda v: _table(v)[-1] if _table(v) else None,
    "firstn": lambda v, n: _table(v)[: int(_number(n))],
    "lastn": _last_n,
    "index": lambda v, i: _table(v)[int(_number(i)) - 1],
    "table": lambda *a: list(a),
    "sequence": lambda n, start=1: [
        int(_number(start)) + i for i in range(min(int(_number(n)), 10_000))
    ],
    "append": lambda v, item: [*_table(v), item],
    "column": _column,
    "distinct": _distinct,
    # values
    "parsejson": _parse_json,
    "json": lambda v: json.dumps(v, ensure_ascii=False),
}
"""Every function an expression may call, by lower-case name."""
