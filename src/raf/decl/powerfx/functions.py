"""The functions expressions may call (a Power Fx subset): text, logic, numbers, tables
(lists of values or records) and messages. Names are matched without regard to case.
Each one refuses to make a text, table or number past the limits in `values`."""

from __future__ import annotations

import html
import json
import math
import random
import re
import uuid
from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_UP, ROUND_UP, Decimal, localcontext
from typing import Any
from urllib.parse import quote

from raf.decl.powerfx.dates import DATE_FUNCTIONS, as_datetime, format_date, is_date
from raf.decl.powerfx.number_format import format_number
from raf.decl.powerfx.patterns import PATTERN_FUNCTIONS
from raf.decl.powerfx.values import (
    MAX_ROWS,
    MAX_TEXT,
    json_default,
    message_record,
    number_result,
    text,
    truthy,
    type_word,
)


def _concat(*args: Any) -> str:
    parts = [text(a) for a in args]
    if sum(len(p) for p in parts) > MAX_TEXT:
        raise ValueError(f"the text would be longer than {MAX_TEXT} characters")
    return "".join(parts)


def _blank(value: Any = None) -> bool:
    return value is None or value == ""


def _empty(value: Any = None) -> bool:
    return value is None or (isinstance(value, list | dict | str) and len(value) == 0)


def _is_numeric(value: Any) -> bool:
    """IsNumeric(value): a number, or text that reads as one ("1" but not "1+1" or "A")."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    if not isinstance(value, str) or len(value) > 400 or "_" in value:
        return False
    try:
        return math.isfinite(float(value.strip()))
    except ValueError:
        return False


def _number(value: Any) -> float | int:
    """Value(): a number from a number, a boolean or text ("1,234.5", "12%", "$3")."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return number_result(value)
    if value is None or value == "":
        return 0
    if isinstance(value, str) and len(value) <= 400:
        raw = value.strip().replace(",", "").lstrip("$")
        percent = raw.endswith("%")
        try:
            found = float(raw[:-1] if percent else raw)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
        return number_result(found / 100 if percent else found)
    raise ValueError(f"expected a number, got {type_word(value)}")


def _whole(value: Any) -> int:
    n = _number(value)
    if abs(n) > 2**53:
        raise ValueError(f"{n} is too large here")
    return int(n)


def _table(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value]
    raise ValueError(f"expected a table, got {type_word(value)}")


def _numbers(args: tuple[Any, ...]) -> list[float | int]:
    values: list[Any] = []
    for arg in args:
        values.extend(arg if isinstance(arg, list) else [arg])
    return [_number(v.get("Value") if isinstance(v, dict) else v) for v in values if v is not None]


def _count(value: Any) -> int:
    """Count(table): how many of its values are numbers (other values are not counted)."""
    cells = [row.get("Value") if isinstance(row, dict) else row for row in _table(value)]
    return sum(1 for c in cells if isinstance(c, int | float) and not isinstance(c, bool))


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def extreme(*args: Any) -> Any:
        """Min, Max: of numbers, or of dates (as dates)."""
        values = [v for arg in args for v in (arg if isinstance(arg, list) else [arg])]
        dates = [v for v in values if v is not None]
        if dates and all(is_date(v) for v in dates):
            return pick(dates, key=as_datetime)
        return pick(_numbers(args), default=None)

    return extreme


def _rounder(mode: str) -> Callable[..., float | int]:
    def rounded(value: Any, digits: Any = 0) -> float | int:
        """Round, RoundUp, RoundDown: to `digits` places (negative: to tens, hundreds);
        halves away from zero."""
        n = float(_number(value))
        places = _whole(digits)
        if places > 15 or n == 0:
            return number_result(n)
        if places < -308:
            return 0
        with localcontext() as ctx:
            ctx.prec = 400
            exact = Decimal(repr(n)).quantize(Decimal(1).scaleb(-places), rounding=mode)
        return number_result(float(exact))

    return rounded


def _mid(value: Any, start: Any, count: Any = None) -> str:
    s = text(value)
    first = _whole(start)
    if first < 1:
        raise ValueError("the start is counted from 1")
    return s[first - 1 :] if count is None else s[first - 1 : first - 1 + max(_whole(count), 0)]


def _find(needle: Any, haystack: Any, start: Any = 1) -> int | None:
    """Find(find, within[, start]): the 1-based position, blank when absent."""
    found = text(haystack).find(text(needle), max(_whole(start), 1) - 1)
    return found + 1 if found >= 0 else None


