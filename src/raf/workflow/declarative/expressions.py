"""Expressions of declarative workflows: a tokenizer and a Pratt parser over a fixed
grammar, evaluated by walking the tree (never Python `eval`).

    =Concat(Local.greeting, ", ", Local.userName, "!")
    =Local.count + 1 >= 3 And Not(IsBlank(System.LastMessage.Text))

Grammar: numbers, "strings", true/false, scoped names (`Local.x.y`), `a[0]`, lists
`[1, 2]`, records `{name: "x"}`, calls `Name(args)`, unary `-`/`!`/`Not`, and the binary
operators `* / %`, `+ -`, `&` (text join), `= == <> != < <= > >= in`, `And &&`, `Or ||`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from raf.core.errors import RafError
from raf.workflow.declarative.values import equal, index, text, tidy, truthy, type_word


class ExpressionError(RafError):
    """An expression that does not parse, names an unknown function, or fails to run."""

    def __init__(self, message: str, *, source: str = "", offset: int | None = None) -> None:
        self.source = source
        self.offset = offset
        where = f" at character {offset + 1}" if offset is not None else ""
        shown = f" in {source!r}" if source else ""
        super().__init__(f"{message}{where}{shown}")
        self.reason = message


# -- tokens ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.|"")*"|'(?:[^'\\]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><>|<=|>=|==|!=|&&|\|\||[-+*/%&=<>!(),.\[\]{}:])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    offset: int


def tokenize(source: str) -> list[Token]:
    """Split `source` into tokens; an unknown character is an `ExpressionError`."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            raise ExpressionError(
                f"unexpected character {source[pos]!r}", source=source, offset=pos
            )
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(Token(kind, match.group(), pos))
        pos = match.end()
    tokens.append(Token("end", "", len(source)))
    return tokens


def _unquote(text: str) -> str:
    body = text[1:-1]
    if text[0] == '"':
        body = body.replace('""', '"')
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


# -- tree --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """A node of a parsed expression."""

    kind: str
    """literal, name, index, list, record, call, unary, binary."""
    value: Any = None
    children: tuple[Node, ...] = ()
    offset: int = 0


