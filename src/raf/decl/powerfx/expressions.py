"""Evaluating workflow expressions (a Power Fx subset) by walking the parsed tree, never
Python `eval`, within a budget: every formula run has a cap on evaluation steps, on the
text and table cells it creates, on the text it reads, and on the size of any one text,
table or number, so that no formula holds the event loop or memory for long.

    =Concat(Local.greeting, ", ", Local.userName, "!")
    =Local.count + 1 >= 3 And Not(IsBlank(System.LastMessage.Text))
    =Concat(ForAll(Local.Agents, $"- {name}: {description}"), Value, Char(10))

Inside the formula of a table function (ForAll, Filter, LookUp, CountIf, Search's
columns, Concat, Sum/Average/Min/Max over a table) the current row is `ThisRecord` (or
`ThisItem`) and its fields are also plain names; a row that is not a record is read as
`{Value: row}`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from raf.decl.powerfx.dates import ENUMS, as_datetime, enum_value, is_date, plain
from raf.decl.powerfx.patterns import PATTERN_FUNCTIONS, match_time_budget
from raf.decl.powerfx.syntax import (
    MAX_DEPTH,
    MAX_SOURCE,
    ExpressionError,
    Node,
    Token,
    parse,
    tokenize,
    walk,
)
from raf.decl.powerfx.values import (
    MAX_CELLS,
    MAX_ROWS,
    MAX_TEXT,
    check_size,
    equal,
    index,
    number_result,
    text,
    truthy,
    type_word,
)
from raf.decl.powerfx.variables import is_scope

__all__ = [
    "MAX_CELLS",
    "MAX_DEPTH",
    "MAX_READ",
    "MAX_ROWS",
    "MAX_SOURCE",
    "MAX_STEPS",
    "MAX_TEXT",
    "ROW_FUNCTIONS",
    "Expression",
    "ExpressionError",
    "Node",
    "Token",
    "parse",
    "tokenize",
    "walk",
]

MAX_STEPS = 100_000
"""Most tree nodes one formula run may evaluate (rows of table functions included)."""
MAX_READ = 20_000_000
"""Most characters of text one formula run may hand to functions and operators in all: a
step that reads a long text (a model's reply, a tool's output) costs its length, so one
read on every row of a large table cannot hold the event loop for seconds."""

ROW_FUNCTIONS = frozenset(
    {
        "filter",
        "lookup",
        "countif",
        "forall",
        "search",
        "concat",
        "sum",
        "average",
        "min",
        "max",
        "sort",
        "with",
        "addcolumns",
        "dropcolumns",
        "showcolumns",
        "renamecolumns",
        "distinct",
        "groupby",
        "ungroup",
    }
)
"""Functions whose arguments after the first may read the current row by bare names."""

_SCOPED = ("filter", "lookup", "countif", "forall")


Resolver = Callable[[tuple[str, ...]], Any]
Assigner = Callable[[tuple[str, ...], Any], None]
"""Writes a variable: how Patch changes a table held in one."""


@dataclass(slots=True)
class Expression:
    """A parsed expression, ready to evaluate against variables."""

    source: str
    tree: Node
    names: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    """Names read outside any row scope (each must start with a variable scope)."""
    calls: list[tuple[str, int]] = field(default_factory=list)
    matches: bool = False
    """Whether it calls IsMatch, Match or MatchAll, whose time depends on the pattern."""
    patches: bool = False
    """Whether it calls Patch or another behaviour function (Set, Collect, ...), which
    writes a variable while it is evaluated."""
    row_depth: int = 0
    """How deeply row functions (ForAll, Filter, ...) nest in it: 0 for none, 1 for row
    functions over the formula's tables, 2 when one runs in another's formula (once per
    row of a row), and so on."""
    slow: bool = False
    """Set by the runtime once the formula's matches outran a try on the event loop, so
    later evaluations go to a worker thread at once."""

    @classmethod
    def compile(cls, source: str) -> Expression:
        tree = parse(source)
        for node in walk(tree):
            if node.kind == "name" and node.value[0].lower() in ENUMS:
                try:
                    enum_value(node.value)
                except ValueError as exc:
                    raise ExpressionError(str(exc), source=source, offset=node.offset) from None
        for node in walk(tree):
            for i, child in enumerate(node.children):
                if child.kind == "as" and (
                    i != 0 or node.kind != "call" or node.value.lower() not in ROW_FUNCTIONS
                ):
                    raise ExpressionError(
                        f"'As {child.value}' names the rows of a table function's table "
                        "(ForAll, Filter, Sum, ...), in its first argument only",
                        source=source,
                        offset=child.offset,
                    )
        for node in walk(tree):
            if node.kind == "call" and node.value.lower() in _TYPE_TESTS:
                kind = node.children[1] if len(node.children) == 2 else None
                if (
                    kind is not None
                    and kind.kind == "name"
                    and (len(kind.value) != 1 or kind.value[0].lower() not in _TYPES)
                ):
                    raise ExpressionError(
                        f"{node.value}: unknown type {'.'.join(kind.value)!r} "
                        f"(types: {', '.join(_TYPE_NAMES)})",
                        source=source,
                        offset=kind.offset,
                    )
        names: list[tuple[tuple[str, ...], int]] = []
        _outer_names(tree, names, in_row=False)
        calls = [(n.value, n.offset) for n in walk(tree) if n.kind == "call"]
        called = {name.lower() for name, _ in calls}
        return cls(
            source=source,
            tree=tree,
            names=names,
            calls=calls,
            matches=not called.isdisjoint(PATTERN_FUNCTIONS),
            patches=not called.isdisjoint(WRITERS),
            row_depth=_row_depth(tree),
        )

    def evaluate(
        self,
        resolve: Resolver,
        functions: Mapping[str, Callable[..., Any]],
        assign: Assigner | None = None,
        *,
        try_seconds: float | None = None,
        stop: threading.Event | None = None,
    ) -> Any:
        """The value of this expression; failures are `ExpressionError`s naming it.
        `assign`, where given, lets Patch change a table held in a variable. With
        `try_seconds`, matches that take longer together raise `MatchDeferred` (the
        caller evaluates again elsewhere); once `stop` is set, the next step fails."""
        try:
            evaluator = _Evaluator(resolve, functions, self.source, _Budget(stop=stop), assign)
            if not self.matches:
                return plain(evaluator.run(self.tree))
            with match_time_budget(try_seconds):
                return plain(evaluator.run(self.tree))
        except ExpressionError:
            raise
        except RecursionError:
            raise ExpressionError("the value nests too deeply", source=self.source) from None
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise ExpressionError(str(exc), source=self.source) from None


def _row_depth(tree: Node) -> int:
    """How deeply row functions nest where their formulas run once per row: a row
    function in another's formula (an argument after the table) counts one deeper, one in
    its table argument (evaluated once) does not."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.kind == "call" and node.value.lower() in ROW_FUNCTIONS and node.children:
            deepest = max(deepest, depth + 1)
            stack.append((node.children[0], depth))
            stack.extend((child, depth + 1) for child in node.children[1:])
        else:
            stack.extend((child, depth) for child in node.children)
    return deepest