def _substitute(value: Any, old: Any, new: Any, instance: Any = None) -> str:
    """Substitute(text, old, new[, instance]): every match, or only the n-th."""
    s, o, n = text(value), text(old), text(new)
    if not o:
        return s
    if instance is not None:
        wanted = _whole(instance)
        pos = -1
        for _ in range(max(wanted, 0)):
            pos = s.find(o, pos + 1)
            if pos < 0:
                return s
        return s if wanted < 1 else s[:pos] + n + s[pos + len(o) :]
    if len(s) + s.count(o) * (len(n) - len(o)) > MAX_TEXT:
        raise ValueError(f"the text would be longer than {MAX_TEXT} characters")
    return s.replace(o, n)


def _replace(value: Any, start: Any, count: Any, new: Any = None) -> str:
    """Replace(text, start, count, new): the `count` characters from `start` (1-based)
    become `new`. With three texts it substitutes (an older spelling)."""
    if new is None:
        return _substitute(value, start, count)
    s = text(value)
    first = max(_whole(start), 1) - 1
    return _concat(s[:first], new, s[first + max(_whole(count), 0) :])


def _parse_json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc.args[0]}") from None
    except RecursionError:
        raise ValueError("the JSON nests too deeply") from None


def _coalesce(*args: Any) -> Any:
    return next((a for a in args if not _blank(a)), None)


def _first_n(value: Any, count: Any = 1) -> list[Any]:
    return _table(value)[: max(_whole(count), 0)]


def _last_n(value: Any, count: Any = 1) -> list[Any]:
    n = _whole(count)
    return _table(value)[-n:] if n > 0 else []


def _text(value: Any, fmt: Any = None) -> str:
    """Text(value[, format]): a number by Power Fx's format codes ("0.00", "#,##0",
    "0%", "$ #,###"); a date by codes such as "yyyy-mm-dd hh:mm" or a DateTimeFormat
    name."""
    if fmt is not None and is_date(value):
        return format_date(value, text(fmt))
    if fmt is None or not isinstance(value, int | float) or isinstance(value, bool):
        return text(value)
    return format_number(value, text(fmt))


def _column(value: Any, name: Any) -> list[Any]:
    key = text(name)
    return [item.get(key) if isinstance(item, dict) else None for item in _table(value)]


def _sequence(count: Any, start: Any = 1, step: Any = 1) -> list[float | int]:
    """Sequence(n[, start, step]): a one-column table of n numbers."""
    n = _whole(count)
    if n > MAX_ROWS:
        raise ValueError(f"the table would have more than {MAX_ROWS} rows")
    first, by = _number(start), _number(step)
    return [number_result(first + i * by) for i in range(max(n, 0))]


def _index(value: Any, position: Any) -> Any:
    rows = _table(value)
    i = _whole(position)
    if not 1 <= i <= len(rows):
        raise ValueError(f"row {i} is outside the table's {len(rows)} rows")
    return rows[i - 1]


def _average(*args: Any) -> float | int:
    values = _numbers(args)
    if not values:
        raise ValueError("no numbers to average")
    return number_result(sum(values) / len(values))


def _power(base: Any, exponent: Any) -> float | int:
    try:
        return number_result(math.pow(float(_number(base)), float(_number(exponent))))
    except OverflowError:
        raise ValueError("the number is out of range") from None


def _char(code: Any) -> str:
    n = _whole(code)
    if not 0 <= n <= 0x10FFFF:
        raise ValueError(f"{n} is not a character code")
    return chr(n)


def _message(role: str) -> Callable[[Any], dict[str, Any]]:
    def make(value: Any = None) -> dict[str, Any]:
        """A message record, as the conversation keeps it."""
        return message_record(role, text(value))

    return make


def _message_text(value: Any) -> str:
    """MessageText(message or table of messages): their text, one message a line."""
    if isinstance(value, list):
        return "\n".join(_message_text(v) for v in value if v is not None)
    if isinstance(value, dict):
        return text(value.get("Text", value.get("text")))
    return text(value)


def _split(value: Any, separator: Any) -> list[str]:
    """Split(text, separator): a one-column table; an empty separator splits letters."""
    s, sep = text(value), text(separator)
    if not s:
        return []
    parts = s.split(sep) if sep else list(s)
    if len(parts) > MAX_ROWS:
        raise ValueError(f"the table would have more than {MAX_ROWS} rows")
    return parts


def _join(value: Any, separator: Any = ", ") -> str:
    rows = [text(r) for r in _table(value)]
    return _concat(text(separator).join(rows))


def _exp(value: Any) -> float | int:
    n = _number(value)
    if n > 700:
        raise ValueError("the number is out of range")
    return number_result(math.exp(n))


def _ln(value: Any) -> float | int:
    n = _number(value)
    if n <= 0:
        raise ValueError(f"the logarithm of {n} is not defined")
    return number_result(math.log(n))


