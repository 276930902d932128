"""What `raf chat` and `raf run` share: the data folder, the session store, building the
agent from a document or the default assistant, and the scripted test model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raf.agent.agent import Agent
from raf.core.agent_like import (
    AgentLike,
    EquippedAgent,
    close_agent_like,
    own_providers,
    own_tools,
)
from raf.core.chat_client import ChatClient
from raf.core.errors import ConfigurationError
from raf.core.messages import MessageInput
from raf.core.options import AgentRunOptions
from raf.core.private_files import private_dir
from raf.core.responses import AgentResponseUpdate, UpdateKind
from raf.core.sessions import AgentSession, SessionStore
from raf.orchestrations.agent import OrchestrationAgent
from raf.testing.script_file import SCRIPTED_PREFIX, ScriptFileClient
from raf.workflow.as_agent import WorkflowAgent
from raf.workflow.workflow import Workflow

DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant in a terminal. Answer clearly and briefly; use Markdown "
    "only where it helps."
)


def data_dir() -> Path:
    """Where raf keeps its data: $RAF_DATA_DIR, else $XDG_DATA_HOME/raf, else
    ~/.local/share/raf."""
    explicit = os.environ.get("RAF_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "raf"


def session_store() -> SessionStore:
    """The store $RAF_SESSION_STORE names (a URL, a file or a folder), else SQLite in the
    data folder."""
    named = os.environ.get("RAF_SESSION_STORE")
    if named:
        from raf.stores.urls import open_session_store

        return open_session_store(named)
    from raf.stores.sessions import SqliteSessionStore

    return SqliteSessionStore(private_dir(data_dir()) / "sessions.sqlite")


CONFLICT_RETRIES_ENV = "RAF_CONFLICT_RETRIES"
CONFLICT_HINT = (
    "to re-apply your turn on the stored session instead, pass --conflict-retries N "
    f"(or set {CONFLICT_RETRIES_ENV})"
)


def add_conflict_retries(parser: Any) -> None:
    """The `--conflict-retries N` option `raf run` and `raf chat` share."""
    parser.add_argument(
        "--conflict-retries",
        type=int,
        default=None,
        metavar="N",
        help="when another process saved the session during a turn, re-apply the turn on "
        f"the stored session up to N times instead of failing (default ${CONFLICT_RETRIES_ENV}"
        ", else 0)",
    )


def conflict_retries(given: int | None) -> int:
    """`--conflict-retries`, else $RAF_CONFLICT_RETRIES, else 0; a bad value says which."""
    if given is not None:
        if given < 0:
            raise ConfigurationError(f"--conflict-retries must be 0 or more, got {given}")
        return given
    raw = os.environ.get(CONFLICT_RETRIES_ENV, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigurationError(
            f"${CONFLICT_RETRIES_ENV} must be a whole number 0 or more, got {raw!r}"
        )
    return value


def resolve_client(spec: str | None) -> ChatClient:
    """`scripted:FILE` (a testing aid), else `raf.clients.models.resolve_model`."""
    spec = spec or os.environ.get("RAF_MODEL") or None
    if spec and spec.startswith(SCRIPTED_PREFIX):
        return ScriptFileClient(Path(spec[len(SCRIPTED_PREFIX) :]))
    from raf.clients.models import resolve_model

    client: ChatClient = resolve_model(spec) if spec else resolve_model()
    return client


class StoredWorkflowAgent(WorkflowAgent):
    """A workflow document behind the agent interface for the programs: its sessions are
    stored like an agent's, its checkpoints in the data folder, so a paused workflow
    resumes in a later `raf run --session` or `raf chat --resume`."""

    workflow: Workflow

    def __init__(self, workflow: Workflow, store: SessionStore | None, client: Any) -> None:
        super().__init__(workflow)
        self.store = store
        self.leaf_client = client
        self.tools: list[Any] = []
        self.context_providers: list[Any] = []

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        session = session if session is not None else self.create_session()
        async for update in super().run_stream(messages, session, options):
            if update.kind is UpdateKind.FINISHED and self.store is not None:
                await self.store.save(session)
            yield update


def text_requests(session: AgentSession) -> set[str]:
    """The pending requests of a paused workflow that want text (a question) rather than
    yes or no."""
    from raf.workflow.as_agent import SESSION_KEY

    paused = session.metadata.get(SESSION_KEY) or {}
    requests = paused.get("requests") or {}
    return {rid for rid, info in requests.items() if info.get("response_type") != "bool"}


def build_workflow_agent(
    checked: CheckedFile, model: str | None, store: SessionStore | None, tools: Mapping[str, Any]
) -> StoredWorkflowAgent:
    """A checked workflow document as an agent; its agents use `model` when given, its
    function tools and function nodes the bound `tools`."""
    from raf.decl.bind_document import bind_workflow_tools
    from raf.decl.workflow import DeclWorkflowBuilder
    from raf.workflow import SqliteCheckpointStore

    assert checked.workflow is not None
    builder = DeclWorkflowBuilder().from_loaded(checked.workflow)
    client = None
    if model or os.environ.get("RAF_MODEL"):
        client = resolve_client(model)
        builder.with_chat_client(client)
    bind_workflow_tools(builder, tools)
    folder = private_dir(data_dir())
    builder.with_checkpoint_store(SqliteCheckpointStore(folder / "checkpoints.sqlite"))
    return StoredWorkflowAgent(builder.build(), store, client)


ProgramAgent = Agent | OrchestrationAgent | StoredWorkflowAgent
"""What the programs run: an agent, a document's sub-agents' orchestration, or a workflow."""


def build_agent(
    file: str | None,
    model: str | None,
    store: SessionStore | None,
    tools: Sequence[str] = (),
) -> ProgramAgent:
    """The agent of a document (its own model unless `model` is given), a workflow
    document as an agent, or the default assistant on the default model. A document is
    checked as `raf validate` checks it (the same check, refusing what it warns about:
    unset variables, unbound tools); `tools` are `--tools` specs binding its function
    tools, before installed `raf.tools` entry points."""
    if file:
        from raf.decl.agent.tool_bindings import bindings_for, entry_point_names, load_specs
        from raf.decl.check_file import check_file

        given = load_specs(tools)
        replaced = bool(model or os.environ.get("RAF_MODEL"))
        checked = check_file(
            file,
            for_run=True,
            model_given=replaced,
            bound_tools=set(given) | entry_point_names(),
        )
        checked.raise_problems()
        bound = bindings_for(checked.tool_names, given)
        if checked.workflow is not None:
            return build_workflow_agent(checked, model, store, bound)
        if checked.agent is None:
            raise ConfigurationError(
                f"{file} is a {checked.kind or 'document'} raf cannot run; give an agent or "
                "a workflow document"
            )
        from raf.decl.agent.builder import DeclAgentBuilder
        from raf.decl.bind_document import bind_agent_tools

        builder = DeclAgentBuilder().from_loaded(checked.agent)
        if replaced:
            builder.with_chat_client(resolve_client(model))
        bind_agent_tools(builder, bound)
        if store is not None:
            builder.with_session_store(store)
        built: Agent | OrchestrationAgent = builder.build()
        return built
    from raf.agent.builder import AgentBuilder

    agent = (
        AgentBuilder("assistant")
        .with_description("raf's default terminal assistant")
        .with_instructions(DEFAULT_INSTRUCTIONS)
        .with_chat_client(resolve_client(model))
    )
    if store is not None:
        agent.with_session_store(store)
    return agent.build()


async def close_agent(agent: AgentLike, timeout_s: float = 30.0) -> None:
    """Let providers finish background work (memory consolidation) and close connections
    (MCP servers), sub-agents' and orchestration members' too; one failing does not stop
    the others."""
    seen: set[int] = set()
    if isinstance(agent, StoredWorkflowAgent):
        from raf.decl.workflow import close_services

        await close_services(agent.workflow)
        return

    async def close(current: AgentLike) -> None:
        if id(current) in seen:
            return
        seen.add(id(current))
        if not isinstance(current, EquippedAgent | OrchestrationAgent):
            await close_agent_like(current)  # the user's own kind: its own `aclose`
            return
        for tool in own_tools(current):
            inner = getattr(tool, "agent", None)
            if isinstance(inner, AgentLike):
                await close(inner)
        if isinstance(current, OrchestrationAgent):
            for member in current.orchestration.agents():
                if isinstance(member, AgentLike):
                    await close(member)
        for provider in own_providers(current):
            aclose = getattr(provider, "aclose", None)
            if aclose is None:
                continue
            try:
                await asyncio.wait_for(aclose(), timeout_s)
            except Exception as exc:  # closing is best effort; say what failed
                from raf.cli.terminal_text import terminal_safe

                message = f"raf: closing {provider.name!r} failed: {exc}"
                print(terminal_safe(message), file=sys.stderr)

    await close(agent)


def short(value: Any, limit: int = 80) -> str:
    """One line, at most `limit` characters, saying how much was left out."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} chars)"


if TYPE_CHECKING:
    from raf.decl.check_file import CheckedFile

    _STORED_WORKFLOW_AGENT_IS_AGENT_LIKE: type[EquippedAgent] = StoredWorkflowAgent
    """Checked by mypy: the programs' workflow agent has every agent's shape (and lists
    its, empty, tools and providers like an agent with a model)."""
