"""The sub-agents of a declared agent, each built by its own linker: offered as tools, or
as the members of the declared orchestration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raf.core.errors import RafError, ValidationProblems
from raf.core.tools import Tool
from raf.decl.agent.link_base import LinkSite
from raf.decl.documents.schema import SubAgentRefDecl

if TYPE_CHECKING:
    from raf.agent.builder import AgentBuilder
    from raf.decl.agent.link_base import DeclaredAgent
    from raf.orchestrations.agent import OrchestrationAgent


def sub_agent_tools(linker: LinkSite) -> list[Tool]:
    """Each sub-agent as a tool, named and described as its reference says."""
    from raf.agent.agent_tool import AgentTool

    tools: list[Tool] = []
    for sub, child in _members(linker):
        if isinstance(sub, SubAgentRefDecl):
            tools.append(AgentTool(child, name=sub.name, description=sub.description))
        else:
            tools.append(AgentTool(child))
    return tools


def orchestrated(linker: LinkSite, agent: AgentBuilder, decl: Any) -> OrchestrationAgent:
    """The sub-agents as members of the declared orchestration, the document's own agent
    in the mode's leading role where it has one; the result is used as an agent."""
    from raf.decl.agent.link_orchestration import build_orchestration
    from raf.decl.documents.orchestration import ROOT, needs_lead

    members: list[DeclaredAgent] = []
    for sub, child in _members(linker):
        if isinstance(sub, SubAgentRefDecl) and sub.name:
            child.name = sub.name
        if isinstance(sub, SubAgentRefDecl) and sub.description:
            child.description = sub.description
        members.append(child)
    lead_needed = needs_lead(decl)
    if lead_needed:
        try:
            agent.with_chat_client(linker.client())
        except RafError as exc:
            linker.fail(("model",), exc)
    linker.raise_problems()
    try:
        lead = agent.build() if lead_needed else None
        orchestration = build_orchestration(
            decl,
            name=linker.decl.name,
            description=linker.decl.description,
            members=members,
            lead=lead,
        )
    except RafError as exc:
        raise ValidationProblems([linker.doc.problem(ROOT, str(exc))]) from exc
    store = linker.bindings.store if not linker.chain else None
    return orchestration.as_agent(session_store=store)


def _members(linker: LinkSite) -> list[tuple[Any, DeclaredAgent]]:
    """Each sub-agent declaration with the agent built from it."""
    built: list[tuple[Any, DeclaredAgent]] = []
    for sub, loaded in zip(linker.decl.sub_agents, linker.loaded.sub_agents, strict=False):
        try:
            built.append((sub, linker.child(loaded).link()))
        except ValidationProblems as exc:
            linker.problems.extend(exc.problems)
    return built