def _log(value: Any, base: Any = 10) -> float | int:
    n, b = _number(value), _number(base)
    if n <= 0 or b <= 0 or b == 1:
        raise ValueError(f"the logarithm of {n} to base {b} is not defined")
    exact = math.log(n, b)
    return number_result(round(exact) if abs(exact - round(exact)) < 1e-12 else exact)


_HEX_BITS = 40
"""Dec2Hex and Hex2Dec work on 40-bit numbers; a negative one is its two's complement."""


def _dec2hex(value: Any, places: Any = None) -> str:
    n = _whole(value)
    if not -(2 ** (_HEX_BITS - 1)) <= n < 2 ** (_HEX_BITS - 1):
        raise ValueError(f"{n} does not fit in {_HEX_BITS} bits")
    shown = format(n % 2**_HEX_BITS, "X")
    if places is None or n < 0:
        return shown
    width = _whole(places)
    if not len(shown) <= width <= 10:
        raise ValueError(f"{shown} does not fit in {width} places")
    return shown.rjust(width, "0")


def _hex2dec(value: Any) -> int:
    raw = text(value).strip()
    if not raw or len(raw) > _HEX_BITS // 4 or any(c not in "0123456789abcdefABCDEF" for c in raw):
        raise ValueError(f"{raw!r} is not a hexadecimal number of at most 10 digits")
    n = int(raw, 16)
    return n - 2**_HEX_BITS if n >= 2 ** (_HEX_BITS - 1) else n


def _guid(value: Any = None) -> str:
    """GUID(): a new random GUID; GUID(text): that GUID, checked (as lower-case text)."""
    if value is None:
        return str(uuid.uuid4())
    try:
        return str(uuid.UUID(text(value).strip()))
    except ValueError:
        raise ValueError(f"{text(value)[:60]!r} is not a GUID") from None


def _rand_between(low: Any, high: Any) -> int:
    lo, hi = math.ceil(_number(low)), math.floor(_number(high))
    if lo > hi:
        raise ValueError(f"there is no whole number from {low} to {high}")
    return random.randint(lo, hi)


_TAGS = re.compile(r"<[^>]*>")


def _plain_text(value: Any) -> str:
    """PlainText(html): the text without its tags, entities read, runs of space as one."""
    body = _TAGS.sub(" ", text(value))
    return " ".join(html.unescape(body).replace("\xa0", " ").split())


_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}


def _sort_by_columns(value: Any, *columns: Any) -> list[Any]:
    """SortByColumns(table, "column"[, SortOrder.Descending], "column2", ...): by each
    column in turn, the first deciding."""
    table = _table(value)
    if not columns:
        raise ValueError("SortByColumns needs a column name")
    keys: list[tuple[str, bool]] = []
    i = 0
    while i < len(columns):
        name = text(columns[i])
        order = text(columns[i + 1]).lower() if i + 1 < len(columns) else "ascending"
        if order in ("ascending", "descending"):
            i += 2
        else:
            order = "ascending"
            i += 1
        if table and not any(isinstance(row, dict) and name in row for row in table):
            raise ValueError(f"the table has no column {name!r}")
        keys.append((name, order == "descending"))
    rows = list(table)
    for name, descending in reversed(keys):  # a stable sort, last column first
        cells = [row.get(name) if isinstance(row, dict) else None for row in rows]
        numeric = all(isinstance(c, int | float) or c is None for c in cells)
        order_of = {id(row): cell for row, cell in zip(rows, cells, strict=True)}

        def key(row: Any, order_of: dict[int, Any] = order_of, numeric: bool = numeric) -> Any:
            cell = order_of[id(row)]
            return (cell or 0) if numeric else text(cell)

        rows.sort(key=key, reverse=descending)
    return rows


def _by_evaluator(name: str) -> Callable[..., Any]:
    def never(*args: Any) -> Any:
        raise TypeError(f"{name} is evaluated by the expression evaluator")

    return never