_BINARY: dict[str, tuple[int, str]] = {
    "||": (1, "or"),
    "or": (1, "or"),
    "&&": (2, "and"),
    "and": (2, "and"),
    "=": (3, "=="),
    "==": (3, "=="),
    "<>": (3, "!="),
    "!=": (3, "!="),
    "in": (4, "in"),
    "<": (4, "<"),
    "<=": (4, "<="),
    ">": (4, ">"),
    ">=": (4, ">="),
    "&": (5, "&"),
    "+": (6, "+"),
    "-": (6, "-"),
    "*": (7, "*"),
    "/": (7, "/"),
    "%": (7, "%"),
}
_UNARY_POWER = 8
_PER_RECORD = ("filter", "lookup", "countif", "forall")
_LITERALS = {"true": True, "false": False, "blank": None, "null": None}


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = tokenize(source)
        self.pos = 0

    def fail(self, message: str, token: Token) -> ExpressionError:
        return ExpressionError(message, source=self.source, offset=token.offset)

    @property
    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, text: str) -> Token:
        token = self.take()
        if token.text != text:
            shown = repr(token.text) if token.kind != "end" else "the end"
            raise self.fail(f"expected {text!r}, found {shown}", token)
        return token

    def parse(self) -> Node:
        if self.peek.kind == "end":
            raise self.fail("empty expression", self.peek)
        node = self.expression(0)
        if self.peek.kind != "end":
            raise self.fail(f"unexpected {self.peek.text!r}", self.peek)
        return node

    def _binary(self, token: Token) -> tuple[int, str] | None:
        key = token.text.lower() if token.kind == "name" else token.text
        if token.kind in ("op", "name"):
            return _BINARY.get(key)
        return None

    def expression(self, min_power: int) -> Node:
        left = self.prefix()
        while True:
            token = self.peek
            found = self._binary(token)
            if found is None or found[0] < min_power:
                return left
            power, op = found
            self.take()
            right = self.expression(power + 1)
            left = Node("binary", op, (left, right), token.offset)

    def prefix(self) -> Node:
        token = self.take()
        if token.kind == "number":
            number = float(token.text)
            value: Any = int(number) if number.is_integer() and "." not in token.text else number
            return self.postfix(Node("literal", value, offset=token.offset))
        if token.kind == "string":
            return self.postfix(Node("literal", _unquote(token.text), offset=token.offset))
        if token.text in ("-", "!") or (token.kind == "name" and token.text.lower() == "not"):
            if token.kind == "name" and self.peek.text == "(":
                return self.postfix(self.call(token))
            operand = self.expression(_UNARY_POWER)
            op = "-" if token.text == "-" else "not"
            return Node("unary", op, (operand,), token.offset)
        if token.text == "+":
            return self.expression(_UNARY_POWER)
        if token.text == "(":
            inner = self.expression(0)
            self.expect(")")
            return self.postfix(inner)
        if token.text == "[":
            return self.postfix(Node("list", None, tuple(self.items("]")), token.offset))
        if token.text == "{":
            return self.postfix(self.record(token))
        if token.kind == "name":
            if self.peek.text == "(":
                return self.postfix(self.call(token))
            lowered = token.text.lower()
            if lowered in _LITERALS:
                return Node("literal", _LITERALS[lowered], offset=token.offset)
            parts = [token.text]
            while self.peek.text == "." and self.tokens[self.pos + 1].kind == "name":
                self.take()
                parts.append(self.take().text)
            return self.postfix(Node("name", tuple(parts), offset=token.offset))
        shown = repr(token.text) if token.kind != "end" else "the end"
        raise self.fail(f"unexpected {shown}", token)

    def items(self, close: str) -> list[Node]:
        out: list[Node] = []
        if self.peek.text == close:
            self.take()
            return out
        while True:
            out.append(self.expression(0))
            token = self.take()
            if token.text == close:
                return out
            if token.text != ",":
                raise self.fail(f"expected ',' or {close!r}", token)

    def record(self, start: Token) -> Node:
        keys: list[str] = []
        values: list[Node] = []
        if self.peek.text == "}":
            self.take()
            return Node("record", (), (), start.offset)
        while True:
            key = self.take()
            if key.kind not in ("name", "string"):
                raise self.fail("expected a field name", key)
            keys.append(key.text if key.kind == "name" else _unquote(key.text))
            self.expect(":")
            values.append(self.expression(0))
            token = self.take()
            if token.text == "}":
                return Node("record", tuple(keys), tuple(values), start.offset)
            if token.text != ",":
                raise self.fail("expected ',' or '}'", token)

    def call(self, name: Token) -> Node:
        self.expect("(")
        return Node("call", name.text, tuple(self.items(")")), name.offset)

    def postfix(self, node: Node) -> Node:
        while True:
            if self.peek.text == "[":
                start = self.take()
                index = self.expression(0)
                self.expect("]")
                node = Node("index", None, (node, index), start.offset)
            elif self.peek.text == "." and self.tokens[self.pos + 1].kind == "name":
                start = self.take()
                node = Node("index", None, (node, Node("literal", self.take().text)), start.offset)
            else:
                return node


def parse(source: str) -> Node:
    """Parse an expression (without its leading `=`)."""
    return _Parser(source).parse()


def walk(node: Node) -> list[Node]:
    """`node` and every node under it."""
    out = [node]
    for child in node.children:
        out.extend(walk(child))
    return out


# -- evaluation --------------------------------------------------------------------------

Resolver = Callable[[tuple[str, ...]], Any]


@dataclass(slots=True)
class Expression:
    """A parsed expression, ready to evaluate against variables."""

    source: str
    tree: Node
    names: list[tuple[tuple[str, ...], int]] = field(default_factory=list)
    calls: list[tuple[str, int]] = field(default_factory=list)

    @classmethod
    def compile(cls, source: str) -> Expression:
        tree = parse(source)
        nodes = walk(tree)
        return cls(
            source=source,
            tree=tree,
            names=[(n.value, n.offset) for n in nodes if n.kind == "name"],
            calls=[(n.value, n.offset) for n in nodes if n.kind == "call"],
        )

    def evaluate(self, resolve: Resolver, functions: Mapping[str, Callable[..., Any]]) -> Any:
        """The value of this expression; failures are `ExpressionError`s naming it."""
        try:
            return _Evaluator(resolve, functions, self.source).run(self.tree)
        except ExpressionError:
            raise
        except (TypeError, ValueError, ZeroDivisionError, ArithmeticError) as exc:
            raise ExpressionError(str(exc), source=self.source) from None


