"""Binding `function` tools a document names from outside code: `module:function` specs
(what `raf run --tools` takes) and installed packages' entry points in the `raf.tools`
group, each a callable (or a `Tool`) found under the name the document gives its tool."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from raf.core.errors import ConfigurationError
from raf.core.tools import Tool

ENTRY_POINT_GROUP = "raf.tools"
"""The entry point group whose names bind `function` tools: an entry point `get_weather =
"weather_pkg.tools:get_weather"` binds a document's tool named `get_weather`."""

Binding = Callable[..., Any] | Tool
"""What binds a tool: a plain function (made a tool under the document's name) or a Tool."""


def load_spec(spec: str) -> tuple[str, Binding]:
    """`module:function` (bound under the function's own name, or the Tool's) or
    `NAME=module:function`, imported; a missing module or attribute, or one that cannot
    be called, is a `ConfigurationError` that says which."""
    name, eq, target = spec.partition("=")
    if not eq:
        name, target = "", spec
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigurationError(
            f"--tools {spec!r}: write it as module:function (or NAME=module:function)"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"--tools {spec!r}: cannot import {module_name!r}: {exc}") from exc
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ConfigurationError(
                f"--tools {spec!r}: module {module_name!r} has no attribute {attribute!r}"
            )
        found = getattr(found, part)
    if not isinstance(found, Tool) and not callable(found):
        raise ConfigurationError(
            f"--tools {spec!r}: {attribute!r} is a {type(found).__name__}, not a function or Tool"
        )
    own = found.name if isinstance(found, Tool) else attribute.rsplit(".", 1)[-1]
    return name or own, found


def load_specs(specs: Iterable[str]) -> dict[str, Binding]:
    """Every spec loaded, by the name it binds; a later spec for a name replaces one before."""
    return dict(load_spec(spec) for spec in specs)


def entry_point_names() -> set[str]:
    """The tool names installed packages bind through the `raf.tools` entry point group."""
    return {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> Binding:
    """The callable (or Tool) an installed entry point binds; one that cannot be loaded
    or called is a `ConfigurationError` that says which."""
    try:
        found = ep.load()
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r} cannot be "
            f"loaded: {exc}"
        ) from exc
    if not isinstance(found, Tool) and not callable(found):
        raise ConfigurationError(
            f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r} is a "
            f"{type(found).__name__}, not a function or Tool"
        )
    return found  # type: ignore[no-any-return]


def bindings_for(names: Iterable[str], given: Mapping[str, Binding]) -> dict[str, Binding]:
    """The bindings of the tool names a document uses: given ones first, then installed
    entry points (the installed packages read once, an entry point loaded only when a
    name needs it); a name neither has is left out (the document check reports it)."""
    installed: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        installed.setdefault(ep.name, ep)  # the first of a name, as a lookup by name finds
    out: dict[str, Binding] = {}
    for name in names:
        if name in given:
            out[name] = given[name]
        elif name in installed:
            out[name] = _load_entry_point(installed[name])
    return out


UNBOUND_HINT = (
    "bind it with --tools module:function (or NAME=module:function), an entry point in "
    f"group {ENTRY_POINT_GROUP!r}, or register_factory in code"
)
