"""Binding a document's `function` tools (and a workflow's function tools and function
nodes) to what the command line and the installed `raf.tools` entry points give, for every
program that loads a document: the CLI's commands and the servers' loaders alike."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raf.core.tools import Tool
from raf.decl.agent.tool_bindings import Binding, bindings_for, entry_point_names
from raf.decl.check_file import check_file

if TYPE_CHECKING:
    from raf.decl.agent.builder import DeclAgentBuilder
    from raf.decl.workflow import DeclWorkflowBuilder


def document_bindings(path: str | Path, given: Mapping[str, Binding]) -> dict[str, Binding]:
    """The bindings of the function tools the document at `path` names: `given` ones
    (`--tools`) first, then installed entry points (loaded only for names it uses)."""
    if not given and not entry_point_names():
        return {}
    checked = check_file(path, bound_tools=set(given) | entry_point_names(), check_extras=False)
    return bindings_for(checked.tool_names, given)


def as_named_tool(name: str, fn: Binding) -> Tool:
    """A bound function as the tool of that name (a Tool as it is)."""
    if isinstance(fn, Tool):
        return fn
    from raf.core.function_tool import FunctionTool

    return FunctionTool(fn, name=name)


def bind_agent_tools(builder: DeclAgentBuilder, bound: Mapping[str, Binding]) -> None:
    """Bind an agent document's function tools: the function is made a tool with the
    document's name and description (a Tool is used as it is)."""
    for name, fn in bound.items():
        builder.register_factory(name, _factory(fn))


def bind_workflow_tools(builder: DeclWorkflowBuilder, bound: Mapping[str, Binding]) -> None:
    """Bind a workflow's `InvokeFunctionTool` targets and graph function nodes."""
    for name, fn in bound.items():
        builder.with_tool(as_named_tool(name, fn))
        if not isinstance(fn, Tool):
            builder.with_function(fn, name=name)


def _factory(fn: Binding) -> Any:
    return lambda _context: fn