def _outer_names(node: Node, out: list[tuple[tuple[str, ...], int]], *, in_row: bool) -> None:
    """Collect the names to check against the variable scopes, in order; inside a row
    scope, a name that does not start with a scope is a field of the row, which only the
    run can check."""
    stack: list[tuple[Node, bool]] = [(node, in_row)]
    while stack:
        current, row = stack.pop()
        is_enum = current.kind == "name" and current.value[0].lower() in (*ENUMS, *_ERROR_NAMES)
        if current.kind == "name" and not is_enum and (not row or is_scope(current.value[0])):
            out.append((current.value, current.offset))
        children = current.children
        if current.kind == "call" and current.value.lower() in _TYPE_TESTS and len(children) == 2:
            children = children[:1]  # the second names a type, not a variable
        if current.kind == "call" and current.value.lower() in ROW_FUNCTIONS and children:
            marked = [(children[0], row), *((child, True) for child in children[1:])]
        else:
            marked = [(child, row) for child in children]
        stack.extend(reversed(marked))


class _LimitBroken(ExpressionError):
    """A formula that broke one of the run's limits; IfError and IsError do not catch it,
    so no formula can get past a limit by wrapping itself."""


class _Raised(ExpressionError):
    """An error a formula raised with Error(...), keeping the kind it gave."""

    kind: Any = None


_ERROR_NAMES = ("firsterror", "allerrors")
"""The error an IfError fallback reads (`FirstError.Message`), as a record or a table."""


def _text_read(value: Any) -> int:
    """Characters of text in `value`, and in the texts of a table's rows and a record's
    fields (one level down: deeper parts are read through those, and counted there)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(v) for v in value.values() if isinstance(v, str))
    if isinstance(value, list):
        return sum(_text_read(v) if isinstance(v, str | dict) else 0 for v in value)
    return 0


@dataclass(slots=True)
class _Budget:
    steps: int = 0
    cells: int = 0
    read: int = 0
    stop: threading.Event | None = None
    """Set when whoever waits for this evaluation has given up on it."""

    def step(self, node: Node, source: str) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _LimitBroken(
                f"the formula ran more than {MAX_STEPS} steps", source=source, offset=node.offset
            )
        if self.stop is not None and self.stop.is_set():
            raise _LimitBroken(
                "the formula was stopped: its run gave up waiting for it",
                source=source,
                offset=node.offset,
            )

    def reads(self, values: tuple[Any, ...] | list[Any], node: Node, source: str) -> None:
        """Count the text a step is about to read against the run's reading budget."""
        self.read += sum(_text_read(v) for v in values)
        if self.read > MAX_READ:
            raise _LimitBroken(
                f"the formula read more than {MAX_READ} characters of text",
                source=source,
                offset=node.offset,
            )

    def made(self, value: Any, node: Node, source: str) -> Any:
        """Count what a step made against the run's cells; refuse one too large."""
        try:
            self.cells += check_size(value)
        except ValueError as exc:
            raise _LimitBroken(str(exc), source=source, offset=node.offset) from None
        if self.cells > MAX_CELLS:
            raise _LimitBroken(
                f"the formula made more than {MAX_CELLS} table cells (a cell per eight characters "
                "of text)",
                source=source,
                offset=node.offset,
            )
        return value


