"""Agents from documents: resolving tool declarations (`ToolResolver`), model blocks to
chat clients, contexts, sub-agents and orchestrations, linked into an `Agent` by
`DeclAgentBuilder`."""

from raf.decl.agent.builder import DeclAgentBuilder, ToolFactory, ToolFactoryContext
from raf.decl.agent.tool_resolver import ToolResolver

__all__ = ["DeclAgentBuilder", "ToolFactory", "ToolFactoryContext", "ToolResolver"]
