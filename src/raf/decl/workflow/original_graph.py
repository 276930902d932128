"""The original framework's graph JSON read as raf's: its `version` checked, its rhai
nodes read as function nodes to bind, an inline agent preferred to an `agent_ref`, its
`ports` read, each with a located warning where raf does something other than the
original."""

from __future__ import annotations

from typing import Any

from raf.decl.documents.dialects.legacy import FORMAT_VERSION
from raf.decl.documents.dialects.rewriter import Rewriter
from raf.decl.documents.source import Document


def read_original_graph(doc: Document) -> None:
    """Rewrite the graph JSON in `doc.data` in place (a no-op for raf's own spelling)."""
    data = doc.data
    rw = Rewriter(doc)
    version = data.get("version")
    if version is not None and str(version).strip() not in (FORMAT_VERSION, "1"):
        rw.warn(
            ("version",),
            f"version {version!r} of the graph format is not the one raf reads "
            f"({FORMAT_VERSION!r}): keys a later version added are reported where they stand",
            key=False,
        )
    ports = data.get("ports")
    if isinstance(ports, list) and ports:
        rw.warn(
            ("ports",),
            "ports are read but not used: in raf a graph asks a person through an "
            "'approval' node (type: approval), which pauses the run until answered",
        )
    nodes = data.get("nodes")
    for index, node in enumerate(nodes if isinstance(nodes, list) else []):
        if isinstance(node, dict):
            _node(rw, index, node)


def _node(rw: Rewriter, index: int, node: dict[str, Any]) -> None:
    path = ("nodes", index)
    kind = node.get("type")
    if isinstance(node.get("agent"), dict) and "agent_ref" in node:
        ref = node.pop("agent_ref")
        if ref not in ("", None):
            rw.warn(
                (*path, "agent_ref"),
                f"node {node.get('id')!r} carries its agent inline: the inline agent is "
                f"used and agent_ref {ref!r} is not (the inline one takes precedence)",
            )
    if kind == "rhai":
        node_id = node.get("id")
        script = node.pop("script_path", None) or node.pop("scriptPath", None)
        node["type"] = "function"
        node.setdefault("function", node_id)
        where = f" ({script})" if isinstance(script, str) else ""
        rw.warn(
            (*path, "type"),
            f"node {node_id!r} is a rhai script{where}, which raf cannot run: it is read as "
            f"a function node named {node_id!r}, whose body is a Python function you bind "
            f"to that name (raf run --tools {node_id}=module:function, or "
            "DeclWorkflowBuilder.with_function in code)",
            key=False,
        )
    elif kind == "function" and node.get("config"):
        rw.warn(
            (*path, "config"),
            "a function node's config is not passed on: raf calls the bound function with "
            "the incoming text alone (give the function its settings in Python)",
        )
