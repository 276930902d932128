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
            rw.warn(
                (*path, "type"),
                f"tool {tool.get('name', index)!r} is a rhai script: raf cannot run rhai and "
                "leaves it out (write it as a Python tool and bind it with register_factory)",
            )
            continue
        if kind == "builtin":
            kind = _KIND_OF.get(str(tool.get("name", "")), "file")
        rw.rename(path, "type", "kind")
        tool["kind"] = kind
        keep.append((path, tool))
    if len(keep) != len(tools):
        rw.replace_list(("tools",), keep)
