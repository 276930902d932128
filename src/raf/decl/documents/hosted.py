"""Hosted-agent manifests and Foundry toolboxes, as Microsoft's hosting samples write
them.

A hosted agent (`kind: hosted`, also `kind: container`) describes a container that a
hosting service runs: `image`, `protocols`, `resources`, `environment_variables`. raf
checks those parts and runs what it can of the agent itself (its `model`, `tools` and
`instructions`, read as a prompt agent); the container is the hosting service's to run,
never raf's, and validation says so.

A toolbox (`description`, `tools` with `type:`, `skills`) lists tools served behind one
MCP endpoint; raf checks it and says which tools it could call itself (the `mcp` ones
with a `server_url`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, ValidationError

from raf.core.errors import Problem
from raf.decl.documents.base import DeclModel
from raf.decl.documents.document_file import holds_document, read_document
from raf.decl.documents.loaded import DocumentProblems
from raf.decl.documents.problems import problems_from_validation
from raf.decl.documents.source import Document, load_text

HOSTED_KINDS = ("hosted", "container")
_CONTAINER_KEYS = (
    "protocols",
    "resources",
    "environment_variables",
    "environmentVariables",
    "image",
)


class ProtocolDecl(DeclModel):
    """A protocol the container serves (`responses`, `invocations`, `a2a`, …)."""

    protocol: str
    version: str | int | float | None = None


class ResourcesDecl(DeclModel):
    """What the container is given to run on."""

    cpu: str | float | None = None
    memory: str | None = None


class EnvironmentVariableDecl(DeclModel):
    """One variable set in the container (its value is the container's, not raf's)."""

    name: str
    value: str | int | float | bool | None = None


class ContainerDecl(DeclModel):
    """The container part of a hosted-agent manifest."""

    kind: str
    image: str | None = None
    protocols: list[ProtocolDecl] = Field(default_factory=list)
    resources: ResourcesDecl | None = None
    environment_variables: list[EnvironmentVariableDecl] = Field(default_factory=list)


def is_hosted_data(data: Any) -> bool:
    """Whether a parsed document is a hosted-agent manifest."""
    kind = data.get("kind") if isinstance(data, Mapping) else None
    return isinstance(kind, str) and kind.lower() in HOSTED_KINDS


def hosted_as_agent(doc: Document) -> None:
    """Check a hosted manifest's container part, then leave in `doc.data` the agent raf
    can run (its name, description, metadata, model, tools and instructions), with a
    warning that says what raf runs and what it does not."""
    data = dict(doc.data)
    container = {k: v for k, v in data.items() if k in (*_CONTAINER_KEYS, "kind")}
    try:
        ContainerDecl.model_validate(container)
    except ValidationError as exc:
        raise DocumentProblems(problems_from_validation(exc, doc), list(doc.warnings)) from None
    agent = {k: v for k, v in data.items() if k not in (*_CONTAINER_KEYS, "kind")}
    runs = [part for part in ("model", "tools", "instructions") if part in agent]
    what = (
        f"raf runs its {', '.join(runs)}"
        if runs
        else "it declares no model, tools or instructions, so raf has nothing of it to run "
        "(the agent is code inside the container)"
    )
    doc.warnings.append(
        doc.problem(
            ("kind",),
            f"a hosted agent: {what}; the container (image, protocols, resources, "
            "environment variables) is the hosting service's to run, not raf's",
        )
    )
    doc.data = {"kind": "Prompt", **agent}


# -- toolboxes ---------------------------------------------------------------------------


class ToolboxToolDecl(DeclModel):
    """One tool of a toolbox: its `type` and the hosting service's options for it."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    type: str
    name: str | None = None
    server_label: str | None = None
    server_url: str | None = None
    project_connection_id: str | None = None
    require_approval: str | dict[str, Any] | None = None


class SkillRefDecl(DeclModel):
    """A skill the toolbox serves, by name (and version)."""

    name: str
    version: str | None = None


class ToolboxDecl(DeclModel):
    """A toolbox document."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    description: str | None = None
    tools: list[ToolboxToolDecl] = Field(default_factory=list)
    skills: list[SkillRefDecl] = Field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class LoadedToolbox:
    """A checked toolbox and what raf could call of it."""

    decl: ToolboxDecl
    doc: Document
    callable_servers: dict[str, str] = field(default_factory=dict)
    """MCP servers raf could call itself: label to URL."""
    warnings: list[Problem] = field(default_factory=list)


def is_toolbox_data(data: Any) -> bool:
    """A toolbox: no kind, name, model or instructions; tools that each have a `type`."""
    if not isinstance(data, Mapping) or any(
        k in data for k in ("kind", "name", "model", "instructions")
    ):
        return False
    tools = data.get("tools")
    return (
        isinstance(tools, list)
        and bool(tools)
        and all(isinstance(t, Mapping) and "type" in t for t in tools)
    )


def is_toolbox_file(path: str | Path) -> bool:
    """Whether the file holds a toolbox document."""
    return holds_document(path, is_toolbox_data)


def load_toolbox_file(path: str | Path) -> LoadedToolbox:
    """Check a toolbox file; `DocumentProblems` lists what is wrong, located."""
    text, fmt = read_document(path)
    doc = load_text(text, fmt=fmt, file=str(path))
    if doc.problems:
        raise DocumentProblems(list(doc.problems), [])
    return check_toolbox(doc)


def check_toolbox(doc: Document) -> LoadedToolbox:
    """Check a parsed toolbox document; `DocumentProblems` lists what is wrong, located."""
    try:
        decl = ToolboxDecl.model_validate(doc.data)
    except ValidationError as exc:
        raise DocumentProblems(problems_from_validation(exc, doc), []) from None
    servers = {
        t.server_label or t.name or f"mcp{i}": t.server_url
        for i, t in enumerate(decl.tools)
        if t.type == "mcp" and t.server_url
    }
    loaded = LoadedToolbox(decl=decl, doc=doc, callable_servers=servers)
    hosted = [
        t.name or t.server_label or t.type
        for t in decl.tools
        if t.type != "mcp" or not t.server_url
    ]
    if hosted or decl.skills:
        loaded.warnings.append(
            doc.problem(
                ("tools",),
                "a toolbox: raf can call the MCP servers with a server_url "
                f"({', '.join(servers) or 'none'}); the hosting service runs the rest "
                f"({', '.join([*hosted, *(s.name for s in decl.skills)])})",
            )
        )
    return loaded
