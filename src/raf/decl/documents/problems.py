"""Turns pydantic validation errors into located, helpful problems (with suggestions)."""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from raf.core.errors import MissingExtraError, Problem
from raf.decl.documents.schema import SECRET_KEYS, AgentDecl
from raf.decl.documents.source import Document, KeyPath
from raf.decl.documents.suggest import suggest

__all__ = ["allowed_keys", "build_failure", "problems_from_validation", "real_path", "suggest"]

_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "string_pattern_mismatch": "expected a name of 1-64 letters, digits, '_' or '-'",
}


def _other_member(loc: Sequence[str | int], data: Any) -> bool:
    """An error of the union member that does not match the data's shape (the list form
    of a field given a mapping, or the other way): noise next to the real error."""
    current = data
    for part in loc:
        if isinstance(part, str) and part.startswith(("list[", "dict[")):
            return isinstance(current, dict) == part.startswith("list[")
        if _has(current, part):
            current = current[part]
    return False


SUGGESTIONS = 200
"""Unknown keys of one document that get a "did you mean …?": a guess costs a comparison
with every allowed key, and a report shows the first few problems of a kind anyway."""


def problems_from_validation(exc: ValidationError, doc: Document) -> list[Problem]:
    """One problem per pydantic error, located in the document, in document order."""
    out: list[Problem] = []
    errors = exc.errors(include_url=False)
    kept = [e for e in errors if not _other_member(e["loc"], doc.data)] or errors
    guesses = SUGGESTIONS
    for error in kept:
        out.append(_problem(error, doc, guess=guesses > 0))
        if error["type"] == "extra_forbidden":
            guesses -= 1
    return _dedupe(out)


def _dedupe(problems: Sequence[Problem]) -> list[Problem]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for p in problems:
        key = (p.line, p.column, p.key_path, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def real_path(loc: Sequence[str | int], data: Any) -> KeyPath:
    """The document path of a pydantic location: union tags are dropped by following the
    data itself."""
    path: list[str | int] = []
    current = data
    for part in loc:
        if _has(current, part):
            path.append(part)
            current = current[part]
        elif isinstance(current, dict | list):
            # a union tag (skip it) or a missing key (keep it, it is the last part)
            if part is loc[-1] and isinstance(part, str) and not _is_tag(part, current):
                path.append(part)
        else:
            break
    return tuple(path)


def _has(current: Any, part: str | int) -> bool:
    if isinstance(current, dict):
        return isinstance(part, str) and part in current
    if isinstance(current, list):
        return isinstance(part, int) and 0 <= part < len(current)
    return False


_INTERNAL = re.compile(r"[\[\]()]|^function-|^(list|dict|str|int|float|bool|none)$")
"""The names pydantic gives union members (never shown to a user)."""


def _is_tag(part: str, current: Any) -> bool:
    if _INTERNAL.search(part):
        return True
    return (isinstance(current, dict) and current.get("kind") == part) or part in (
        "ref",
        "inline",
        "block",
        "string",
    )


def _hidden(path: KeyPath, doc: Document) -> bool:
    """True when the value at `path` must not be shown: it came from the environment,
    sits under a secret key, or is in a file another document names."""
    if doc.quiet:
        return True
    return path in doc.from_env or any(isinstance(p, str) and p in SECRET_KEYS for p in path)


def _input_text(error: ErrorDetails, path: KeyPath, doc: Document) -> str:
    if _hidden(path, doc):
        return ""
    value = error.get("input")
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 60):
        return f", got {value!r}"
    if isinstance(value, list):
        return ", got a list"
    if isinstance(value, dict):
        return ", got a mapping"
    return ""


def _problem(error: ErrorDetails, doc: Document, *, guess: bool = True) -> Problem:
    loc = tuple(error["loc"])
    kind = error["type"]
    path = real_path(loc, doc.data)
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = allowed_keys(loc[:-1])
        hint = None
        if guess:
            others = [k for k in _other_spellings(loc[:-1]) if k != key]
            hint = suggest(key, [*allowed, *others])
        if hint:
            message = f"unknown key {key!r}; did you mean {hint!r}?"
        else:
            message = f"unknown key {key!r}; allowed keys: {', '.join(allowed)}"
        return doc.problem(path, message, key=True)
    if kind == "missing":
        key = str(loc[-1])
        return doc.problem(path, f"missing required key {key!r}")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        what = _kind_word(path)
        expected = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        if kind == "union_tag_not_found":
            expected = list(_kinds_at(path))
            return doc.problem(
                path, f"missing required key 'kind' (a {what}: one of {', '.join(expected)})"
            )
        tag = str(ctx.get("tag", ""))
        if _hidden((*path, "kind"), doc):
            return doc.problem(
                (*path, "kind"),
                f"unknown {what} (its value is not shown: secret, from the "
                f"environment or a named file; expected one of: {', '.join(expected)})",
            )
        hint = suggest(tag, expected)
        did = f"; did you mean {hint!r}?" if hint else ""
        return doc.problem(
            (*path, "kind"),
            f"unknown {what} {tag!r}{did} (expected one of: {', '.join(expected)})",
        )
    if kind == "literal_error":
        expected = [
            e.strip().strip("'")
            for e in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")
        ]
        value = error.get("input")
        if _hidden(path, doc):
            return doc.problem(
                path,
                "the value (not shown: secret, from the environment or a named file) "
                f"is not allowed here (expected one of: {', '.join(expected)})",
            )
        hint = suggest(str(value), expected) if isinstance(value, str) else None
        did = f"; did you mean {hint!r}?" if hint else ""
        return doc.problem(
            path, f"{value!r} is not allowed here{did} (expected one of: {', '.join(expected)})"
        )
    if kind == "value_error":
        message = str(error["msg"]).removeprefix("Value error, ")
        return doc.problem(path, message)
    expected_text = _EXPECTED.get(kind)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        expected_text = _range_text(loc) or str(error["msg"]).replace(
            "Input should be", "expected a number"
        )
    if expected_text is None:
        msg = str(error["msg"])
        expected_text = msg.replace("Input should be", "expected").replace("Input", "the value")
        if expected_text and expected_text[0].isupper():
            expected_text = expected_text[0].lower() + expected_text[1:]
    return doc.problem(path, expected_text + _input_text(error, path, doc))


