"""Arguments of plainly typed tools: their JSON Schema and their check, without pydantic.

A tool whose parameters are all `int`, `float`, `str` or `bool`, a `list` of one of those,
or one of those or `None`, with no default or an immutable one, gets here the schema
pydantic would generate for it, and arguments that already have their JSON types pass
as pydantic would pass them (an integer for a `float` becomes a float). Anything else
(a wrong type, a missing or unknown key) is left to the tool's pydantic model, built on
first need, so every error a model reads is pydantic's own.

Building a pydantic model costs milliseconds per tool and importing pydantic tens of
them; most tools never need either.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

_JSON_TYPES: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean"}
_IMMUTABLE_DEFAULTS = (type(None), bool, int, float, str)
_EXACT_FLOAT = 2**53
"""Integers up to this size become floats exactly."""


class _Missing:
    """No default: the parameter is required."""


MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class PlainParameter:
    """One parameter of a plainly typed tool."""

    name: str
    scalar: type
    """int, float, str or bool: the value's type, or its items' when `is_list`."""
    is_list: bool = False
    optional: bool = False
    """`None` is accepted too."""
    default: Any = MISSING
    description: str | None = None

    def schema(self) -> dict[str, Any]:
        """This parameter's JSON Schema, keys in pydantic's (sorted) order."""
        base: dict[str, Any] = {"type": _JSON_TYPES[self.scalar]}
        if self.is_list:
            base = {"items": base, "type": "array"}
        out: dict[str, Any] = {"anyOf": [base, {"type": "null"}]} if self.optional else base
        if self.default is not MISSING:
            out["default"] = self.default
        if self.description is not None:
            out["description"] = self.description
        return dict(sorted(out.items()))


def plain_parameter(
    name: str, annotation: Any, default: Any, description: str | None
) -> PlainParameter | None:
    """The parameter when its annotation and default are plain enough; None otherwise."""
    if default is not MISSING and (
        type(default) not in _IMMUTABLE_DEFAULTS
        or (type(default) is float and not math.isfinite(default))
    ):
        return None
    optional = False
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        members = get_args(annotation)
        if len(members) != 2 or type(None) not in members:
            return None
        annotation = members[0] if members[1] is type(None) else members[1]
        optional = True
        origin = get_origin(annotation)
    is_list = False
    if origin is list:
        items = get_args(annotation)
        if len(items) != 1:
            return None
        annotation = items[0]
        is_list = True
    if annotation not in _JSON_TYPES:
        return None
    return PlainParameter(
        name=name,
        scalar=annotation,
        is_list=is_list,
        optional=optional,
        default=default,
        description=description,
    )


def plain_schema(parameters: tuple[PlainParameter, ...]) -> dict[str, Any]:
    """The arguments object's schema, as pydantic writes it (titles left out)."""
    out: dict[str, Any] = {
        "additionalProperties": False,
        "properties": {p.name: p.schema() for p in parameters},
    }
    required = [p.name for p in parameters if p.default is MISSING]
    if required:
        out["required"] = required
    out["type"] = "object"
    return out


def _scalar(value: Any, scalar: type) -> tuple[bool, Any]:
    kind = type(value)
    if kind is scalar:
        return True, value
    if scalar is float and kind is int and -_EXACT_FLOAT <= value <= _EXACT_FLOAT:
        return True, float(value)
    return False, None


def check_plain(
    parameters: tuple[PlainParameter, ...], arguments: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The keyword arguments for the function, or None when pydantic must decide."""
    out: dict[str, Any] = {}
    used = 0
    for parameter in parameters:
        name = parameter.name
        if name not in arguments:
            if parameter.default is MISSING:
                return None
            out[name] = parameter.default
            continue
        used += 1
        value = arguments[name]
        if value is None and parameter.optional:
            out[name] = None
        elif parameter.is_list:
            if type(value) is not list:
                return None
            items = []
            for item in value:
                ok, item = _scalar(item, parameter.scalar)
                if not ok:
                    return None
                items.append(item)
            out[name] = items
        elif type(value) is parameter.scalar:  # `_scalar`'s first case, inline
            out[name] = value
        else:
            ok, value = _scalar(value, parameter.scalar)
            if not ok:
                return None
            out[name] = value
    if used != len(arguments):
        return None  # unknown keys: pydantic names them
    return out
