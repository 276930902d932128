"""The agents `raf serve FILE…|DIR` hosts: agent documents, each built once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from raf.core.agent_like import AgentLike
from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.decl.document_file import DOCUMENT_SUFFIXES, documents_in

if TYPE_CHECKING:
    from raf.decl.tool_bindings import Binding

__all__ = ["DOCUMENT_SUFFIXES", "document_paths", "load_agents"]


def document_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The documents named: files as given, folders by their documents (sorted)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(documents_in(path))
        elif path.is_file():
            found.append(path)
        else:
            raise ConfigurationError(f"{str(path)!r} is neither an agent document nor a folder")
    if not found:
        raise ConfigurationError("no agent documents to serve (.yaml, .yml, .json or .toml)")
    return found


def load_agents(
    paths: Sequence[str | Path],
    *,
    chat_client: ChatClient | None = None,
    tools: Mapping[str, Binding] | None = None,
) -> list[AgentLike]:
    """Build every document's agent; `chat_client` replaces each document's model;
    `tools` (what `--tools` binds) and the installed `raf.tools` entry points bind the
    function tools the documents name."""
    from raf.decl.bind_document import bind_agent_tools, document_bindings
    from raf.decl.builder import DeclAgentBuilder

    agents: list[AgentLike] = []
    names: dict[str, Path] = {}
    for path in document_paths(paths):
        builder = DeclAgentBuilder().from_file(path)
        if chat_client is not None:
            builder.with_chat_client(chat_client)
        bind_agent_tools(builder, document_bindings(path, tools or {}))
        agent = builder.build()
        if agent.name in names:
            raise ConfigurationError(
                f"two documents declare an agent named {agent.name!r}: {names[agent.name]} "
                f"and {path}; names must differ",
                file=str(path),
            )
        names[agent.name] = path
        agents.append(agent)
    return agents