def _row_record(row: Any) -> Any:
    return row if isinstance(row, dict) else {"Value": row}


class _Evaluator:
    def __init__(
        self,
        resolve: Resolver,
        functions: Mapping[str, Callable[..., Any]],
        source: str,
        budget: _Budget,
        assign: Assigner | None = None,
    ) -> None:
        self.resolve = resolve
        self.functions = functions
        self.source = source
        self.budget = budget
        self.assign = assign
        self.first_error: dict[str, Any] | None = None

    def fail(self, message: str, node: Node) -> ExpressionError:
        return ExpressionError(message, source=self.source, offset=node.offset)

    def run(self, node: Node) -> Any:
        self.budget.step(node, self.source)
        kind = node.kind
        if kind == "literal":
            return node.value
        if kind == "name":
            if node.value[0].lower() in ENUMS:
                try:
                    return enum_value(node.value)
                except ValueError as exc:
                    raise self.fail(str(exc), node) from None
            if node.value[0].lower() in _ERROR_NAMES:
                return self.error_name(node)
            return self.resolve(node.value)
        if kind == "list":
            return self.budget.made([self.run(c) for c in node.children], node, self.source)
        if kind == "record":
            return {k: self.run(v) for k, v in zip(node.value, node.children, strict=True)}
        if kind == "index":
            return index(self.run(node.children[0]), self.run(node.children[1]))
        if kind == "interp":
            return self.join([text(self.run(c)) for c in node.children], node)
        if kind == "unary":
            value = self.run(node.children[0])
            if node.value == "not":
                return not self.truth(value, node)
            if value is None:
                return 0
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self.fail(f"cannot negate {type_word(value)}", node)
            return -value
        if kind == "binary":
            return self.binary(node)
        if kind == "as":
            return self.run(node.children[0])
        return self.call(node)

    def truth(self, value: Any, node: Node) -> bool:
        """Whether `value` reads as true; a text is read (and counted) to tell."""
        if isinstance(value, str):
            self.budget.reads((value,), node, self.source)
        return truthy(value)

    def join(self, parts: list[str], node: Node) -> str:
        if sum(len(p) for p in parts) > MAX_TEXT:
            raise _LimitBroken(
                f"the text would be longer than {MAX_TEXT} characters",
                source=self.source,
                offset=node.offset,
            )
        joined = "".join(parts)
        self.budget.made(joined, node, self.source)
        return joined

    def call(self, node: Node) -> Any:
        name = node.value.lower()
        fn = self.functions.get(name)
        if fn is None:
            raise self.fail(f"unknown function {node.value!r}", node)
        special = _SPECIAL.get(name)
        if special is not None:
            result = special(self, node)
        else:
            args = [self.run(c) for c in node.children]
            self.budget.reads(args, node, self.source)
            try:
                result = fn(*args)
            except ExpressionError:
                raise
            except (TypeError, ValueError, IndexError, KeyError, ArithmeticError) as exc:
                raise self.fail(f"{node.value}: {exc}", node) from None
        return self.budget.made(result, node, self.source)

    # -- functions that decide what to evaluate -------------------------------------------

    def lazy_if(self, node: Node) -> Any:
        args = node.children
        if len(args) < 2:
            raise self.fail("If needs a condition and a value", node)
        for i in range(0, len(args) - 1, 2):
            if self.truth(self.run(args[i]), node):
                return self.run(args[i + 1])
        return self.run(args[-1]) if len(args) % 2 else None

    def caught(self, node: Node) -> tuple[Any, ExpressionError | None]:
        """The value of `node`, or the error it failed with; a broken limit is not caught."""
        try:
            return self.run(node), None
        except _LimitBroken:
            raise
        except ExpressionError as exc:
            return None, exc

    def if_error(self, node: Node) -> Any:
        """IfError(value, fallback[, value2, fallback2, ...][, default]): the fallback of
        the first value that fails (and no later value is evaluated); when none fails, the
        default, or else the last value."""
        args = node.children
        if len(args) < 2:
            raise self.fail("IfError needs a value and a fallback", node)
        value: Any = None
        for i in range(0, len(args) - 1, 2):
            value, error = self.caught(args[i])
            if error is not None:
                fallback = _Evaluator(
                    self.resolve, self.functions, self.source, self.budget, self.assign
                )
                fallback.first_error = {
                    "Kind": error.kind if isinstance(error, _Raised) else None,
                    "Message": error.reason,
                }
                return fallback.run(args[i + 1])
        return self.run(args[-1]) if len(args) % 2 else value

    def error_name(self, node: Node) -> Any:
        """FirstError (a record: Kind, Message) or AllErrors (a table of one) inside an
        IfError fallback."""
        if self.first_error is None:
            raise self.fail(f"{node.value[0]} is known only in an IfError fallback", node)
        if node.value[0].lower() == "allerrors":
            value: Any = [self.first_error]
        else:
            value = self.first_error
        for part in node.value[1:]:
            value = index(value, part)
        return value

    def is_blank_or_error(self, node: Node) -> bool:
        """IsBlankOrError(value): whether the value is blank (or empty text) or fails."""
        if len(node.children) != 1:
            raise self.fail("IsBlankOrError needs one value", node)
        value, error = self.caught(node.children[0])
        return error is not None or value is None or value == ""

    def is_error(self, node: Node) -> bool:
        """IsError(value): whether evaluating the value fails."""
        if len(node.children) != 1:
            raise self.fail("IsError needs one value", node)
        return self.caught(node.children[0])[1] is not None

    def error(self, node: Node) -> Any:
        """Error(message) or Error({Kind: ..., Message: ...}): fail with that message."""
        if len(node.children) != 1:
            raise self.fail("Error needs a message or an error record", node)
        info = self.run(node.children[0])
        if isinstance(info, list):
            info = info[0] if info else None
        if isinstance(info, dict):
            message = text(info.get("Message", info.get("message")))
            kind = text(info.get("Kind", info.get("kind")))
            message = message or (f"error of kind {kind}" if kind else "")
        else:
            message = text(info)
        raised = _Raised(
            message or "an error raised by Error()", source=self.source, offset=node.offset
        )
        raised.kind = info.get("Kind", info.get("kind")) if isinstance(info, dict) else None
        raise raised

    def switch(self, node: Node) -> Any:
        args = node.children
        if len(args) < 3:
            raise self.fail("Switch needs a value, a match and a result", node)
        value = self.run(args[0])
        for i in range(1, len(args) - 1, 2):
            case = self.run(args[i])
            self.budget.reads((value, case), node, self.source)
            if equal(value, case):
                return self.run(args[i + 1])
        return self.run(args[-1]) if len(args) % 2 == 0 else None

    def table(self, node: Node, value: Any) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, dict):
            return [value]
        if not isinstance(value, list):
            raise self.fail(f"{node.value} needs a table, got {type_word(value)}", node)
        return value

    def rows(self, node: Node, table: list[Any]) -> list[_Evaluator]:
        """An evaluator per row, reading the row's fields by bare names."""
        outer = self.resolve
        first = node.children[0] if node.children else None
        alias = first.value if first is not None and first.kind == "as" else "ThisRecord"
        out: list[_Evaluator] = []
        for row in table:
            record = _row_record(row)

            def resolve(parts: tuple[str, ...], record: Any = record, row: Any = row) -> Any:
                head = parts[0]
                if head in ("ThisRecord", "ThisItem", alias):
                    value: Any = row
                    rest = parts[1:]
                elif isinstance(record, dict) and head in record:
                    value = record[head]
                    rest = parts[1:]
                else:
                    return outer(parts)
                for part in rest:
                    value = index(value, part) if not isinstance(value, list) else None
                return value

            inner = _Evaluator(resolve, self.functions, self.source, self.budget, self.assign)
            inner.first_error = self.first_error
            out.append(inner)
        return out

    def per_record(self, node: Node) -> Any:
        """Filter, LookUp, CountIf and ForAll: the formula is evaluated once per row."""
        name = node.value.lower()
        args = node.children
        if len(args) < 2:
            raise self.fail(f"{node.value} needs a table and a formula", node)
        table = self.table(node, self.run(args[0]))
        results: list[Any] = []
        for row, inner in zip(table, self.rows(node, table), strict=True):
            if name == "forall":
                results.append(inner.run(args[1]))
                continue
            conditions = args[1 : 3 if name == "lookup" else None]
            if all(self.truth(inner.run(cond), node) for cond in conditions):
                if name == "lookup":
                    return inner.run(args[2]) if len(args) > 2 else row
                results.append(row)
        if name == "lookup":
            return None
        return len(results) if name == "countif" else results

    def search(self, node: Node) -> Any:
        """Search(table, text, column, ...): the rows where any named column contains the
        text, ignoring case; an empty text keeps every row."""
        args = node.children
        if len(args) < 3:
            raise self.fail("Search needs a table, a text and at least one column", node)
        table = self.table(node, self.run(args[0]))
        wanted = text(self.run(args[1])).lower()
        columns = [self.column_name(c) for c in args[2:]]
        if not wanted:
            return list(table)
        found: list[Any] = []
        for row in table:
            cells = [text(index(_row_record(row), c)) for c in columns]
            self.budget.reads(cells, node, self.source)
            if any(wanted in cell.lower() for cell in cells):
                found.append(row)
        return found

    def column_name(self, node: Node) -> str:
        if node.kind == "name" and len(node.value) == 1:
            return str(node.value[0])
        return text(self.run(node))

    def concat(self, node: Node) -> Any:
        """Concat(table, formula[, separator]) joins the formula over the rows; with
        texts only, it joins its arguments (as Concatenate)."""
        args = node.children
        first = self.run(args[0]) if args else ""
        if not isinstance(first, list) or len(args) < 2:
            rest = [text(self.run(a)) for a in args[1:]]
            return self.join([text(first), *rest], node)
        separator = text(self.run(args[2])) if len(args) > 2 else ""
        parts = [text(inner.run(args[1])) for inner in self.rows(node, first)]
        joined: list[str] = []
        for i, part in enumerate(parts):
            if i:
                joined.append(separator)
            joined.append(part)
        return self.join(joined, node)

    def aggregate(self, node: Node) -> Any:
        """Sum, Average, Min and Max: of numbers, or of a formula over a table's rows."""
        args = node.children
        fn = self.functions[node.value.lower()]
        first = self.run(args[0]) if args else None
        if isinstance(first, list) and len(args) == 2:
            values = [inner.run(args[1]) for inner in self.rows(node, first)]
            call_args: list[Any] = [values]
        else:
            call_args = [first, *[self.run(a) for a in args[1:]]]
        try:
            return fn(*call_args)
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise self.fail(f"{node.value}: {exc}", node) from None

    def with_record(self, node: Node) -> Any:
        """With(record, formula): the formula with the record's fields as names."""
        args = node.children
        if len(args) != 2:
            raise self.fail("With needs a record and a formula", node)
        record = self.run(args[0])
        if not isinstance(record, dict):
            raise self.fail(f"With needs a record, got {type_word(record)}", node)
        (inner,) = self.rows(node, [record])
        return inner.run(args[1])

    def sort(self, node: Node) -> Any:
        """Sort(table, formula[, "Descending"])."""
        args = node.children
        if len(args) < 2:
            raise self.fail("Sort needs a table and a formula", node)
        table = self.table(node, self.run(args[0]))
        order = text(self.run(args[2])).lower() if len(args) > 2 else "ascending"
        keys = [inner.run(args[1]) for inner in self.rows(node, table)]
        self.budget.reads(keys, node, self.source)
        numeric = all(isinstance(k, int | float) or k is None for k in keys)
        dated = not numeric and all(is_date(k) for k in keys)
        pairs = list(zip(keys, range(len(table)), strict=True))
        key: Callable[[tuple[Any, int]], Any] = lambda p: text(p[0])  # noqa: E731
        if numeric:
            key = lambda p: p[0] or 0  # noqa: E731
        elif dated:
            key = lambda p: as_datetime(p[0])  # noqa: E731
        pairs.sort(key=key, reverse=order.endswith("descending"))
        return [table[i] for _, i in pairs]

    def columns(self, node: Node, at_least: int) -> tuple[list[Any], list[str]]:
        """The table and the column names of DropColumns, ShowColumns, RenameColumns,
        GroupBy and Ungroup (a name is written bare or as text)."""
        args = node.children
        if len(args) < at_least + 1:
            raise self.fail(f"{node.value} needs a table and a column name", node)
        table = self.table(node, self.run(args[0]))
        names = [self.column_name(c) for c in args[1:]]
        return [_row_record(row) for row in table], names

    def add_columns(self, node: Node) -> Any:
        """AddColumns(table, name, formula, ...): each row with the new columns, their
        formulas evaluated in the row's scope."""
        args = node.children
        if len(args) < 3 or len(args) % 2 == 0:
            raise self.fail("AddColumns needs a table and pairs of a name and a formula", node)
        table = self.table(node, self.run(args[0]))
        names = [self.column_name(c) for c in args[1::2]]
        out: list[Any] = []
        for row, inner in zip(table, self.rows(node, table), strict=True):
            record = dict(_row_record(row))
            for name, formula in zip(names, args[2::2], strict=True):
                record[name] = inner.run(formula)
            out.append(self.budget.made(record, node, self.source))
        return out

    def drop_columns(self, node: Node) -> Any:
        table, names = self.columns(node, 1)
        self.known_columns(node, table, names)
        return [{k: v for k, v in row.items() if k not in names} for row in table]

    def show_columns(self, node: Node) -> Any:
        table, names = self.columns(node, 1)
        self.known_columns(node, table, names)
        return [{k: row[k] for k in names if k in row} for row in table]

    def rename_columns(self, node: Node) -> Any:
        """RenameColumns(table, old, new, ...)."""
        table, names = self.columns(node, 2)
        if len(names) % 2:
            raise self.fail("RenameColumns needs pairs of an old and a new name", node)
        renames = dict(zip(names[::2], names[1::2], strict=True))
        self.known_columns(node, table, list(renames))
        return [{renames.get(k, k): v for k, v in row.items()} for row in table]

    def known_columns(self, node: Node, table: list[Any], names: list[str]) -> None:
        present = {k for row in table for k in row}
        missing = [n for n in names if table and n not in present]
        if missing:
            raise self.fail(f"{node.value}: the table has no column {missing[0]!r}", node)

    def distinct(self, node: Node) -> Any:
        """Distinct(table, formula): the formula's different values, in first-seen order,
        as a one-column table (rows read as `Value`); Distinct(table) of its rows."""
        args = node.children
        if not 1 <= len(args) <= 2:
            raise self.fail("Distinct needs a table and a formula", node)
        table = self.table(node, self.run(args[0]))
        values = (
            [inner.run(args[1]) for inner in self.rows(node, table)] if len(args) == 2 else table
        )
        out: list[Any] = []
        for value in values:
            if not any(equal(value, seen) for seen in out):
                out.append(value)
        return out

    def group_by(self, node: Node) -> Any:
        """GroupBy(table, column, ..., groupName): a row per different combination of the
        columns, the other columns of its rows in a table named groupName."""
        table, names = self.columns(node, 2)
        *keys, group = names
        self.known_columns(node, table, keys)
        groups: list[dict[str, Any]] = []
        for row in table:
            key = {k: row.get(k) for k in keys}
            rest = {k: v for k, v in row.items() if k not in keys}
            for existing in groups:
                if all(equal(existing[k], key[k]) for k in keys):
                    existing[group].append(rest)
                    break
            else:
                groups.append({**key, group: [rest]})
        return groups

    def ungroup(self, node: Node) -> Any:
        """Ungroup(table, groupName): a row per row of each group, with its group's
        columns."""
        table, names = self.columns(node, 1)
        if len(names) != 1:
            raise self.fail("Ungroup needs a table and the name of its group column", node)
        (group,) = names
        out: list[Any] = []
        for row in table:
            inner = row.get(group)
            if inner is not None and not isinstance(inner, list):
                raise self.fail(f"Ungroup: column {group!r} does not hold tables", node)
            outer = {k: v for k, v in row.items() if k != group}
            out.extend({**outer, **_row_record(r)} for r in inner or [])
            if len(out) > MAX_ROWS:
                raise _LimitBroken(
                    f"the table would have more than {MAX_ROWS} rows",
                    source=self.source,
                    offset=node.offset,
                )
        return out

    def patch(self, node: Node) -> Any:
        """Patch(Local.table, base, change, ...): the table's first row holding every
        field of `base` gets the changes (a blank or `Defaults(...)` base adds a row); the
        variable is written and the changed row returned. Patch(record, change, ...)
        merges records."""
        args = node.children
        if not args:
            raise self.fail("Patch needs a table or a record, and changes", node)
        target = args[0]
        held = self.run(target)
        if not (target.kind == "name" and is_scope(target.value[0]) and isinstance(held, list)):
            if isinstance(held, list):
                raise self.fail("Patch changes a table only where a variable holds it", node)
            values = [held, *(self.run(a) for a in args[1:])]
            return _merge(self, node, values)
        if len(args) < 3:
            raise self.fail("Patch needs the table, the row to change and the changes", node)
        if self.assign is None:
            raise self.fail("Patch can change a table only while a workflow runs", node)
        base = self.run(args[1])
        changes = _merge(self, node, [self.run(a) for a in args[2:]])
        if base is not None and not isinstance(base, dict):
            raise self.fail(
                f"Patch: the row to change must be a record, not {type_word(base)}", node
            )
        table = list(held)
        if not base:
            row: dict[str, Any] = changes
            table.append(row)
        else:
            for i, existing in enumerate(table):
                record = _row_record(existing)
                if all(equal(record.get(k), v) for k, v in base.items()):
                    row = {**record, **changes}
                    table[i] = row
                    break
            else:
                raise self.fail(f"Patch: no row of {'.'.join(target.value)} matches {base}", node)
        if len(table) > MAX_ROWS:
            raise _LimitBroken(
                f"the table would have more than {MAX_ROWS} rows",
                source=self.source,
                offset=node.offset,
            )
        self.assign(target.value, plain(table))
        return row

    # -- behaviour functions: they write the variable their first argument names ---------

    def written(self, node: Node, what: str, least: int) -> tuple[str, ...]:
        """The variable `what` writes (its first argument, `Scope.name`)."""
        args = node.children
        if len(args) < least:
            raise self.fail(f"{what} needs {_ARGUMENTS[what]}", node)
        first = args[0]
        if first.kind != "name" or not is_scope(first.value[0]):
            raise self.fail(
                f"{what} writes a variable: give it as Scope.name (for example Local.items)", node
            )
        if self.assign is None:
            raise self.fail(f"{what} can change a variable only while a workflow runs", node)
        return tuple(first.value)

    def table_of(self, node: Node, what: str) -> list[Any]:
        """The table the first argument's variable holds (blank: an empty one)."""
        held = self.run(node.children[0])
        if held is None:
            return []
        if not isinstance(held, list):
            name = ".".join(node.children[0].value)
            raise self.fail(f"{what}: {name} holds {type_word(held)}, not a table", node)
        return list(held)

    def store(self, node: Node, parts: tuple[str, ...], table: list[Any]) -> list[Any]:
        if len(table) > MAX_ROWS:
            raise _LimitBroken(
                f"the table would have more than {MAX_ROWS} rows",
                source=self.source,
                offset=node.offset,
            )
        kept = plain(table)
        assert self.assign is not None  # written() checked it
        self.assign(parts, kept)
        return list(kept)

    def set_variable(self, node: Node) -> Any:
        """Set(Local.name, value): the variable is set; the value is returned."""
        parts = self.written(node, "Set", 2)
        if len(node.children) != 2:
            raise self.fail("Set needs a variable and a value", node)
        value = plain(self.run(node.children[1]))
        assert self.assign is not None  # written() checked it
        self.assign(parts, value)
        return value

    def collect(self, node: Node) -> Any:
        """Collect(Local.table, row, ...) adds rows (a table argument adds each of its
        rows); ClearCollect empties the table first. The table is returned."""
        what = "ClearCollect" if node.value.lower() == "clearcollect" else "Collect"
        parts = self.written(node, what, 2)
        table = [] if what == "ClearCollect" else self.table_of(node, what)
        for child in node.children[1:]:
            value = self.run(child)
            table.extend(value if isinstance(value, list) else [value])
        return self.store(node, parts, table)

    def clear(self, node: Node) -> Any:
        """Clear(Local.table) empties the table; blank is returned."""
        parts = self.written(node, "Clear", 1)
        if len(node.children) != 1:
            raise self.fail("Clear needs only the table's variable", node)
        self.table_of(node, "Clear")
        self.store(node, parts, [])
        return None

    def remove(self, node: Node) -> Any:
        """Remove(Local.table, row, ..., [RemoveFlags.All]) removes the first row equal to
        each row given (a table argument gives each of its rows), or every equal row with
        RemoveFlags.All; a row the table lacks is an error. The table is returned."""
        parts = self.written(node, "Remove", 2)
        args = list(node.children[1:])
        every = False
        last = args[-1]
        if last.kind == "name" and last.value[0].lower() == "removeflags":
            every = self.run(last) == "All"
            args.pop()
            if not args:
                raise self.fail("Remove needs the rows to remove", node)
        table = self.table_of(node, "Remove")
        for child in args:
            value = self.run(child)
            for gone in value if isinstance(value, list) else [value]:
                kept = [row for row in table if not equal(_row_record(row), gone)]
                if len(kept) == len(table):
                    raise self.fail(f"Remove: no row of {'.'.join(parts)} is {gone}", node)
                if not every:
                    at = next(i for i, row in enumerate(table) if equal(_row_record(row), gone))
                    kept = [*table[:at], *table[at + 1 :]]
                table = kept
        return self.store(node, parts, table)

    def type_test(self, node: Node) -> Any:
        """IsType(value, Type) tells whether the value is of that type; AsType(value,
        Type) gives the value, or fails when it is of another type. Types: Number, Text,
        Boolean, Record, Table, DateTime, Date, Time, Blank."""
        what = "AsType" if node.value.lower() == "astype" else "IsType"
        args = node.children
        if len(args) != 2 or args[1].kind != "name" or len(args[1].value) != 1:
            raise self.fail(f"{what} needs a value and a type name (for example Number)", node)
        wanted = args[1].value[0]
        test = _TYPES.get(wanted.lower())
        if test is None:
            raise self.fail(
                f"{what}: unknown type {wanted!r} (types: {', '.join(_TYPE_NAMES)})", args[1]
            )
        value = self.run(args[0])
        holds = test(value)
        if what == "IsType":
            return holds
        if not holds:
            raise self.fail(f"AsType: the value is {type_word(value)}, not {wanted}", node)
        return value

    def binary(self, node: Node) -> Any:
        op = node.value
        left = self.run(node.children[0])
        if op == "and":
            return self.truth(left, node) and self.truth(self.run(node.children[1]), node)
        if op == "or":
            return self.truth(left, node) or self.truth(self.run(node.children[1]), node)
        right = self.run(node.children[1])
        self.budget.reads((left, right), node, self.source)
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op == "&":
            return self.join([text(left), text(right)], node)
        if op in ("in", "exactin"):
            if isinstance(right, list):
                return any(equal(left, item) for item in right)
            if isinstance(right, dict):
                return left in right
            if op == "exactin":
                return text(left) in text(right)
            return text(left).lower() in text(right).lower()
        if op in ("<", "<=", ">", ">="):
            return self.compare(op, left, right, node)
        if op == "+" and (isinstance(left, str) or isinstance(right, str)):
            try:
                a, b = self.number(left, node), self.number(right, node)
            except ExpressionError:
                return self.join([text(left), text(right)], node)  # text that is not a number
        else:
            a, b = self.number(left, node), self.number(right, node)
        try:
            if op == "+":
                return number_result(a + b)
            if op == "-":
                return number_result(a - b)
            if op == "*":
                return number_result(a * b)
            if b == 0:
                raise self.fail("division by zero", node)
            return number_result(a / b) if op == "/" else number_result(a % b)
        except (OverflowError, ValueError) as exc:
            raise self.fail(str(exc), node) from None

    def number(self, value: Any, node: Node) -> float | int:
        if value is None:
            return 0
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | float):
            return value
        if isinstance(value, str) and len(value) <= 400:
            try:
                return number_result(float(value))
            except (ValueError, OverflowError):
                pass
        raise self.fail(f"expected a number, got {type_word(value)}", node)

    def compare(self, op: str, left: Any, right: Any, node: Node) -> bool:
        if is_date(left) or is_date(right):
            try:
                a: Any = as_datetime(left)
                b: Any = as_datetime(right)
            except ValueError as exc:
                raise self.fail(str(exc), node) from None
        elif isinstance(left, str) and isinstance(right, str):
            a = left
            b = right
        else:
            a, b = self.number(left, node), self.number(right, node)
        if op == "<":
            return bool(a < b)
        if op == "<=":
            return bool(a <= b)
        if op == ">":
            return bool(a > b)
        return bool(a >= b)


