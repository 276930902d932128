"""Reads YAML, JSON and TOML agent documents, remembering where every key and value is."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raf.core.bounded_parse import (
    CONFIG_LIMITS,
    DocumentLimitError,
    check_size,
    check_yaml_events,
    check_yaml_node,
    load_json,
    load_toml,
)
from raf.core.errors import MissingExtraError, Problem

KeyPath = tuple[str | int, ...]
"""A key path inside a document: keys and list indexes."""

_ENV_FORMS = (
    re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$"),
    re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$"),
    re.compile(r"^=Env\.([A-Za-z_][A-Za-z0-9_]*)$"),
)
_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(kw_only=True, slots=True)
class Document:
    """A parsed document: its data, where things are, and the problems found so far."""

    data: Any
    file: str | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    values: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[KeyPath, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    from_env: set[KeyPath] = field(default_factory=set)
    """Paths whose values came from the environment: never echoed in messages."""
    quiet: bool = False
    """No value of this document is echoed in messages (a file another document names)."""
    fmt: str = "yaml"
    """The format it was written in: yaml, json or toml."""

    def locate(self, path: KeyPath, *, key: bool = False) -> tuple[int | None, int | None]:
        """Line and column of the value at `path` (or of its key), else of the nearest
        enclosing thing that has a position."""
        probe = tuple(path)
        if key and probe in self.keys:
            return self.keys[probe]
        while True:
            if probe in self.values:
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if not probe:
                return None, None
            probe = probe[:-1]

    def problem(self, path: KeyPath, message: str, *, key: bool = False) -> Problem:
        line, column = self.locate(path, key=key)
        return Problem(
            message=message,
            file=self.file,
            line=line,
            column=column,
            key_path=format_path(path) or None,
        )


def format_path(path: KeyPath) -> str:
    """`tools[2].config.command` for ('tools', 2, 'config', 'command')."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# -- parsing --------------------------------------------------------------------------


def _formula_hint(text: str, mark: Any) -> str:
    """A note for the usual cause of "mapping values are not allowed": a formula
    (`value: =Concat("a: ", x)`) written without quotes, whose `: ` YAML reads as a key."""
    if mark is None:
        return ""
    lines = text.splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    if not re.search(r":\s+=", line[: mark.column]):
        return ""
    return "; a formula that contains ': ' must be quoted, e.g. text: '=Concat(\"a: \", x)'"


_FORMULA_LINE = re.compile(
    r"""^(?P<head>[ ]*(?:-[ ]+)*(?:[A-Za-z_$][\w.$-]*|"[^"\n]*"|'[^'\n]*'):[ ]+)(?P<formula>=.*)$"""
)


def _quote_formulas(text: str) -> str | None:
    """`text` with each one-line `key: =formula` whose formula YAML cannot read plain
    (`value: =[{id: 3}]`, where `: ` would start a mapping) written single-quoted, as
    Microsoft Agent Framework's reader takes it; None when no line needs it. Only such
    values change, each keeping its line and column; the rest of the file is read as
    plain YAML."""
    lines = text.split("\n")
    changed = False
    for index, line in enumerate(lines):
        match = _FORMULA_LINE.match(line)
        if match is None:
            continue
        formula = _without_comment(match["formula"]).rstrip()
        if ": " not in formula and not formula.endswith(":"):
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        indent = len(line) - len(line.lstrip(" "))
        if following.strip() and len(following) - len(following.lstrip(" ")) > indent:
            continue  # a formula over several lines is left as written
        quoted = "'" + formula.replace("'", "''") + "'"
        lines[index] = match["head"] + quoted + match["formula"][len(formula) :]
        changed = True
    return "\n".join(lines) if changed else None


def _without_comment(formula: str) -> str:
    """The formula without a trailing YAML comment (` #` outside a string)."""
    in_string = False
    for index, char in enumerate(formula):
        if char == '"':
            in_string = not in_string
        elif char == "#" and not in_string and index and formula[index - 1] in " \t":
            return formula[:index]
    return formula


def load_text(text: str, *, fmt: str, file: str | None, base_dir: Path | None = None) -> Document:
    """Parse `text` as yaml, json or toml; syntax errors become located problems."""
    doc = Document(data=None, file=file, base_dir=base_dir or Path.cwd(), fmt=fmt)
    try:
        if fmt == "yaml":
            _load_yaml(text, doc)
        elif fmt == "json":
            _load_json(text, doc)
        elif fmt == "toml":
            _load_toml(text, doc)
        else:
            raise ValueError(f"unknown document format {fmt!r}")
    except DocumentLimitError as exc:
        doc.data = None
        doc.problems.append(
            Problem(message=exc.message, file=file, line=exc.line, column=exc.column)
        )
        return doc
    if not doc.problems and not isinstance(doc.data, dict):
        kind = "empty" if doc.data is None else type(doc.data).__name__
        doc.problems.append(
            Problem(
                message=f"an agent document must be a mapping of keys, got {kind}",
                file=file,
                line=1,
                column=1,
            )
        )
    return doc


