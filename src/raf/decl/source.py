"""Reads YAML, JSON and TOML agent documents, remembering where every key and value is."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
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

Path_ = tuple[str | int, ...]
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
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    from_env: set[Path_] = field(default_factory=set)
    """Paths whose values came from the environment: never echoed in messages."""
    quiet: bool = False
    """No value of this document is echoed in messages (a file another document names)."""

    def locate(self, path: Path_, *, key: bool = False) -> tuple[int | None, int | None]:
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

    def problem(self, path: Path_, message: str, *, key: bool = False) -> Problem:
        line, column = self.locate(path, key=key)
        return Problem(
            message=message,
            file=self.file,
            line=line,
            column=column,
            key_path=format_path(path) or None,
        )


def format_path(path: Path_) -> str:
    """`tools[2].config.command` for ('tools', 2, 'config', 'command')."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


# -- parsing --------------------------------------------------------------------------


def load_text(text: str, *, fmt: str, file: str | None, base_dir: Path | None = None) -> Document:
    """Parse `text` as yaml, json or toml; syntax errors become located problems."""
    doc = Document(data=None, file=file, base_dir=base_dir or Path.cwd())
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
                message=f"YAML syntax error: {problem}{context}",
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


def _walk_yaml(node: Any, path: Path_, doc: Document) -> None:
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
    """TOML parsers give no positions: find each key's line by its text (first match
    after its parent's line)."""
    lines = text.splitlines()

    def find(key: str, start: int) -> tuple[int, int] | None:
        pattern = re.compile(
            r"^(\s*)(?:\[\[?[^\]]*\b" + re.escape(key) + r"\]\]?|\"?" + re.escape(key) + r"\"?\s*=)"
        )
        for number in range(start, len(lines)):
            match = pattern.match(lines[number])
            if match:
                return number + 1, len(match.group(1)) + 1
        return None

    def walk(value: Any, path: Path_, start: int) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                found = find(str(key), start)
                if found:
                    doc.keys[(*path, str(key))] = found
                    doc.values[(*path, str(key))] = found
                walk(child, (*path, str(key)), (found[0] - 1) if found else start)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*path, index), start)

    doc.values[()] = (1, 1)
    walk(doc.data, (), 0)


# -- environment ----------------------------------------------------------------------


def env_reference(value: str) -> str | None:
    """The variable a `$VAR`, `${VAR}` or `=Env.VAR` string names, else None."""
    for form in _ENV_FORMS:
        match = form.match(value.strip())
        if match:
            return match.group(1)
    return None


def _stand_in(name: str, path: Path_) -> str:
    """A value that passes for an unset variable's while a document is only validated."""
    last = str(path[-1]).lower() if path else ""
    if "endpoint" in last or "url" in last:
        return "https://unset.invalid/"
    return f"unset-{name.lower()}"


def substitute_env(
    doc: Document, environ: Mapping[str, str] | None = None, *, unset_is_warning: bool = False
) -> None:
    """Replace environment references by their values; an unset one is a problem at its
    location, or, with `unset_is_warning` (validation: the document is valid, the machine
    is not configured), a warning, with a stand-in value so the other checks go on. The
    value itself never appears in a message."""
    env = os.environ if environ is None else environ

    def walk(value: Any, path: Path_) -> Any:
        if isinstance(value, dict):
            return {k: walk(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, str):
            name = env_reference(value)
            if name is not None:
                if name not in env:
                    if not unset_is_warning:
                        doc.problems.append(
                            doc.problem(path, f"environment variable {name} is not set")
                        )
                        return value
                    doc.warnings.append(
                        doc.problem(
                            path,
                            f"environment variable {name} is not set (set it before "
                            "building or running)",
                        )
                    )
                    doc.from_env.add(path)
                    return _stand_in(name, path)
                doc.from_env.add(path)
                return env[name]
        return value

    doc.data = walk(doc.data, ())
