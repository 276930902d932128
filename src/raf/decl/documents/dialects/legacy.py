"""The original framework's older JSON agent format (`version`, `id`, `model: {provider,
model, api_key, ...}`, tools with `type: builtin | rhai | custom`, `context_providers`,
`skill_directories`, `run_options`, `sub_agents`), read as raf's document."""

from __future__ import annotations

from typing import Any

from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.source import KeyPath
from raf.decl.documents.tool_decls import TOOL_NAMES

_KIND_OF = {name: kind for kind, names in TOOL_NAMES.items() for name in names}
_KIND_OF["run_command"] = "shell"

FORMAT_VERSION = "1.0"
"""The version of the older format raf reads (the only one the original has written)."""

_LEGACY_TOP = ("version", "$schema", "context_providers", "skill_directories", "run_options")
"""Top-level keys only the older format has."""

_MODEL_OPTIONS = {
    "temperature": ("options", "temperature"),
    "max_tokens": ("options", "maxTokens"),
    "top_p": ("options", "topP"),
    "stop": ("options", "stop"),
    "extra": ("options", "additional"),
    "extra_body": ("options", "additional"),
    "extra_headers": ("connection", "headers"),
}
"""The older format's model (and run option) keys, as places of raf's `model` block."""


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
        or any(key in data for key in _LEGACY_TOP)
    )


def upgrade(rw: Rewriter, base: KeyPath = ()) -> None:
    """Rewrite the older format's keys at `base` (and its sub-agents) in place; the rest is
    read like the other spellings."""
    top = rw.mapping(base)
    if top is None:
        return
    _version(rw, base)
    top.pop("$schema", None)  # where an editor finds the format's schema; nothing to run
    if isinstance(top.get("model"), dict):
        _model(rw, (*base, "model"))
    _run_options(rw, base)
    _tools(rw, base)
    _context_providers(rw, base)
    if "metadata" not in top:
        rw.rename(base, "properties", "metadata")  # free key-values, as raf's metadata
    rw.rename(base, "sub_agents", "subAgents")
    subs = top.get("subAgents")
    for index, sub in enumerate(subs if isinstance(subs, list) else []):
        if isinstance(sub, dict) and "file" not in sub:
            upgrade(rw, (*base, "subAgents", index))


def _version(rw: Rewriter, base: KeyPath) -> None:
    """`version` is read and checked: raf reads version 1.0 of the format; another version
    may hold keys raf does not know, so it is a warning (the original does not check it)."""
    top = rw.mapping(base)
    if top is None or "version" not in top:
        return
    value = top["version"]
    if str(value).strip() not in (FORMAT_VERSION, "1"):
        rw.warn(
            (*base, "version"),
            f"version {value!r} of the agent format is not the one raf reads "
            f"({FORMAT_VERSION!r}): keys a later version added are reported where they "
            "stand",
            key=False,
        )
    del top["version"]


def _model(rw: Rewriter, path: KeyPath) -> None:
    owner = rw.mapping(path)
    assert owner is not None
    for key, (block, target) in _MODEL_OPTIONS.items():
        if key in owner:
            rw.move((*path, key), (*path, block, target))


def _run_options(rw: Rewriter, base: KeyPath) -> None:
    """`run_options` are the defaults of every run: the model's options (a setting of the
    model block wins), `instructions` added to the agent's; `properties` (labels on each
    response) have no meaning for raf."""
    options = rw.mapping((*base, "run_options"))
    if options is None:
        return
    here: KeyPath = (*base, "run_options")
    for key in list(options):
        if key in _MODEL_OPTIONS:
            block, target = _MODEL_OPTIONS[key]
            model = rw.mapping((*base, "model"))
            if model is not None and target in (rw.mapping((*base, "model", block)) or {}):
                rw.drop((*here, key), f"is ignored: the model block sets {target!r}")
                continue
            rw.move((*here, key), (*base, "model", block, target))
        elif key == "instructions":
            rw.move((*here, key), (*base, "additionalInstructions"))
        elif key == "properties":
            rw.drop(
                (*here, key),
                "has no meaning for raf and is ignored (the original attaches them to each "
                "response; raf's metadata is the document's own 'metadata')",
            )
    if not options:
        rw.mapping(base).pop("run_options", None)  # type: ignore[union-attr]


