"""Builds a runnable `Workflow` from a workflow document: its agents (from their
documents, on a model you may override), function tools, MCP servers and the code
sandbox; names nobody provides are located errors at build time.

    workflow = (
        DeclWorkflowBuilder()
        .from_file("greeting.yaml")
        .with_chat_client(client)        # the model of the document's agents
        .with_tool(get_weather)          # for InvokeFunctionTool
        .build()
    )
    result = await workflow.run("Ada")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from raf.core.chat_client import ChatClient
from raf.core.function_tool import tool as function_tool
from raf.core.tools import as_tool, is_tool
from raf.decl.documents.loader import DocumentProblems
from raf.decl.documents.source import Document
from raf.decl.workflow.graph import build_graph_workflow
from raf.decl.workflow.loader import (
    LoadedWorkflow,
    load_workflow,
    load_workflow_dict,
    load_workflow_file,
)
from raf.decl.workflow.node import build_declarative_workflow
from raf.decl.workflow.program import WorkflowDefinitionError
from raf.decl.workflow.runtime import (
    HttpRequestHandler,
    Limits,
    McpServerLike,
    Services,
)
from raf.stores.checkpoints import CheckpointStore
from raf.workflow.workflow import Workflow


class DeclWorkflowBuilder:
    """Workflow documents to workflows; `with_*` supplies what the document names."""

    def __init__(self) -> None:
        self._loaded: LoadedWorkflow | None = None
        self._agents: dict[str, Any] = {}
        self._tools: dict[str, Any] = {}
        self._functions: dict[str, Callable[..., Any]] = {}
        self._mcp: dict[str, McpServerLike] = {}
        self._client: ChatClient | None = None
        self._store: CheckpointStore | None = None
        self._limits: Limits | None = None
        self._http_allow_hosts: tuple[str, ...] = ()
        self._http_handler: HttpRequestHandler | None = None
        self._code: Any = None

    # -- sources ---------------------------------------------------------------------------

    def from_file(self, path: str | Path) -> DeclWorkflowBuilder:
        self._loaded = load_workflow_file(path)
        return self

    def from_yaml_str(
        self, text: str, *, base_dir: str | Path | None = None
    ) -> DeclWorkflowBuilder:
        self._loaded = load_workflow(
            text, fmt="yaml", base_dir=Path(base_dir) if base_dir is not None else None
        )
        return self

    def from_json_str(
        self, text: str, *, base_dir: str | Path | None = None
    ) -> DeclWorkflowBuilder:
        self._loaded = load_workflow(
            text, fmt="json", base_dir=Path(base_dir) if base_dir is not None else None
        )
        return self

    def from_loaded(self, loaded: LoadedWorkflow) -> DeclWorkflowBuilder:
        """A document already checked (by `load_workflow_file` or `raf.decl.check_file`)."""
        self._loaded = loaded
        return self

    def from_dict(self, data: Mapping[str, Any]) -> DeclWorkflowBuilder:
        self._loaded = load_workflow_dict(data)
        return self

    @property
    def loaded(self) -> LoadedWorkflow:
        if self._loaded is None:
            raise ValueError("give a document first: from_file, from_yaml_str or from_dict")
        return self._loaded

    # -- what the document names -----------------------------------------------------------

    def with_agent(self, name: str, agent: Any) -> DeclWorkflowBuilder:
        """An agent for InvokeAgent (or a graph node) named `name`; replaces the
        document's agent of that name."""
        self._agents[name] = agent
        return self

    def with_tool(self, tool: Any) -> DeclWorkflowBuilder:
        """A tool (or a plain function, made a tool) for InvokeFunctionTool."""
        made = as_tool(tool) if is_tool(tool) or hasattr(tool, "invoke") else function_tool(tool)
        self._tools[made.name] = made
        return self

    def with_function(
        self, fn: Callable[..., Any], *, name: str | None = None
    ) -> DeclWorkflowBuilder:
        """A function node of the graph JSON (it gets the incoming text)."""
        self._functions[name or fn.__name__] = fn
        return self

    def with_mcp_server(self, name: str, server: McpServerLike) -> DeclWorkflowBuilder:
        """An MCP server (an `McpClient`) for InvokeMcpTool's `server: name`."""
        self._mcp[name] = server
        return self

    def with_chat_client(self, client: ChatClient | str) -> DeclWorkflowBuilder:
        """The model of every agent the document declares; a model string
        (`"openai:gpt-4o-mini"`) resolves now, as `resolve_model` does."""
        from raf.clients.models import as_chat_client

        self._client = as_chat_client(client, where="with_chat_client()")
        return self

    def with_checkpoint_store(self, store: CheckpointStore) -> DeclWorkflowBuilder:
        self._store = store
        return self

    def with_limits(self, limits: Limits) -> DeclWorkflowBuilder:
        """Caps on actions run, wall-clock seconds and items per Foreach; they replace
        the document's `maxTurns` and `maxSeconds`."""
        self._limits = limits
        return self

    def with_http_allow_hosts(self, hosts: Sequence[str]) -> DeclWorkflowBuilder:
        """Hosts HttpRequestAction may reach at any address (loopback, private) even when
        its URL is computed; other computed URLs reach only public addresses."""
        self._http_allow_hosts = tuple(hosts)
        return self

    def with_http_handler(self, handler: HttpRequestHandler) -> DeclWorkflowBuilder:
        """Sends every HttpRequestAction's request: an async callable taking an
        `HttpRequest` (method, url, headers, body, timeout) and returning an `HttpReply`
        (status, headers, body). raf then fetches nothing itself, and its outbound guard
        and `with_http_allow_hosts` do not apply: the handler decides what it reaches."""
        self._http_handler = handler
        return self

    def with_code_interpreter(self, interpreter: Any) -> DeclWorkflowBuilder:
        """The sandbox ExecuteCode uses (a `CodeInterpreter`)."""
        self._code = interpreter
        return self

    # -- building --------------------------------------------------------------------------

    def _build_agents(self) -> dict[str, Any]:
        from raf.decl.agent.builder import DeclAgentBuilder

        agents: dict[str, Any] = {}
        for name, loaded in self.loaded.agents.items():
            if name in self._agents:
                continue
            builder = DeclAgentBuilder().from_loaded(loaded)
            if self._client is not None:
                builder.with_chat_client(self._client)
            agents[name] = builder.build()
        agents.update(self._agents)
        return agents

    def build(self) -> Workflow:
        """The workflow; a name nobody provides is a located `ValidationProblems`."""
        loaded = self.loaded
        doc = loaded.doc
        agents = self._build_agents()
        try:
            if loaded.form == "graph":
                return build_graph_workflow(
                    doc.data,
                    agents=agents,
                    functions=self._functions,
                    name=loaded.name,
                    checkpoint_store=self._store,
                )
            mcp: dict[str, McpServerLike] = {}
            if loaded.mcp_servers:
                from raf.tools.mcp.client import McpClient

                mcp = {name: McpClient(cfg) for name, cfg in loaded.mcp_servers.items()}
            mcp.update(self._mcp)
            services = Services(
                agents=agents,
                tools=dict(self._tools),
                mcp_servers=mcp,
                code=self._code,
                sandbox=loaded.sandbox,
                http_allow_hosts=self._http_allow_hosts,
                http_handler=self._http_handler,
            )
            return build_declarative_workflow(
                loaded.actions,
                name=loaded.name,
                description=loaded.description,
                services=services,
                limits=self._limits or _limits_of(loaded),
                checkpoint_store=self._store,
                path=loaded.actions_path,
                inputs=loaded.inputs,
                locate=_locator(doc),
            )
        except WorkflowDefinitionError as exc:
            problems = [doc.problem(i.path, i.message, key=i.key) for i in exc.issues]
            raise DocumentProblems(problems, loaded.warnings) from None


def _limits_of(loaded: LoadedWorkflow) -> Limits | None:
    """The document's own `maxTurns` and `maxSeconds` as the run's action and time caps."""
    given: dict[str, Any] = {}
    if loaded.max_turns:
        given["max_steps"] = loaded.max_turns
    if loaded.max_seconds:
        given["max_seconds"] = loaded.max_seconds
    return Limits(**given) if given else None


def _locator(doc: Document) -> Callable[[tuple[str | int, ...]], str]:
    """`file:line:column` of a key path of the document (empty without a file)."""

    def locate(path: tuple[str | int, ...]) -> str:
        if not doc.file:
            return ""
        line, column = doc.locate(path)
        return f"{doc.file}:{line}:{column}" if line else doc.file

    return locate
