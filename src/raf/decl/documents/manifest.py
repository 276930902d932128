"""Agent manifests, as Microsoft's AgentSchema writes them: a `template:` that is itself
an agent (`kind`, `name`, `model`, `instructions`, `tools`, …), `parameters` whose values
fill `{{name}}` placeholders in it, and `resources` (models, tools, connections) a
hosting service provisions.

raf reads the template as the agent, each part keeping its place in the file, fills the
placeholders with the parameters' defaults, and checks `resources` for shape only: raf
binds models and tools in code (`with_connection`, `with_tool`), and says so."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.source import Document, KeyPath

_AGENT_KEYS = ("kind", "name", "model", "instructions", "tools", "outputSchema", "inputSchema")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def is_manifest_data(data: Any) -> bool:
    """A manifest: its `template` is an agent (raf's own `template:` is a prompt
    template with `format`/`content`)."""
    if not isinstance(data, Mapping):
        return False
    template = data.get("template")
    return isinstance(template, Mapping) and any(k in template for k in _AGENT_KEYS)


def manifest_as_agent(doc: Document) -> None:
    """Leave in `doc.data` the agent the manifest's template describes."""
    data: dict[str, Any] = doc.data
    rw = Rewriter(doc)
    defaults = _parameters(doc, data.get("parameters"))
    _resources(doc, data.get("resources"))
    template = data["template"]
    for key in ("name", "description", "displayName", "metadata"):
        if key in template and key in data:
            del data[key]  # the manifest's own; the template's are the agent's
    for key in list(template):
        rw.move(("template", key), (key,))
    for key in ("template", "parameters", "resources"):
        data.pop(key, None)
    doc.data = _fill(doc, data, defaults, ())
    doc.warnings.append(
        doc.problem(
            (),
            "an agent manifest: raf builds its template with the parameters' defaults; "
            "its resources are for a hosting service (raf binds models and tools in code)",
        )
    )


def _parameters(doc: Document, raw: Any) -> dict[str, Any]:
    """Parameter defaults by name; `parameters` is a mapping of name to a property, or
    `{properties: …}` in either property form."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping) and "properties" in raw:
        raw = raw["properties"]
    items: list[tuple[str, Any]]
    if isinstance(raw, Mapping):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [(str(v.get("name", "")), v) for v in raw if isinstance(v, Mapping)]
    else:
        doc.problems.append(
            doc.problem(("parameters",), "parameters are a mapping of name to property")
        )
        return {}
    defaults: dict[str, Any] = {}
    for name, spec in items:
        if not isinstance(spec, Mapping):
            doc.problems.append(
                doc.problem(("parameters", name), "a parameter is a mapping (type, default, …)")
            )
            continue
        if "default" in spec:
            defaults[name] = spec["default"]
    return defaults


def _resources(doc: Document, raw: Any) -> None:
    if raw is None:
        return
    entries = raw.items() if isinstance(raw, Mapping) else enumerate(raw or [])
    if not isinstance(raw, Mapping | list):
        doc.problems.append(doc.problem(("resources",), "resources are a list of mappings"))
        return
    for key, entry in entries:
        if not isinstance(entry, Mapping) or "kind" not in entry:
            doc.problems.append(
                doc.problem(
                    ("resources", key), "a resource is a mapping with a kind (model, tool, …)"
                )
            )


def _fill(doc: Document, value: Any, defaults: Mapping[str, Any], path: KeyPath) -> Any:
    if isinstance(value, dict):
        return {k: _fill(doc, v, defaults, (*path, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(doc, v, defaults, (*path, i)) for i, v in enumerate(value)]
    if not isinstance(value, str) or "{{" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in defaults:
            doc.warnings.append(
                doc.problem(path, f"parameter {name!r} has no default: it is left as written")
            )
            return match.group(0)
        return str(defaults[name])

    return _PLACEHOLDER.sub(replace, value)