def _tools(rw: Rewriter, base: KeyPath) -> None:
    tools = rw.at((*base, "tools"))
    if not isinstance(tools, list):
        return
    for index, tool in enumerate(tools):
        path = (*base, "tools", index)
        if not isinstance(tool, dict) or "type" not in tool or "kind" in tool:
            continue
        kind = str(tool["type"]).lower()
        if kind == "rhai":
            _rhai_as_function(rw, path, tool)
            continue
        if kind == "builtin":
            kind = _KIND_OF.get(str(tool.get("name", "")), "file")
        rw.rename(path, "type", "kind")
        tool["kind"] = kind


RHAI_BODY = ("script_path", "scriptPath", "script", "code", "source", "file", "path")
"""Where a rhai tool keeps its script."""


def _rhai_as_function(rw: Rewriter, path: KeyPath, tool: dict[str, Any]) -> None:
    """A rhai script tool is read as a `function` tool of the same name and parameters:
    raf cannot run rhai, so the tool's body is a Python function bound to that name, and
    a warning at the tool says so (an unbound one is reported as such)."""
    name = tool.get("name", path[-1])
    rw.rename(path, "type", "kind")
    rw.rename(path, "parameters_schema", "parameters")
    tool["kind"] = "function"
    script = next((tool[k] for k in RHAI_BODY if isinstance(tool.get(k), str)), None)
    for key in RHAI_BODY:
        tool.pop(key, None)
    if tool.get("parameters") in ({}, None):
        tool.pop("parameters", None)  # the original's default: no schema given
    where = f" ({script})" if script and "\n" not in script else ""
    rw.warn(
        (*path, "kind"),
        f"tool {name!r} is a rhai script{where}, which raf cannot run: it is read as a "
        f"function tool named {name!r}, whose body is a Python function you bind to that "
        "name (raf run --tools module:function, an entry point in group 'raf.tools', or "
        "register_factory in code)",
    )


_IN_MEMORY = ("in_memory_history", "inmemoryhistory", "history")


def _context_providers(rw: Rewriter, base: KeyPath) -> None:
    """`context_providers` (with `skill_directories`) as raf's `contexts`: the history is
    always kept in raf's session; memory is raf's memory; skills are looked for in
    `skill_directories`."""
    top = rw.mapping(base)
    assert top is not None
    providers = top.get("context_providers")
    directories = top.get("skill_directories")
    here: KeyPath = (*base, "context_providers")
    kept: list[tuple[KeyPath | None, Any]] = []
    contexts = top.get("contexts")
    if isinstance(contexts, list):
        kept = [((*base, "contexts", i), c) for i, c in enumerate(contexts)]
    skills_at: int | None = None
    for index, entry in enumerate(providers if isinstance(providers, list) else []):
        path = (*here, index)
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            kept.append((path, entry))  # raf's own checks say what is wrong with it
            continue
        kind = entry["type"].lower()
        if kind in _IN_MEMORY:
            continue  # raf keeps the conversation in the session whatever is declared
        rw.rename(path, "type", "kind")
        entry["kind"] = kind
        if kind == "memory":
            mode = entry.pop("mode", "")
            if mode not in ("", "base", None):
                rw.warn(
                    (*path, "kind"),
                    f"memory mode {mode!r} is the original's; raf's memory has one mode "
                    "(its notes and their consolidation) and reads it as that",
                )
        elif kind == "skills":
            names = entry.pop("names", None)
            if names:
                rw.warn(
                    (*path, "kind"),
                    "skills are offered by their folder in raf: every skill found in "
                    "'skill_directories' is offered, not only those named",
                )
            if isinstance(directories, list):
                entry["config"] = {"directories": list(directories)}
                rw.relocate((*base, "skill_directories"), (*path, "config", "directories"))
                skills_at = len(kept)
        kept.append((path, entry))
    if "context_providers" in top:
        top["contexts"] = [value for _, value in kept]
        for index, (origin, _) in enumerate(kept):
            if origin is not None and origin != (*base, "contexts", index):
                rw.relocate(origin, (*base, "contexts", index))
        del top["context_providers"]
    if "skill_directories" in top:
        if skills_at is None:
            rw.drop(
                (*base, "skill_directories"),
                "is ignored: it is where a 'skills' context provider looks, and none is declared",
            )
        else:
            del top["skill_directories"]