def _range_text(loc: Sequence[str | int]) -> str | None:
    """The range a bounded field takes, with both ends whichever one the value broke
    (`expected a whole number from 0 to 1000000`); None for a field bounded on one side."""
    if not loc or not isinstance(loc[-1], str):
        return None
    model = _model_at(loc[:-1])
    if model is None:
        return None
    field = model.model_fields.get(str(loc[-1]))
    for candidate in model.model_fields.values():
        if field is None and candidate.alias == loc[-1]:
            field = candidate
    if field is None:
        return None
    low: Any = None
    high: Any = None
    low_open = high_open = False
    for item in field.metadata:
        for name in ("ge", "gt"):
            if getattr(item, name, None) is not None:
                low, low_open = getattr(item, name), name == "gt"
        for name in ("le", "lt"):
            if getattr(item, name, None) is not None:
                high, high_open = getattr(item, name), name == "lt"
    whole = int in _members_types(field.annotation)
    what = "a whole number" if whole else "a number"
    if low is not None and high is not None:
        if whole and low_open:
            low, low_open = low + 1, False
        if whole and high_open:
            high, high_open = high - 1, False
        if not low_open and not high_open:
            return f"expected {what} from {low} to {high}"
        lower = "above" if low_open else "from"
        upper = "below" if high_open else "up to"
        return f"expected {what} {lower} {low} and {upper} {high}"
    return None


def _members_types(annotation: Any) -> list[Any]:
    return [member for member, _ in _members(annotation)]


def _kinds_at(path: KeyPath) -> tuple[str, ...]:
    from raf.decl.documents.schema import CONTEXT_KINDS, TOOL_KINDS

    if path and path[0] == "contexts":
        return CONTEXT_KINDS
    return TOOL_KINDS


def _kind_word(path: KeyPath) -> str:
    if path and path[0] == "tools":
        return "tool kind"
    if path and path[0] == "contexts":
        return "context kind"
    return "kind"


# -- finding the model at a location ----------------------------------------------------


def allowed_keys(loc: Sequence[str | int]) -> list[str]:
    """The keys the schema allows at a pydantic location (tags included in `loc`)."""
    return list(_allowed_keys(tuple(loc)))


@functools.lru_cache(maxsize=256)
def _allowed_keys(loc: tuple[str | int, ...]) -> tuple[str, ...]:
    model = _model_at(loc)
    if model is None:
        return ()
    return tuple(f.alias or name for name, f in model.model_fields.items())


def _other_spellings(loc: Sequence[str | int]) -> list[str]:
    """Keys the other dialects write at a location: a typo of one is matched to it too."""
    from raf.decl.documents.dialects import TOP_LEVEL, other_keys

    model = _model_at(loc)
    if model is None:
        return []
    if model is AgentDecl:
        return [key for key, _, _, _ in TOP_LEVEL]
    return other_keys(model)


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    annotation: Any = AgentDecl
    for part in loc:
        annotation = _descend(annotation, part)
        if annotation is None:
            return None
    return _as_model(annotation)


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
    metadata: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        args = typing.get_args(annotation)
        annotation = args[0]
        metadata.extend(args[1:])
    return annotation, metadata


def _members(annotation: Any) -> list[tuple[Any, list[Any]]]:
    annotation, metadata = _strip(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        out: list[tuple[Any, list[Any]]] = []
        for arg in typing.get_args(annotation):
            if arg is type(None):
                continue
            out.extend(_members(arg) if _is_union(arg) else [_strip(arg)])
        return out
    return [(annotation, metadata)]


def _is_union(annotation: Any) -> bool:
    annotation, _ = _strip(annotation)
    origin = typing.get_origin(annotation)
    return origin is typing.Union or origin is types.UnionType


def _as_model(annotation: Any) -> type[BaseModel] | None:
    members = _members(annotation)
    models = [m for m, _ in members if isinstance(m, type) and issubclass(m, BaseModel)]
    return models[0] if len(models) == 1 else None


def _descend(annotation: Any, part: str | int) -> Any:
    members = _members(annotation)
    if isinstance(part, str) and len(members) > 1:
        for member, metadata in members:
            tags = [getattr(m, "tag", None) for m in metadata]
            if part in tags:
                return member
            if isinstance(member, type) and issubclass(member, BaseModel):
                field = member.model_fields.get("kind")
                if field is not None and part in typing.get_args(field.annotation):
                    return member
    for member, _ in members:
        origin = typing.get_origin(member)
        if origin is list and isinstance(part, int):
            return typing.get_args(member)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(member)[1]
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(part, str):
            for name, field in member.model_fields.items():
                if part in (name, field.alias):
                    return field.annotation
    if len(members) == 1 and isinstance(part, str):
        return annotation  # a union tag of a single member
    return None


def build_failure(exc: BaseException, kind: str) -> BaseException | str:
    """What to report when a declaration of `kind` could not be built: raf's own errors as
    they are, anything else as a sentence naming the declaration."""
    if isinstance(exc, ImportError) and not isinstance(exc, MissingExtraError):
        return f"a '{kind}' declaration cannot be built: {exc}"
    if isinstance(exc, TypeError | ValueError | OSError):
        return f"a '{kind}' declaration cannot be built: {exc}"
    return exc
