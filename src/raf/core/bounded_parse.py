"""YAML, JSON and TOML parsed within bounds: size, depth, nodes (aliases counted at every
use), integer digits; anything beyond is a located `DocumentLimitError`, found fast."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from raf.core.errors import ConfigurationError, MissingExtraError


@dataclass(frozen=True, kw_only=True, slots=True)
class ParseLimits:
    """How big a document may be; the defaults suit configuration files."""

    max_bytes: int = 4 * 1024 * 1024
    """Size of the text, in UTF-8 bytes."""
    max_depth: int = 64
    """Nesting of mappings and lists (an alias counts the depth of what it names)."""
    max_nodes: int = 200_000
    """Values in all (each use of a YAML alias counts everything it names again)."""
    max_int_digits: int = 100
    """Digits of one integer, in whatever base it is written (underscores not counted)."""


CONFIG_LIMITS = ParseLimits()
"""Limits of agent documents, front matter and other configuration."""


class DocumentLimitError(ConfigurationError):
    """A document is larger, deeper or more expanded than its limits allow."""


def load_yaml(text: str, *, file: str | None = None, limits: ParseLimits = CONFIG_LIMITS) -> Any:
    """`yaml.safe_load` within `limits`; YAML syntax errors propagate as `yaml.YAMLError`."""
    yaml = _yaml()
    check_size(text, file=file, limits=limits)
    check_yaml_events(text, file=file, limits=limits)
    loader = _loader_class(yaml)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_yaml_node(node, file=file, limits=limits)
        data = loader.construct_document(node)
    finally:
        loader.dispose()
    check_data(data, file=file, limits=limits)
    return data


def load_json(text: str, *, file: str | None = None, limits: ParseLimits = CONFIG_LIMITS) -> Any:
    """`json.loads` within `limits`; syntax errors propagate as `json.JSONDecodeError`."""
    check_size(text, file=file, limits=limits)
    check_nesting(text, _JSON_TOKENS, file=file, limits=limits)

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.max_int_digits:
            raise _too_many_digits(text, file=file, limits=limits)
        return int(digits)

    data = json.loads(text, parse_int=parse_int)
    check_data(data, file=file, limits=limits)
    return data


def load_toml(text: str, *, file: str | None = None, limits: ParseLimits = CONFIG_LIMITS) -> Any:
    """`tomllib.loads` within `limits`; syntax errors propagate as `tomllib.TOMLDecodeError`."""
    check_size(text, file=file, limits=limits)
    check_nesting(text, _TOML_TOKENS, file=file, limits=limits)
    code = _TOML_STRINGS.sub(_blank, text)  # tomllib gives no hooks: read the text itself
    check_toml_key_depth(code, file=file, limits=limits)
    check_int_tokens(code, file=file, limits=limits)
    data = tomllib.loads(text)
    check_data(data, file=file, limits=limits)
    return data


# -- the checks ------------------------------------------------------------------------


def check_size(text: str, *, file: str | None, limits: ParseLimits) -> None:
    """Refuse a text over `max_bytes` before parsing any of it."""
    if len(text) > limits.max_bytes or len(text.encode("utf-8")) > limits.max_bytes:
        raise DocumentLimitError(
            f"the document is larger than {limits.max_bytes} bytes", file=file, line=1, column=1
        )


def check_yaml_events(text: str, *, file: str | None, limits: ParseLimits) -> None:
    """Walk the YAML event stream (no recursion, no expansion): depth and node count."""
    yaml = _yaml()
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_loader_class(yaml)):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            nodes += 1
            if depth > limits.max_depth:
                raise _at_mark(event, f"nested deeper than {limits.max_depth} levels", file)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent | yaml.AliasEvent):
            nodes += 1
        if nodes > limits.max_nodes:
            raise _at_mark(event, f"more than {limits.max_nodes} values", file)


def check_yaml_node(root: Any, *, file: str | None, limits: ParseLimits) -> None:
    """Count a composed YAML graph as it would be expanded (each alias use counts all it
    names) without expanding it; refuse self-referencing aliases and huge integers."""
    yaml = _yaml()
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        children = list(_children(node, yaml))
        if leaving:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > limits.max_nodes:
                raise _at_mark(
                    node,
                    f"expands to more than {limits.max_nodes} values "
                    "(YAML aliases count each time they are used)",
                    file,
                )
            if depth[key] > limits.max_depth:
                raise _at_mark(node, f"nested deeper than {limits.max_depth} levels", file)
            continue
        if key in size:
            continue
        if key in on_path:
            raise _at_mark(node, "a YAML alias refers to a value that contains it", file)
        if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
            written = re.sub(r"^[+-]?(?:0[xob])?|[_:]", "", str(node.value).lower())
            digits = len(written)
            if digits > limits.max_int_digits:
                raise _at_mark(
                    node, f"an integer has more than {limits.max_int_digits} digits", file
                )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children)


def check_data(data: Any, *, file: str | None, limits: ParseLimits) -> None:
    """Walk parsed data (iteratively): at most `max_nodes` values, `max_depth` levels and
    no integer of more than `max_int_digits` digits, however the text spelled them."""
    count = 0
    too_big = 16**limits.max_int_digits  # the most `max_int_digits` digits can write (hex)
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > limits.max_nodes:
            raise DocumentLimitError(
                f"the document holds more than {limits.max_nodes} values",
                file=file,
                line=1,
                column=1,
            )
        if isinstance(value, dict | list):
            if depth >= limits.max_depth:
                raise DocumentLimitError(f"nested deeper than {limits.max_depth} levels", file=file)
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= too_big:
            raise DocumentLimitError(
                f"an integer has more than {limits.max_int_digits} digits", file=file
            )


def check_toml_key_depth(code: str, *, file: str | None, limits: ParseLimits) -> None:
    """Refuse TOML whose table headers and dotted keys nest deeper than `max_depth`
    (`[a.b.c]`, `a.b.c = 1`: no bracket shows that depth). `code` is the text with its
    strings and comments blanked. Levels count as `check_data` counts them: the document
    is one, each table another."""
    table = 1
    for number, line in enumerate(code.split("\n"), start=1):
        stripped = line.lstrip()
        header = _TOML_HEADER.match(stripped)
        if header is not None:
            table = depth = header.group(1).count(".") + 2
        else:  # `a.b = 1`, and the keys of inline tables: `x = {c.d = {e.f = 2}}`
            depth, braces = 0, 0
            for token in _TOML_KEY_OR_BRACE.finditer(stripped):
                if token.group(0) == "{":
                    braces += 1
                elif token.group(0) == "}":
                    braces -= 1
                else:
                    depth = max(depth, table + braces + token.group(1).count("."))
        if depth > limits.max_depth:
            raise DocumentLimitError(
                f"nested deeper than {limits.max_depth} levels (through dotted keys or "
                "table headers)",
                file=file,
                line=number,
                column=len(line) - len(stripped) + 1,
            )


_TOML_KEY_OR_BRACE = re.compile(r"[{}]|([^{}=,\[\]]+)=")
_TOML_HEADER = re.compile(r"\[\[?([A-Za-z0-9_.\s-]+)\]\]?\s*$")


def check_int_tokens(code: str, *, file: str | None, limits: ParseLimits) -> None:
    """Refuse an integer written with more than `max_int_digits` digits, in decimal, hex,
    octal or binary, underscores not counted. `code` has its strings blanked."""
    n = limits.max_int_digits
    long_token = re.compile(
        rf"(?<![\w.])[+-]?(?:0x[0-9A-Fa-f_]{{{n},}}|0o[0-7_]{{{n},}}|0b[01_]{{{n},}}"
        rf"|[0-9][0-9_]{{{n},}})(?![\w.])"
    )
    for match in long_token.finditer(code):
        token = match.group(0).lstrip("+-")
        digits = token[2:] if token[:2] in ("0x", "0o", "0b") else token
        if len(digits.replace("_", "")) > n:
            line, column = _position(code, match.start())
            raise DocumentLimitError(
                f"an integer has more than {n} digits", file=file, line=line, column=column
            )


_JSON_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_TOKENS = re.compile(_JSON_STRINGS.pattern + r"|[\[\]{}]")
_TOML_STRINGS = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*'
)
_TOML_TOKENS = re.compile(_TOML_STRINGS.pattern + r"|[\[\]{}]")


def _blank(match: re.Match[str]) -> str:
    """A string or comment replaced by as many spaces, so positions stay put."""
    text = match.group(0)
    return " " * len(text) if "\n" not in text else re.sub(r"[^\n]", " ", text)


def check_nesting(
    text: str, tokens: re.Pattern[str], *, file: str | None, limits: ParseLimits
) -> None:
    """Count bracket nesting outside strings (and comments) before a recursive parser
    sees the text; positions in the error are where the limit is crossed."""
    depth = 0
    for match in tokens.finditer(text):
        token = match.group(0)
        if token in ("[", "{"):
            depth += 1
            if depth > limits.max_depth:
                line, column = _position(text, match.start())
                raise DocumentLimitError(
                    f"nested deeper than {limits.max_depth} levels",
                    file=file,
                    line=line,
                    column=column,
                )
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)


def _too_many_digits(text: str, *, file: str | None, limits: ParseLimits) -> DocumentLimitError:
    stripped = _JSON_STRINGS.sub(_blank, text)
    match = re.search(rf"[0-9]{{{limits.max_int_digits + 1},}}", stripped)
    line, column = _position(text, match.start()) if match else (None, None)
    return DocumentLimitError(
        f"an integer has more than {limits.max_int_digits} digits",
        file=file,
        line=line,
        column=column,
    )


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _children(node: Any, yaml: Any) -> Iterator[Any]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _at_mark(thing: Any, message: str, file: str | None) -> DocumentLimitError:
    mark = getattr(thing, "start_mark", None)
    return DocumentLimitError(
        message,
        file=file,
        line=mark.line + 1 if mark is not None else None,
        column=mark.column + 1 if mark is not None else None,
    )


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - yaml is in the yaml extra
        raise MissingExtraError("reading YAML", "yaml", "yaml") from exc
    return yaml


def _loader_class(yaml: Any) -> Any:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)
