"""What `raf serve FILE…|DIR` hosts: agent and workflow documents (either dialect), each
checked and built once, and the agents and workflows defined in Python files."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from raf.core.agent_like import AgentLike
from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.decl.documents.document_file import DOCUMENT_SUFFIXES, documents_in
from raf.serve.workflows import ServedWorkflow
from raf.workflow import Workflow

if TYPE_CHECKING:
    from raf.decl.agent.tool_bindings import Binding
    from raf.stores.checkpoints import CheckpointStore

__all__ = ["DOCUMENT_SUFFIXES", "document_paths", "load_agents", "load_python", "load_targets"]


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
    from raf.decl.agent.builder import DeclAgentBuilder
    from raf.decl.bind_document import bind_agent_tools, document_bindings

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


def load_python(path: Path) -> tuple[list[AgentLike], list[Workflow]]:
    """Import a Python file (the user's own code) and collect its module-level agents and
    workflows, in the order they are defined."""
    name = f"raf_ui_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"cannot import {str(path)!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ConfigurationError(
            f"{path}: importing it failed: {type(exc).__name__}: {exc}"
        ) from exc
    values = list(vars(module).values())
    agents = [v for v in values if isinstance(v, AgentLike)]
    workflows = [v for v in values if isinstance(v, Workflow)]
    if not agents and not workflows:
        raise ConfigurationError(f"{path}: defines no Agent or Workflow at module level")
    return agents, workflows


def load_targets(
    paths: Sequence[str | Path],
    *,
    chat_client: ChatClient | None = None,
    tools: Mapping[str, Binding] | None = None,
    checkpoints: CheckpointStore | None = None,
) -> tuple[list[AgentLike], list[ServedWorkflow]]:
    """Agents and workflows from documents (files or folders, raf's dialect or the
    original framework's) and from `.py` files; `chat_client` replaces the documents'
    models; `tools` and the installed `raf.tools` entry points bind the function tools
    (and function nodes) the documents name. A workflow document is built again for
    each run that finds no idle copy (many runs at once); a workflow object of a Python
    file serves its runs in turn. Every workflow keeps its checkpoints in `checkpoints`
    (each its own store when None). Agent and workflow names must all differ: both are
    served under `/agents/{name}`."""
    from raf.decl.bind_document import bind_workflow_tools, document_bindings
    from raf.decl.workflow import DeclWorkflowBuilder, is_workflow_file

    python = [Path(p) for p in paths if str(p).endswith(".py")]
    named = [p for p in paths if not str(p).endswith(".py")]
    documents = document_paths(named) if named else []
    flow_files = [p for p in documents if is_workflow_file(p)]
    agent_files = [p for p in documents if p not in flow_files]
    agents = load_agents(agent_files, chat_client=chat_client, tools=tools) if agent_files else []
    workflows: list[ServedWorkflow] = []
    for path in flow_files:
        builder = DeclWorkflowBuilder().from_file(path)
        if chat_client is not None:
            builder.with_chat_client(chat_client)
        bind_workflow_tools(builder, document_bindings(path, tools or {}))
        workflows.append(
            ServedWorkflow(builder.build(), build=builder.build, checkpoints=checkpoints)
        )
    for path in python:
        if not path.is_file():
            raise ConfigurationError(f"{str(path)!r} is not a file")
        found_agents, found_workflows = load_python(path)
        agents.extend(found_agents)
        workflows.extend(ServedWorkflow(w, checkpoints=checkpoints) for w in found_workflows)
    names: set[str] = set()
    for agent in agents:
        if agent.name in names:
            raise ConfigurationError(f"two agents are named {agent.name!r}; names must differ")
        names.add(agent.name)
    for workflow in workflows:
        if workflow.name in names:
            raise ConfigurationError(
                f"two agents or workflows are named {workflow.name!r}; names must differ "
                "(both are served under /agents/NAME)"
            )
        names.add(workflow.name)
    return agents, workflows
