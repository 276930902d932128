"""Reading a place of a document: its other spellings and its snake_case keys."""

from __future__ import annotations

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.dialects.spellings import spellings_at
from raf.decl.documents.source import KeyPath

_SNAKE = (
    "is the snake_case spelling of {camel!r}: raf reads it, but the original framework "
    "ignores snake_case keys here, so write {camel!r}"
)


def aliases(model: type[BaseModel]) -> set[str]:
    """The keys `model` reads, as documents spell them."""
    return {f.alias or n for n, f in model.model_fields.items()}


def snake_keys(
    rw: Rewriter, path: KeyPath, model: type[BaseModel], *, native: bool = False
) -> None:
    """Read snake_case keys as their camelCase field. In YAML and TOML with a warning (the
    original ignores them there, so the document behaves differently); in JSON, or where
    the original itself spells the place's keys in snake_case (`native`), without one."""
    owner = rw.mapping(path)
    if owner is None:
        return
    known = aliases(model)
    quiet = native or rw.doc.fmt == "json"
    for key in list(owner):
        camel = to_camel(key)
        if "_" in key and camel in known and camel != key:
            why = None if quiet else f"{key!r} " + _SNAKE.format(camel=camel)
            rw.rename(path, key, camel, why=why)


def apply_spellings(
    rw: Rewriter, path: KeyPath, model: type[BaseModel], *, native_snake: bool = False
) -> None:
    """Read the other spellings of the place at `path` (a `model`) as raf's keys;
    `native_snake`: the original spells this place's keys in snake_case."""
    owner = rw.mapping(path)
    if owner is None:
        return
    for spelling in spellings_at(model):
        if spelling.key not in owner:
            continue
        if spelling.means is None:
            rw.drop((*path, spelling.key), spelling.note)
        else:
            rw.rename(path, spelling.key, spelling.means)
    snake_keys(rw, path, model, native=native_snake)
