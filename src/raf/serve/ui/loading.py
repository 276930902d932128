"""What `raf ui` hosts: agent and workflow documents, and agents and workflows defined in
Python files."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from raf.core.agent_like import AgentLike
from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.serve.loading import document_paths, load_agents
from raf.workflow import Workflow

if TYPE_CHECKING:
    from raf.decl.tool_bindings import Binding


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
) -> tuple[list[AgentLike], list[Workflow]]:
    """Agents and workflows from documents (files or folders) and from `.py` files;
    `chat_client` replaces the documents' models; `tools` and the installed `raf.tools`
    entry points bind the function tools (and function nodes) the documents name."""
    from raf.decl.bind_document import bind_workflow_tools, document_bindings
    from raf.decl.workflow import DeclWorkflowBuilder, is_workflow_file

    python = [Path(p) for p in paths if str(p).endswith(".py")]
    named = [p for p in paths if not str(p).endswith(".py")]
    documents = document_paths(named) if named else []
    flow_files = [p for p in documents if is_workflow_file(p)]
    agent_files = [p for p in documents if p not in flow_files]
    agents = load_agents(agent_files, chat_client=chat_client, tools=tools) if agent_files else []
    workflows: list[Workflow] = []
    for path in flow_files:
        builder = DeclWorkflowBuilder().from_file(path)
        if chat_client is not None:
            builder.with_chat_client(chat_client)
        bind_workflow_tools(builder, document_bindings(path, tools or {}))
        workflows.append(builder.build())
    for path in python:
        if not path.is_file():
            raise ConfigurationError(f"{str(path)!r} is not a file")
        found_agents, found_workflows = load_python(path)
        agents.extend(found_agents)
        workflows.extend(found_workflows)
    names: set[str] = set()
    for agent in agents:
        if agent.name in names:
            raise ConfigurationError(f"two agents are named {agent.name!r}; names must differ")
        names.add(agent.name)
    flows: set[str] = set()
    for workflow in workflows:
        if workflow.name in flows:
            raise ConfigurationError(
                f"two workflows are named {workflow.name!r}; names must differ"
            )
        flows.add(workflow.name)
    return agents, workflows