class _Evaluator:
    def __init__(
        self, resolve: Resolver, functions: Mapping[str, Callable[..., Any]], source: str
    ) -> None:
        self.resolve = resolve
        self.functions = functions
        self.source = source

    def fail(self, message: str, node: Node) -> ExpressionError:
        return ExpressionError(message, source=self.source, offset=node.offset)

    def run(self, node: Node) -> Any:
        kind = node.kind
        if kind == "literal":
            return node.value
        if kind == "name":
            return self.resolve(node.value)
        if kind == "list":
            return [self.run(c) for c in node.children]
        if kind == "record":
            return {k: self.run(v) for k, v in zip(node.value, node.children, strict=True)}
        if kind == "index":
            return index(self.run(node.children[0]), self.run(node.children[1]))
        if kind == "unary":
            value = self.run(node.children[0])
            if node.value == "not":
                return not truthy(value)
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise self.fail(f"cannot negate {type_word(value)}", node)
            return -value
        if kind == "binary":
            return self.binary(node)
        fn = self.functions.get(node.value.lower())
        if fn is None:
            raise self.fail(f"unknown function {node.value!r}", node)
        name = node.value.lower()
        if name == "if":
            return self.lazy_if(node)
        if name in _PER_RECORD:
            return self.per_record(name, node)
        try:
            return fn(*[self.run(c) for c in node.children])
        except ExpressionError:
            raise
        except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as exc:
            raise self.fail(f"{node.value}: {exc}", node) from None

    def lazy_if(self, node: Node) -> Any:
        args = node.children
        if len(args) < 2:
            raise self.fail("If needs a condition and a value", node)
        for i in range(0, len(args) - 1, 2):
            if truthy(self.run(args[i])):
                return self.run(args[i + 1])
        return self.run(args[-1]) if len(args) % 2 else None

    def per_record(self, name: str, node: Node) -> Any:
        """Filter, LookUp, CountIf and ForAll: the formula is evaluated once per record
        of the table, with the record as `ThisRecord`."""
        args = node.children
        if len(args) < 2:
            raise self.fail(f"{node.value} needs a table and a formula", node)
        table = self.run(args[0])
        if table is None:
            table = []
        if not isinstance(table, list):
            raise self.fail(f"{node.value} needs a table (a list), got {type_word(table)}", node)
        outer = self.resolve
        results: list[Any] = []
        for record in table:

            def resolve(parts: tuple[str, ...], record: Any = record) -> Any:
                if parts[0] not in ("ThisRecord", "ThisItem"):
                    return outer(parts)
                value = record
                for part in parts[1:]:
                    value = value.get(part) if isinstance(value, dict) else None
                return value

            inner = _Evaluator(resolve, self.functions, self.source)
            value = inner.run(args[1])
            if name == "forall":
                results.append(value)
            elif truthy(value):
                if name == "lookup":
                    return inner.run(args[2]) if len(args) > 2 else record
                results.append(record)
        if name == "lookup":
            return None
        return len(results) if name == "countif" else results

    def binary(self, node: Node) -> Any:
        op = node.value
        left = self.run(node.children[0])
        if op == "and":
            return truthy(left) and truthy(self.run(node.children[1]))
        if op == "or":
            return truthy(left) or truthy(self.run(node.children[1]))
        right = self.run(node.children[1])
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op == "&":
            return text(left) + text(right)
        if op == "in":
            if isinstance(right, list | dict):
                return left in right
            return text(left).lower() in text(right).lower()
        if op in ("<", "<=", ">", ">="):
            return self.compare(op, left, right, node)
        if op == "+" and (isinstance(left, str) or isinstance(right, str)):
            try:
                a, b = self.number(left, node), self.number(right, node)
            except ExpressionError:
                return text(left) + text(right)  # text that is not a number joins
        else:
            a, b = self.number(left, node), self.number(right, node)
        if op == "+":
            return tidy(a + b)
        if op == "-":
            return tidy(a - b)
        if op == "*":
            return tidy(a * b)
        if b == 0:
            raise self.fail("division by zero", node)
        return tidy(a / b) if op == "/" else tidy(a % b)

    def number(self, value: Any, node: Node) -> float | int:
        if value is None:
            return 0
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int | float):
            return value
        if isinstance(value, str):
            try:
                return tidy(float(value))
            except ValueError:
                pass
        raise self.fail(f"expected a number, got {type_word(value)}", node)

    def compare(self, op: str, left: Any, right: Any, node: Node) -> bool:
        if isinstance(left, str) and isinstance(right, str):
            a: Any = left
            b: Any = right
        else:
            a, b = self.number(left, node), self.number(right, node)
        if op == "<":
            return bool(a < b)
        if op == "<=":
            return bool(a <= b)
        if op == ">":
            return bool(a > b)
        return bool(a >= b)
