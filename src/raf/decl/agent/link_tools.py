"""The tools of a declared agent: each declaration made into tools (by a registered factory
or the built-in resolver) or into a toolset provider, and the tools given in code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raf.core.context import ContextProvider
from raf.core.errors import ConfigurationError, MissingExtraError, RafError
from raf.core.tools import ApprovalRequiredTool, Tool
from raf.decl.agent import contexts as ctx
from raf.decl.agent.factories import ToolFactory, ToolFactoryContext, tools_from
from raf.decl.agent.link_base import LinkSite
from raf.decl.documents.output_schema import as_json_schema
from raf.decl.documents.problems import build_failure
from raf.decl.documents.schema import (
    BUILTIN_TOOLS,
    CustomToolDecl,
    DeclModel,
    FunctionToolDecl,
    HostedToolDecl,
    McpToolDecl,
    OpenApiToolDecl,
)
from raf.decl.documents.source import KeyPath, format_path
from raf.decl.documents.tool_decls import config_dict

if TYPE_CHECKING:
    from raf.agent.builder import AgentBuilder


def declared_tools(linker: LinkSite) -> tuple[list[tuple[KeyPath, Tool]], list[ContextProvider]]:
    """The declared tools with where each is declared, and the declared toolsets."""
    tools: list[tuple[KeyPath, Tool]] = []
    toolsets: list[ContextProvider] = []
    seen: dict[str, KeyPath] = {}
    for index, decl in enumerate(linker.decl.tools):
        path: KeyPath = ("tools", index)
        try:
            if isinstance(decl, McpToolDecl | OpenApiToolDecl) and not _factory_for(
                linker, decl.name, decl.kind
            ):
                toolsets.append(_toolset(linker, decl))
                continue
            made = _tool(linker, decl)
        except (RafError, ImportError, OSError, TypeError, ValueError) as exc:
            linker.fail((*path, "kind"), build_failure(exc, decl.kind))
            continue
        for tool in made:
            if tool.name in seen:
                where = format_path(seen[tool.name])
                linker.fail(path, f"duplicate tool name {tool.name!r}: {where} already has it")
                continue
            seen[tool.name] = path
            tools.append((path, tool))
    return tools, toolsets


def add_code_tools(linker: LinkSite, agent: AgentBuilder) -> None:
    """The tools given with `with_tool`, never routed to a workspace."""
    for name, factory in linker.bindings.code_tools:
        try:
            for tool in tools_from(factory, ToolFactoryContext(name=name, kind="code"), name):
                agent.with_tool(tool)
        except (RafError, ImportError) as exc:  # code, not the document: no location
            linker.fail_in_code(f"with_tool({name!r}): {exc}", exc)


def is_scope_tool(tool: Tool) -> bool:
    from raf.tools.workspace import is_scope_tool

    return is_scope_tool(tool)


def _factory_for(linker: LinkSite, name: str | None, kind: str) -> ToolFactory | None:
    factories = linker.bindings.factories
    if name and name in factories:
        return factories[name]
    return factories.get(kind)


def _tool(linker: LinkSite, decl: Any) -> list[Tool]:
    factory = _factory_for(linker, decl.name, decl.kind)
    raw = getattr(decl, "config", None)
    config = config_dict(raw) if isinstance(raw, DeclModel) else dict(raw or {})
    if factory is not None:
        context = ToolFactoryContext(
            name=decl.name or decl.kind,
            kind=decl.kind,
            description=decl.description,
            config=config,
            base_dir=linker.doc.base_dir,
            parameters=_parameters(decl),
        )
        made = tools_from(factory, context, decl.name or decl.kind)
    elif isinstance(decl, HostedToolDecl):
        from raf.clients.hosted_tools import hosted_tool

        made = [hosted_tool(decl.spec(), name=decl.name)]
    elif isinstance(decl, FunctionToolDecl | CustomToolDecl):
        raise ConfigurationError(
            f"{decl.kind} tool {decl.name!r} is bound in code: call "
            f".register_factory({decl.name!r}, factory) before build()"
        )
    elif decl.kind in BUILTIN_TOOLS:
        from raf.decl.agent.tool_resolver import ToolResolver

        made = list(
            ToolResolver().resolve(
                decl.kind, decl.name, config or None, base_dir=linker.doc.base_dir
            )
        )
    else:  # pragma: no cover - the schema admits no other kind
        raise ConfigurationError(f"unknown tool kind {decl.kind!r}")
    if getattr(decl, "approval_required", False):
        made = [ApprovalRequiredTool(t) for t in made]
    return made


def _toolset(linker: LinkSite, decl: McpToolDecl | OpenApiToolDecl) -> ContextProvider:
    base_dir = linker.doc.base_dir
    if isinstance(decl, McpToolDecl):
        try:
            from raf.tools.mcp import McpServerConfig, McpToolset
        except ImportError as exc:
            raise MissingExtraError("an 'mcp' tool", "mcp", exc.name) from exc
        mcp = McpToolset(
            McpServerConfig(**ctx._with_cwd(decl.config.to_config(decl.name), base_dir))
        )
        return ctx.ToolsetProvider(f"mcp:{decl.name}", mcp.load, mcp.aclose)
    try:
        from raf.tools.openapi import OpenApiToolset
    except ImportError as exc:
        raise MissingExtraError("an 'openapi' tool", "openapi", exc.name) from exc
    config = decl.config
    spec = config.spec_url
    if "://" not in spec:
        spec = str(base_dir / spec)
    options: dict[str, Any] = {"name": decl.name, "timeout": config.timeout}
    if config.base_url:
        options["base_url"] = config.base_url
    auth = config.auth
    if auth is not None and auth.token is not None:
        token = auth.token.get_secret_value()
        if auth.kind == "bearer":
            options["bearer_token"] = token
        elif auth.kind == "header":
            options["headers"] = {auth.header or "X-API-Key": token}
    if config.operations is not None:
        options["operations"] = list(config.operations)
    if config.approval_mode == "always":
        options["approval_required"] = True
    toolset = OpenApiToolset(spec, **options)
    return ctx.ToolsetProvider(f"openapi:{decl.name}", toolset.load)


def _parameters(decl: Any) -> dict[str, Any] | None:
    parameters = getattr(decl, "parameters", None)
    return as_json_schema(parameters) if isinstance(parameters, dict) else None