WRITERS = frozenset({"patch", "set", "collect", "clearcollect", "clear", "remove"})
"""Power Fx's behaviour functions: each writes the variable its first argument names."""
_ARGUMENTS = {
    "Set": "a variable and a value",
    "Collect": "the table's variable and the rows to add",
    "ClearCollect": "the table's variable and the rows to add",
    "Clear": "the table's variable",
    "Remove": "the table's variable and the rows to remove",
}
_TYPE_TESTS = frozenset({"istype", "astype"})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Callable[[Any], bool]] = {
    "number": _is_number,
    "decimal": _is_number,
    "float": _is_number,
    "text": lambda v: isinstance(v, str),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "record": lambda v: isinstance(v, dict),
    "table": lambda v: isinstance(v, list),
    "datetime": lambda v: isinstance(v, datetime),
    "date": lambda v: isinstance(v, date) and not isinstance(v, datetime),
    "time": lambda v: isinstance(v, time),
    "blank": lambda v: v is None,
}
"""The type names IsType and AsType read (any case)."""
_TYPE_NAMES = ("Number", "Text", "Boolean", "Record", "Table", "DateTime", "Date", "Time", "Blank")


def _merge(evaluator: _Evaluator, node: Node, parts: list[Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        if part is None:
            continue
        if not isinstance(part, dict):
            raise evaluator.fail(f"Patch: expected records to merge, got {type_word(part)}", node)
        merged.update(part)
    return merged


_SPECIAL: dict[str, Callable[[_Evaluator, Node], Any]] = {
    "if": _Evaluator.lazy_if,
    "switch": _Evaluator.switch,
    "iferror": _Evaluator.if_error,
    "iserror": _Evaluator.is_error,
    "isblankorerror": _Evaluator.is_blank_or_error,
    "error": _Evaluator.error,
    "search": _Evaluator.search,
    "concat": _Evaluator.concat,
    "sort": _Evaluator.sort,
    "with": _Evaluator.with_record,
    "addcolumns": _Evaluator.add_columns,
    "dropcolumns": _Evaluator.drop_columns,
    "showcolumns": _Evaluator.show_columns,
    "renamecolumns": _Evaluator.rename_columns,
    "distinct": _Evaluator.distinct,
    "groupby": _Evaluator.group_by,
    "ungroup": _Evaluator.ungroup,
    "patch": _Evaluator.patch,
    "set": _Evaluator.set_variable,
    "collect": _Evaluator.collect,
    "clearcollect": _Evaluator.collect,
    "clear": _Evaluator.clear,
    "remove": _Evaluator.remove,
    "istype": _Evaluator.type_test,
    "astype": _Evaluator.type_test,
    **{name: _Evaluator.per_record for name in _SCOPED},
    **{name: _Evaluator.aggregate for name in ("sum", "average", "min", "max")},
}
"""Functions the evaluator runs itself: they choose which arguments to evaluate, or
evaluate one per row."""
