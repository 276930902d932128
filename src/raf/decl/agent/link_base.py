"""What one link step of a declarative agent works with: the `Bindings` code gave the
builder (tools, factories, connections, middleware, guardrails, a store) and the
`LinkSite` protocol the linker offers its steps (the document, problem collection, the
model client, sub-agent linkers). The linker and its steps both depend on this module,
never on each other's internals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider
from raf.core.errors import Problem
from raf.core.sessions import SessionStore
from raf.core.tools import Tool
from raf.decl.agent.factories import ToolFactory
from raf.decl.agent.model_client import Connection
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.schema import AgentDecl
from raf.decl.documents.source import Document, KeyPath

if TYPE_CHECKING:
    from raf.agent.agent import Agent
    from raf.orchestrations.agent import OrchestrationAgent

    DeclaredAgent = Agent | OrchestrationAgent
    """What a document builds: an agent, or its sub-agents' orchestration run as one."""


@dataclass(slots=True)
class Bindings:
    """What code binds to a document before it is built."""

    code_tools: list[tuple[str, ToolFactory | Tool]] = field(default_factory=list)
    factories: dict[str, ToolFactory] = field(default_factory=dict)
    providers: list[ContextProvider] = field(default_factory=list)
    client: ChatClient | None = None
    connections: dict[str, Connection] = field(default_factory=dict)
    store: SessionStore | None = None
    environ: Mapping[str, str] | None = None
    middleware: dict[str, Any] = field(default_factory=dict)
    guardrails: dict[str, Any] = field(default_factory=dict)


class LinkedAgent(Protocol):
    def link(self) -> DeclaredAgent: ...


class LinkSite(Protocol):
    """The linker, as its steps see it."""

    bindings: Bindings
    loaded: LoadedAgent
    decl: AgentDecl
    doc: Document
    chain: tuple[str, ...]
    problems: list[Problem]

    def fail(self, path: KeyPath, exc: BaseException | str) -> None: ...

    def fail_in_code(self, message: str, exc: BaseException) -> None: ...

    def raise_problems(self) -> None: ...

    def client(self) -> ChatClient: ...

    def child(self, loaded: LoadedAgent) -> LinkedAgent: ...