def format_for(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json"
    if suffix == ".toml":
        return "toml"
    return "yaml"


def _yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - yaml is in the yaml extra
        raise MissingExtraError("YAML agent documents", "yaml", "yaml") from exc
    return yaml


def _load_yaml(text: str, doc: Document) -> None:
    _parse_yaml(text, doc)
    if doc.problems and doc.problems[-1].message.startswith("YAML syntax error"):
        quoted = _quote_formulas(text)
        if quoted is not None:
            retry = Document(data=None, file=doc.file, base_dir=doc.base_dir)
            _parse_yaml(quoted, retry)
            if not retry.problems or retry.problems[-1] != doc.problems[-1]:
                doc.problems.pop()
                doc.problems += retry.problems
                doc.data, doc.values, doc.keys = retry.data, retry.values, retry.keys


def _parse_yaml(text: str, doc: Document) -> None:
    yaml = _yaml()
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    check_size(text, file=doc.file, limits=CONFIG_LIMITS)
    loader = loader_cls(text)
    try:
        check_yaml_events(text, file=doc.file, limits=CONFIG_LIMITS)
        node = loader.get_single_node()
        if node is None:
            doc.data = None
            return
        check_yaml_node(node, file=doc.file, limits=CONFIG_LIMITS)
        doc.data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "YAML syntax error"
        context = ""
        if exc.context:
            started = exc.context_mark
            at = ""
            if started is not None and mark is not None and started.line != mark.line:
                at = f" started at line {started.line + 1}, column {started.column + 1}"
            context = f" ({exc.context}{at})"
        doc.problems.append(
            Problem(
                message=f"YAML syntax error: {problem}{context}{_formula_hint(text, mark)}",
                file=doc.file,
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            )
        )
        return
    except yaml.YAMLError as exc:
        doc.problems.append(Problem(message=f"YAML error: {exc}", file=doc.file))
        return
    finally:
        loader.dispose()
    _walk_yaml(node, (), doc)


def _walk_yaml(node: Any, path: KeyPath, doc: Document) -> None:
    yaml = _yaml()
    doc.values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = (*path, key)
            if key in seen:
                doc.problems.append(
                    Problem(
                        message=f"duplicate key {key!r}: it is already set above",
                        file=doc.file,
                        line=key_node.start_mark.line + 1,
                        column=key_node.start_mark.column + 1,
                        key_path=format_path(child),
                    )
                )
                continue
            seen.add(key)
            doc.keys[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _walk_yaml(value_node, child, doc)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk_yaml(item, (*path, index), doc)


def _load_json(text: str, doc: Document) -> None:
    try:
        doc.data = load_json(text, file=doc.file)
    except json.JSONDecodeError as exc:
        doc.problems.append(
            Problem(
                message=f"JSON syntax error: {exc.msg}",
                file=doc.file,
                line=exc.lineno,
                column=exc.colno,
            )
        )
        return
    try:  # JSON is YAML: reuse its marks for positions (best effort)
        located = Document(data=None, file=doc.file)
        _load_yaml(text, located)
        if not located.problems:
            doc.values, doc.keys = located.values, located.keys
    except MissingExtraError:
        pass


def _load_toml(text: str, doc: Document) -> None:
    try:
        doc.data = load_toml(text, file=doc.file)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        doc.problems.append(
            Problem(
                message=f"TOML syntax error: {_TOML_AT.sub('', message).strip()}",
                file=doc.file,
                line=int(at.group(1)) if at else None,
                column=int(at.group(2)) if at else None,
            )
        )
        return
    _locate_toml(text, doc)


def _locate_toml(text: str, doc: Document) -> None:
    """TOML parsers give no positions: one pass over the lines reads each table header
    and `key =` line into the key paths it defines (dotted keys, quoted keys, arrays of
    tables), so locating every key costs one look-up each."""
    index: dict[KeyPath, tuple[int, int]] = {}
    table: KeyPath = ()
    arrays: dict[tuple[str, ...], int] = {}
    blanked = _TOML_CODE.sub(_blank_match, text).split("\n")
    for number, line in enumerate(text.split("\n"), start=1):
        code = blanked[number - 1] if number <= len(blanked) else ""
        indent = len(code) - len(code.lstrip())
        if not code.strip():
            continue  # blank, a comment, or inside a multi-line string
        column = indent + 1
        if code[indent] == "[":
            is_array = code.startswith("[[", indent)
            keys = _toml_key(line, indent + (2 if is_array else 1))
            if keys is None:
                continue
            if is_array:
                arrays[tuple(keys)] = arrays.get(tuple(keys), -1) + 1
            table = _toml_path(keys, arrays)
            for depth in range(1, len(table) + 1):
                index.setdefault(table[:depth], (number, column))
            continue
        keys = _toml_key(line, indent)
        if keys is None:
            continue
        for depth in range(1, len(keys) + 1):
            index.setdefault((*table, *keys[:depth]), (number, column))

    def walk(value: Any, path: KeyPath) -> None:
        stack: list[tuple[Any, KeyPath]] = [(value, path)]
        while stack:
            item, at = stack.pop()
            if isinstance(item, Mapping):
                for key, child in item.items():
                    child_path = (*at, str(key))
                    found = index.get(child_path)
                    if found:
                        doc.keys[child_path] = found
                        doc.values[child_path] = found
                    stack.append((child, child_path))
            elif isinstance(item, list):
                stack.extend((child, (*at, i)) for i, child in enumerate(item))

    doc.values[()] = (1, 1)
    walk(doc.data, ())


_TOML_CODE = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"|\'[^\'\n]*\'|#[^\n]*'
)
_TOML_KEY_PART = re.compile(
    r'[ \t]*(?:([A-Za-z0-9_-]+)|"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\')[ \t]*'
)


def _blank_match(match: re.Match[str]) -> str:
    """A string or comment as spaces (newlines kept); a string keeps one mark where it
    starts, so a line that begins with a quoted key is not taken for a blank one."""
    text = match.group(0)
    blank = " " * len(text) if "\n" not in text else re.sub(r"[^\n]", " ", text)
    return "q" + blank[1:] if text[0] in "\"'" else blank


def _toml_key(line: str, at: int) -> list[str] | None:
    """The parts of the dotted key that starts at `at`, or None when there is none."""
    parts: list[str] = []
    while True:
        match = _TOML_KEY_PART.match(line, at)
        if match is None:
            return None
        bare, basic, literal = match.groups()
        if basic is not None:
            try:
                parts.append(json.loads(f'"{basic}"'))
            except ValueError:
                parts.append(basic)
        else:
            parts.append(bare if bare is not None else literal)
        at = match.end()
        if not line.startswith(".", at):
            return parts
        at += 1


def _toml_path(keys: list[str], arrays: Mapping[tuple[str, ...], int]) -> KeyPath:
    """A header's key path in the data: each array of tables on the way adds the index
    of its latest entry."""
    path: list[str | int] = []
    for depth, key in enumerate(keys, start=1):
        path.append(key)
        latest = arrays.get(tuple(keys[:depth]))
        if latest is not None:
            path.append(latest)
    return tuple(path)


# -- environment ----------------------------------------------------------------------


def env_reference(value: str) -> str | None:
    """The variable a `$VAR`, `${VAR}` or `=Env.VAR` string names, else None."""
    for form in _ENV_FORMS:
        match = form.match(value.strip())
        if match:
            return match.group(1)
    return None


UNSET_ENV_NOTE = "(set it before building or running)"
"""How the warning about an unset variable the build reads ends (`raf run` refuses it)."""


def _stand_in(name: str, path: KeyPath) -> str:
    """A value that passes for an unset variable's while a document is only validated."""
    last = str(path[-1]).lower() if path else ""
    if "endpoint" in last or "url" in last:
        return "https://unset.invalid/"
    return f"unset-{name.lower()}"


def substitute_env(
    doc: Document,
    environ: Mapping[str, str] | None = None,
    *,
    unset_is_warning: bool = False,
    unused: Callable[[KeyPath], bool] | None = None,
) -> None:
    """Replace environment references by their values; an unset one is a problem at its
    location, or, with `unset_is_warning` (validation: the document is valid, the machine
    is not configured), a warning, with a stand-in value so the other checks go on. An
    unset one where `unused` says the value will not be used (a model replaced on the
    command line) gets a stand-in and no word. The value itself never appears in a
    message."""
    env = os.environ if environ is None else environ

    def walk(value: Any, path: KeyPath) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, str):
            name = env_reference(value)
            if name is not None:
                if name not in env:
                    if unused is not None and unused(path):
                        doc.from_env.add(path)
                        return _stand_in(name, path)
                    if not unset_is_warning:
                        doc.problems.append(
                            doc.problem(path, f"environment variable {name} is not set")
                        )
                        return value
                    doc.warnings.append(
                        doc.problem(
                            path,
                            f"environment variable {name} is not set {UNSET_ENV_NOTE}",
                        )
                    )
                    doc.from_env.add(path)
                    return _stand_in(name, path)
                doc.from_env.add(path)
                return env[name]
        return value

    doc.data = walk(doc.data, ())
