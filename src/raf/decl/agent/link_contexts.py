"""The context providers of a declared agent: one a declared context, memory shared as
skills, and compression last over all the others."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from raf.core.context import ContextProvider
from raf.core.errors import ConfigurationError, RafError
from raf.decl.agent import contexts as ctx
from raf.decl.agent.link_base import LinkSite
from raf.decl.documents.problems import build_failure
from raf.decl.documents.schema import (
    CompressionContextDecl,
    KnowledgeContextDecl,
    McpContextDecl,
    MemoryContextDecl,
    SkillsContextDecl,
    WikiContextDecl,
    WorkspaceContextDecl,
)
from raf.decl.documents.source import KeyPath


@dataclass(kw_only=True, slots=True)
class LinkedContexts:
    """The providers of `contexts:` in order, the workspace among them, the compression."""

    providers: list[ContextProvider]
    workspace: Any = None
    compression: ContextProvider | None = None


def linked_contexts(linker: LinkSite) -> LinkedContexts:
    """Each context declaration as its provider; a failed one is a located problem."""
    decl = linker.decl
    workspace_index = next(
        (i for i, c in enumerate(decl.contexts) if isinstance(c, WorkspaceContextDecl)), None
    )
    linked = LinkedContexts(providers=[])
    for index, context in enumerate(decl.contexts):
        path: KeyPath = ("contexts", index)
        try:
            if isinstance(context, CompressionContextDecl):
                linked.compression = ctx.compression_provider(
                    context.config, context.name, linker.bindings.connections, linker.client
                )
                continue
            if isinstance(context, MemoryContextDecl) and not context.config.enabled:
                continue  # `enabled: false` turns the memory off
            provider = _provider(linker, context)
        except (RafError, ImportError, OSError, TypeError, ValueError) as exc:
            linker.fail(path, build_failure(exc, context.kind))
            continue
        if index == workspace_index:
            linked.workspace = provider
        linked.providers.append(provider)
    return linked


def compressed_last(
    linker: LinkSite, providers: list[ContextProvider], compression: ContextProvider | None
) -> list[ContextProvider]:
    """The providers with the compression (top-level `compression:` before a context one)
    last: it compresses all they inject."""
    decl = linker.decl
    if decl.compression is not None:
        try:
            compression = ctx.compression_provider(
                decl.compression,
                decl.compression.name,
                linker.bindings.connections,
                linker.client,
            )
        except (RafError, ImportError, TypeError, ValueError) as exc:
            linker.fail(("compression",), build_failure(exc, "compression"))
    if compression is None:
        return providers
    return [*providers, compression]


def share_skills(providers: list[ContextProvider]) -> None:
    """A memory read as a skill joins the document's skills provider, if it has one."""
    from raf.context.memory import SuperBrainContextProvider
    from raf.context.skills import AgentSkillsProvider

    skills = next((p for p in providers if isinstance(p, AgentSkillsProvider)), None)
    if skills is None:
        return
    for provider in providers:
        if isinstance(provider, SuperBrainContextProvider) and provider.access == "skill":
            provider.host_skills(skills)


def _provider(linker: LinkSite, context: Any) -> ContextProvider:
    base = linker.doc.base_dir
    if isinstance(context, WorkspaceContextDecl):
        provider: ContextProvider = ctx.workspace_provider(context, base)
        return provider
    if isinstance(context, SkillsContextDecl):
        return ctx.skills_provider(context, base)
    if isinstance(context, MemoryContextDecl):
        return ctx.memory_provider(context, base, linker.bindings.connections)
    if isinstance(context, KnowledgeContextDecl):
        return ctx.knowledge_provider(context, base)
    if isinstance(context, WikiContextDecl):
        return ctx.wiki_provider(context, base)
    if isinstance(context, McpContextDecl):
        return ctx.mcp_provider(context, base)
    raise ConfigurationError(f"unknown context kind {context.kind!r}")  # pragma: no cover
