"""The original framework's older JSON agent format (`id`, `model: {provider, model,
api_key}`, tools with `type: builtin | rhai | custom`), read as raf's document."""

from __future__ import annotations

from typing import Any

from raf.decl.dialects.rewriter import Rewriter
from raf.decl.tool_resolver import TOOL_NAMES

_KIND_OF = {name: kind for kind, names in TOOL_NAMES.items() for name in names}
_KIND_OF["run_command"] = "shell"


def is_legacy(data: Any) -> bool:
    """True for a document in the older JSON format."""
    if not isinstance(data, dict):
        return False
    tools = data.get("tools")
    typed = isinstance(tools, list) and any(
        isinstance(t, dict) and "type" in t and "kind" not in t for t in tools
    )
    model = data.get("model")
    return (
        typed
        or ("id" in data and "name" not in data)
        or (isinstance(model, dict) and "model" in model and "id" not in model)
    )


def upgrade(rw: Rewriter) -> None:
    """Rewrite the older format's tools in place (the rest is read like other spellings)."""
    tools = rw.at(("tools",))
    if not isinstance(tools, list):
        return
    keep: list[tuple[tuple[str | int, ...] | None, Any]] = []
    for index, tool in enumerate(tools):
        path = ("tools", index)
        if not isinstance(tool, dict) or "type" not in tool or "kind" in tool:
            keep.append((path, tool))
            continue
        kind = str(tool["type"]).lower()
        if kind == "rhai":
            _rhai_as_function(rw, path, tool)
            keep.append((path, tool))
            continue
        if kind == "builtin":
            kind = _KIND_OF.get(str(tool.get("name", "")), "file")
        rw.rename(path, "type", "kind")
        tool["kind"] = kind
        keep.append((path, tool))
    if len(keep) != len(tools):
        rw.replace_list(("tools",), keep)


RHAI_BODY = ("script", "code", "source", "file", "path")
"""Where a rhai tool keeps its script."""


def _rhai_as_function(rw: Rewriter, path: tuple[str | int, ...], tool: dict[str, Any]) -> None:
    """A rhai script tool is read as a `function` tool of the same name and parameters:
    raf cannot run rhai, so the tool's body is a Python function bound to that name, and
    a warning at the tool says so (an unbound one is reported as such)."""
    name = tool.get("name", path[-1])
    rw.rename(path, "type", "kind")
    tool["kind"] = "function"
    for key in RHAI_BODY:
        tool.pop(key, None)
    rw.warn(
        (*path, "kind"),
        f"tool {name!r} is a rhai script, which raf cannot run: it is read as a function "
        f"tool named {name!r}, whose body is a Python function you bind to that name "
        "(register_factory in code, or raf run --tools module:function)",
    )
