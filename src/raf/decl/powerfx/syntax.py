"""The syntax of workflow expressions (a Power Fx subset): a tokenizer and a Pratt
parser over a fixed grammar, bounded in length and nesting so that no formula can exhaust
the parser.

Grammar: numbers, "strings", `$"text {expr} text"` interpolated strings, true/false,
scoped names (`Local.x.y`), `a[0]`, lists `[1, 2]`, records `{name: "x"}`, calls
`Name(args)` (the first argument may name the rows of its table: `ForAll(Local.t As
row, row.x)`), unary `-`/`!`/`Not`, and the binary operators `* / %`, `+ -`, `&` (text
join), `= == <> != < <= > >= in`, `And &&`, `Or ||`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from raf.core.errors import RafError

MAX_SOURCE = 20_000
"""Longest formula, in characters."""
MAX_DEPTH = 64
"""Deepest nesting of calls, brackets and operators in one formula."""


class ExpressionError(RafError):
    """An expression that does not parse, names an unknown function, breaks a limit or
    fails to run; `offset` is the character it points at (0-based)."""

    def __init__(self, message: str, *, source: str = "", offset: int | None = None) -> None:
        self.source = source
        self.offset = offset
        where = f" at character {offset + 1}" if offset is not None else ""
        shown = f" in {_clip(source)!r}" if source else ""
        super().__init__(f"{message}{where}{shown}")
        self.reason = message


def _clip(source: str) -> str:
    return source if len(source) <= 200 else source[:200] + "…"


# -- tokens ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+)
  | (?P<string>"(?:[^"\\]|\\.|"")*"|'(?:[^'\\]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><>|<=|>=|==|!=|&&|\|\||[-+*/%&=<>!(),.\[\]{}:;])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    offset: int
    parts: tuple[Any, ...] = ()
    """For an interpolated string: its pieces, text or (inner source, offset)."""


def tokenize(source: str, base: int = 0) -> list[Token]:
    """Split `source` into tokens; an unknown character is an `ExpressionError`."""
    if len(source) > MAX_SOURCE:
        raise ExpressionError(
            f"the formula is {len(source)} characters long; the limit is {MAX_SOURCE}",
            offset=MAX_SOURCE,
        )
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        if source.startswith('$"', pos):
            token, pos = _interpolated(source, pos, base)
            tokens.append(token)
            continue
        match = _TOKEN.match(source, pos)
        if match is None:
            raise ExpressionError(
                f"unexpected character {source[pos]!r}", source=source, offset=base + pos
            )
        kind = match.lastgroup or ""
        if kind != "ws":
            tokens.append(Token(kind, match.group(), base + pos))
        pos = match.end()
    tokens.append(Token("end", "", base + len(source)))
    return tokens


def _interpolated(source: str, start: int, base: int) -> tuple[Token, int]:
    """`$"Hi {Local.name}!"`: literal text with `{expr}` holes; `{{`, `}}` and `""`
    stand for the characters themselves."""
    pos = start + 2
    parts: list[Any] = []
    literal: list[str] = []
    while True:
        if pos >= len(source):
            raise ExpressionError('unterminated $"..." string', source=source, offset=base + start)
        ch = source[pos]
        if ch == '"':
            if source.startswith('""', pos):
                literal.append('"')
                pos += 2
                continue
            pos += 1
            break
        if ch in "{}" and source.startswith(ch * 2, pos):
            literal.append(ch)
            pos += 2
            continue
        if ch == "{":
            end = _hole_end(source, pos + 1, base)
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append((source[pos + 1 : end], base + pos + 1))
            pos = end + 1
            continue
        if ch == "}":
            raise ExpressionError(
                "a lone '}' in a $\"...\" string (write '}}')", source=source, offset=base + pos
            )
        literal.append(ch)
        pos += 1
    if literal:
        parts.append("".join(literal))
    return Token("interp", source[start:pos], base + start, tuple(parts)), pos


def _hole_end(source: str, pos: int, base: int) -> int:
    """The index of the `}` closing a hole that starts at `pos` (strings and nested
    braces skipped)."""
    depth = 0
    while pos < len(source):
        ch = source[pos]
        if ch == '"':
            close = pos + 1
            while close < len(source):
                if source[close] == '"' and not source.startswith('""', close):
                    break
                close += 2 if source.startswith('""', close) else 1
            pos = close + 1
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth == 0:
                return pos
            depth -= 1
        pos += 1
    raise ExpressionError("a '{' in a $\"...\" string is never closed", source=source, offset=base)


def unquote(text: str) -> str:
    body = text[1:-1]
    if text[0] == '"':
        body = body.replace('""', '"')
    # \n and \t are the characters, \" \' \\ the quote or backslash; any other backslash
    # stays, as Power Fx keeps it (so a pattern's \d reaches IsMatch as written)
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


# -- tree --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """A node of a parsed expression."""

    kind: str
    """literal, name, index, list, record, call, unary, binary, interp, and `as` (a
    call's first argument with the name its rows go by: value is the name)."""
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
    "exactin": (4, "exactin"),
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
_LITERALS = {"true": True, "false": False, "blank": None, "null": None}


class _Parser:
    def __init__(self, source: str, base: int = 0) -> None:
        self.source = source
        self.tokens = tokenize(source, base)
        self.pos = 0
        self.depth = 0

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
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"the formula nests deeper than {MAX_DEPTH} levels", self.peek)
        left = self.prefix()
        while True:
            token = self.peek
            found = self._binary(token)
            if found is None or found[0] < min_power:
                self.depth -= 1
                return left
            power, op = found
            self.take()
            right = self.expression(power + 1)
            left = Node("binary", op, (left, right), token.offset)

    def prefix(self) -> Node:
        token = self.take()
        if token.kind == "number":
            number = float(token.text)
            whole = number.is_integer() and "." not in token.text and abs(number) < 2**53
            value: Any = int(number) if whole else number
            return self.postfix(Node("literal", value, offset=token.offset))
        if token.kind == "string":
            return self.postfix(Node("literal", unquote(token.text), offset=token.offset))
        if token.kind == "interp":
            return self.postfix(self.interpolated(token))
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
        if token.kind == "end":
            raise self.fail("a value is missing at the end of the formula", token)
        raise self.fail(f"unexpected {token.text!r}", token)

    def interpolated(self, token: Token) -> Node:
        children: list[Node] = []
        for part in token.parts:
            if isinstance(part, str):
                children.append(Node("literal", part, offset=token.offset))
                continue
            inner, offset = part
            parser = _Parser(inner, offset)
            parser.depth = self.depth
            parser.source = self.source
            children.append(parser.parse())
        return Node("interp", None, tuple(children), token.offset)

    def items(self, close: str) -> list[Node]:
        out: list[Node] = []
        if self.peek.text == close:
            self.take()
            return out
        while True:
            item = self.expression(0)
            if close == ")" and not out and self.peek.text.lower() == "as":
                keyword = self.take()
                alias = self.take()
                if alias.kind != "name":
                    raise self.fail("expected a name after 'As'", alias)
                item = Node("as", alias.text, (item,), keyword.offset)
            out.append(item)
            token = self.take()
            if token.text == close:
                return out
            if token.kind == "end" and close == ")" and self.pos == len(self.tokens):
                # calls left open at the very end of a formula are closed there, as
                # documents written for other engines rely on
                self.pos -= 1
                return out
            if token.text not in (",", ";"):
                shown = repr(token.text) if token.kind != "end" else "the end"
                raise self.fail(f"expected ',' or {close!r}, found {shown}", token)

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
            keys.append(key.text if key.kind == "name" else unquote(key.text))
            self.expect(":")
            values.append(self.expression(0))
            token = self.take()
            if token.text == "}":
                return Node("record", tuple(keys), tuple(values), start.offset)
            if token.text != ",":
                raise self.fail("expected ',' or '}'", token)

    def call(self, name: Token) -> Node:
        self.expect("(")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"the formula nests deeper than {MAX_DEPTH} levels", name)
        node = Node("call", name.text, tuple(self.items(")")), name.offset)
        self.depth -= 1
        return node

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
    out: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.children))
    return out
