"""Message types of handlers: reading them from annotations, matching values and edges."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Union, get_args, get_origin

ANY: tuple[Any, ...] = (Any,)
"""The types of a port that accepts or sends anything (no check is possible)."""


def flatten(tp: Any) -> tuple[Any, ...]:
    """A union split into its members; `None` annotations become `type(None)`."""
    if tp is None:
        return (type(None),)
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        out: list[Any] = []
        for arg in get_args(tp):
            out.extend(flatten(arg))
        return tuple(out)
    if tp is object:
        return ANY
    return (tp,)


def type_name(tp: Any) -> str:
    """A short readable name: `str`, `list[ChatMessage]`, `Any`."""
    if tp is Any:
        return "Any"
    if tp is type(None):
        return "None"
    origin = get_origin(tp)
    if origin is not None:
        args = ", ".join(type_name(a) for a in get_args(tp))
        base = getattr(origin, "__name__", str(origin))
        return f"{base}[{args}]" if args else base
    return getattr(tp, "__qualname__", None) or getattr(tp, "__name__", None) or str(tp)


def names(tps: tuple[Any, ...]) -> str:
    return " | ".join(type_name(t) for t in tps) or "nothing"


def resolve_hints(fn: Callable[..., Any], where: str) -> dict[str, Any]:
    """The resolved annotations of `fn`; a clear error when one names an unknown type."""
    from raf.workflow.errors import WorkflowValidationError

    try:
        return typing.get_type_hints(fn)
    except (NameError, TypeError) as exc:
        raise WorkflowValidationError(
            f"{where}: cannot resolve the type annotations of "
            f"{getattr(fn, '__qualname__', fn)!r} ({exc}); define the message types at "
            "module level"
        ) from None


def matches(value: Any, tp: Any) -> bool:
    """Whether a runtime value is of the (possibly generic) type `tp`."""
    if tp is Any or tp is object:
        return True
    if tp is type(None):
        return value is None
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return any(matches(value, a) for a in get_args(tp))
    if origin is typing.Literal:
        return value in get_args(tp)
    if origin is not None:
        if not isinstance(origin, type) or not isinstance(value, origin):
            return False
        args = get_args(tp)
        if origin in (list, tuple, set, frozenset) and args and args[0] is not Ellipsis:
            items: Any = value
            return all(matches(v, args[0]) for v in items)
        return True
    if isinstance(tp, type):
        if tp is float and isinstance(value, int) and not isinstance(value, bool):
            return True
        try:
            return isinstance(value, tp)
        except TypeError:  # TypedDict, non-runtime Protocol: cannot be checked
            return True
    return True


def compatible(out: Any, into: Any) -> bool:
    """Whether a message of declared type `out` can be handled by a port typed `into`."""
    if out is Any or into is Any or out is object or into is object:
        return True
    out_origin, in_origin = get_origin(out), get_origin(into)
    if in_origin is typing.Literal or out_origin is typing.Literal:
        return True
    out_base = out_origin or out
    in_base = in_origin or into
    if not (isinstance(out_base, type) and isinstance(in_base, type)):
        return True
    if out_base is int and in_base is float:
        return True
    try:
        if not issubclass(out_base, in_base):
            return False
    except TypeError:  # TypedDict, non-runtime Protocol: cannot be checked
        return True
    out_args, in_args = get_args(out), get_args(into)
    if out_args and in_args and len(out_args) == len(in_args):
        return all(
            any(compatible(o, i) for o in flatten(oa) for i in flatten(ia))
            for oa, ia in zip(out_args, in_args, strict=True)
            if oa is not Ellipsis and ia is not Ellipsis
        )
    return True


def any_compatible(outs: tuple[Any, ...], ins: tuple[Any, ...]) -> bool:
    """Whether some declared output can go into some declared input."""
    return any(compatible(o, i) for o in outs for i in ins)
