"""How a server describes its agents: name, description, and every tool the model is
offered, the agent's own and those its context providers add to each run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raf.core.agent_like import AgentLike, own_providers, own_tools
from raf.core.tools import Tool


def provider_tools(provider: Any) -> list[Tool] | None:
    """The tools a context provider declares (a `tools` list, or a `tools()` method);
    None for one whose tools are known only once a run asks (an MCP server's)."""
    declared = getattr(provider, "tools", None)
    if callable(declared):
        declared = declared()
    if isinstance(declared, Sequence) and not isinstance(declared, str):
        return [t for t in declared if isinstance(t, Tool)]
    return None


def describe_agent(agent: AgentLike) -> dict[str, Any]:
    """An agent's JSON description for `/agents`: its own tools then each provider's,
    and per provider the tools it adds (left out where they are known only at run time).
    An orchestration or workflow run as an agent lists none: its members hold them."""
    names = [t.name for t in own_tools(agent)]
    providers: list[dict[str, Any]] = []
    for provider in own_providers(agent):
        entry: dict[str, Any] = {"name": provider.name, "kind": provider.kind}
        tools = provider_tools(provider)
        if tools is not None:
            entry["tools"] = [t.name for t in tools]
            names += [t.name for t in tools if t.name not in names]
        providers.append(entry)
    summary: dict[str, Any] = {"name": agent.name, "description": agent.description}
    summary.update(tools=names, providers=providers)
    rounds = getattr(agent, "max_tool_rounds", None)  # an agent with a tool loop
    if isinstance(rounds, int):
        summary["max_tool_rounds"] = rounds
    return summary