FUNCTIONS: dict[str, Callable[..., Any]] = {
    # text
    "concatenate": _concat,
    "text": _text,
    "upper": lambda v: text(v).upper(),
    "lower": lambda v: text(v).lower(),
    "proper": lambda v: text(v).title(),
    "trim": lambda v: " ".join(text(v).split()),
    "trimends": lambda v: text(v).strip(),
    "len": lambda v: len(v) if isinstance(v, list | dict) else len(text(v)),
    "left": lambda v, n: text(v)[: max(_whole(n), 0)],
    "right": lambda v, n: text(v)[-_whole(n) :] if _whole(n) > 0 else "",
    "mid": _mid,
    "find": _find,
    "replace": _replace,
    "substitute": _substitute,
    "startswith": lambda v, p: text(v).lower().startswith(text(p).lower()),
    "endswith": lambda v, p: text(v).lower().endswith(text(p).lower()),
    "contains": lambda v, p: (p in v) if isinstance(v, list) else text(p) in text(v),
    "split": _split,
    "join": _join,
    "char": _char,
    "unichar": _char,
    "encodeurl": lambda v: quote(text(v), safe=""),
    "isnumeric": _is_numeric,
    "plaintext": _plain_text,
    "guid": _guid,
    "encodehtml": lambda v: "".join(_HTML.get(c, c) for c in text(v)),
    "dec2hex": _dec2hex,
    "hex2dec": _hex2dec,
    # logic
    "if": _by_evaluator("If"),
    "switch": _by_evaluator("Switch"),
    "with": _by_evaluator("With"),
    "iferror": _by_evaluator("IfError"),
    "iserror": _by_evaluator("IsError"),
    "isblankorerror": _by_evaluator("IsBlankOrError"),
    "error": _by_evaluator("Error"),
    "not": lambda v: not truthy(v),
    "and": lambda *a: all(truthy(v) for v in a),
    "or": lambda *a: any(truthy(v) for v in a),
    "isblank": _blank,
    "isempty": _empty,
    "coalesce": _coalesce,
    "blank": lambda: None,
    "boolean": lambda v: truthy(v) if not isinstance(v, str) else v.strip().lower() == "true",
    # numbers
    "value": _number,
    "decimal": _number,
    "float": _number,
    "rand": lambda: random.random(),
    "randbetween": _rand_between,
    "int": lambda v: number_result(math.floor(_number(v))),
    "trunc": lambda v, d=0: _rounder(ROUND_DOWN)(v, d),
    "round": _rounder(ROUND_HALF_UP),
    "roundup": _rounder(ROUND_UP),
    "rounddown": _rounder(ROUND_DOWN),
    "abs": lambda v: abs(_number(v)),
    "min": _extreme(min),
    "max": _extreme(max),
    "sum": lambda *a: number_result(sum(_numbers(a))),
    "average": _average,
    "mod": lambda a, b: number_result(_number(a) % _number(b)),
    "power": _power,
    "sqrt": lambda v: number_result(math.sqrt(_number(v))),
    "exp": _exp,
    "ln": _ln,
    "log": _log,
    "pi": lambda: math.pi,
    "sign": lambda v: (_number(v) > 0) - (_number(v) < 0),
    # tables
    "countrows": lambda v: len(_table(v)),
    "count": _count,
    "counta": lambda v: sum(1 for x in _table(v) if not _blank(x)),
    "countif": _by_evaluator("CountIf"),
    "filter": _by_evaluator("Filter"),
    "lookup": _by_evaluator("LookUp"),
    "forall": _by_evaluator("ForAll"),
    "search": _by_evaluator("Search"),
    "concat": _by_evaluator("Concat"),
    "sort": _by_evaluator("Sort"),
    "sortbycolumns": _sort_by_columns,
    "shuffle": lambda v: random.sample(_table(v), len(_table(v))),
    "first": lambda v: _table(v)[0] if _table(v) else None,
    "last": lambda v: _table(v)[-1] if _table(v) else None,
    "firstn": _first_n,
    "lastn": _last_n,
    "index": _index,
    "table": lambda *a: [row for arg in a for row in (arg if isinstance(arg, list) else [arg])],
    "sequence": _sequence,
    "append": lambda v, item: [*_table(v), item],
    "column": _column,
    "distinct": _by_evaluator("Distinct"),
    "addcolumns": _by_evaluator("AddColumns"),
    "dropcolumns": _by_evaluator("DropColumns"),
    "showcolumns": _by_evaluator("ShowColumns"),
    "renamecolumns": _by_evaluator("RenameColumns"),
    "groupby": _by_evaluator("GroupBy"),
    "ungroup": _by_evaluator("Ungroup"),
    "patch": _by_evaluator("Patch"),
    "set": _by_evaluator("Set"),
    "collect": _by_evaluator("Collect"),
    "clearcollect": _by_evaluator("ClearCollect"),
    "clear": _by_evaluator("Clear"),
    "remove": _by_evaluator("Remove"),
    "istype": _by_evaluator("IsType"),
    "astype": _by_evaluator("AsType"),
    "defaults": lambda v=None: {},
    # messages
    "usermessage": _message("user"),
    "agentmessage": _message("assistant"),
    "assistantmessage": _message("assistant"),
    "systemmessage": _message("system"),
    "messagetext": _message_text,
    # values
    "parsejson": _parse_json,
    "json": lambda v: json.dumps(v, ensure_ascii=False, default=json_default),
    # dates and times
    **DATE_FUNCTIONS,
    # regular expressions
    **PATTERN_FUNCTIONS,
}
"""Every function an expression may call, by lower-case name."""
