"""DeclAgentBuilder: an agent from a YAML/JSON/TOML document, linked by raf's linkage rules.

Provider order: history (always, first) → tool-sets that need discovery (MCP tools,
OpenAPI documents, in tool order) → declared contexts in declaration order → providers
added with `with_context` → compression (always last). Declared tools that are scope
tools go to the first workspace context when there is one; tools added with `with_tool`,
sub-agents and every other tool register on the agent directly. `build()` is sync:
anything that needs async set-up (MCP discovery, OpenAPI loading) happens at the first
run, inside a provider (docs/decisions/0502).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider
from raf.core.errors import ConfigurationError, Problem
from raf.core.middleware import middleware_kind
from raf.core.sessions import SessionStore
from raf.core.tools import Tool
from raf.decl.agent.factories import ToolFactory, ToolFactoryContext
from raf.decl.agent.model_client import Connection
from raf.decl.documents.loader import LoadedAgent, load, load_dict, load_file, read_document
from raf.decl.documents.schema import AgentDecl

if TYPE_CHECKING:
    from raf.agent.agent import Agent
    from raf.core.agent_like import AgentLike

__all__ = ["DeclAgentBuilder", "ToolFactory", "ToolFactoryContext"]

log = logging.getLogger("raf.decl")


class DeclAgentBuilder:
    """`DeclAgentBuilder().from_yaml_file("agent.yaml").build()`."""

    def __init__(self) -> None:
        self._loaded: LoadedAgent | None = None
        self._code_tools: list[tuple[str, ToolFactory | Tool]] = []
        self._factories: dict[str, ToolFactory] = {}
        self._providers: list[ContextProvider] = []
        self._client: ChatClient | None = None
        self._connections: dict[str, Connection] = {}
        self._store: SessionStore | None = None
        self._environ: Mapping[str, str] | None = None
        self._middleware: dict[str, Any] = {}
        self._guardrails: dict[str, Any] = {}

    # -- sources ----------------------------------------------------------------------

    def with_environment(self, environ: Mapping[str, str]) -> DeclAgentBuilder:
        """Read `$VAR` references from `environ` instead of `os.environ` (call first)."""
        self._environ = environ
        return self

    def from_yaml_file(self, path: str | Path) -> DeclAgentBuilder:
        return self._loaded_now(load_file(path, environ=self._environ))

    def from_json_file(self, path: str | Path) -> DeclAgentBuilder:
        text, _ = read_document(path)
        return self._loaded_now(
            load(
                text,
                fmt="json",
                file=str(path),
                base_dir=Path(path).parent.resolve(),
                environ=self._environ,
            )
        )

    def from_toml_file(self, path: str | Path) -> DeclAgentBuilder:
        text, _ = read_document(path)
        return self._loaded_now(
            load(
                text,
                fmt="toml",
                file=str(path),
                base_dir=Path(path).parent.resolve(),
                environ=self._environ,
            )
        )

    def from_file(self, path: str | Path) -> DeclAgentBuilder:
        """YAML, JSON or TOML, chosen by the file's suffix."""
        return self.from_yaml_file(path)

    def from_yaml_str(self, text: str, *, base_dir: str | Path | None = None) -> DeclAgentBuilder:
        return self._loaded_now(
            load(
                text,
                fmt="yaml",
                file="<string>",
                base_dir=Path(base_dir or Path.cwd()),
                environ=self._environ,
            )
        )

    def from_dict(
        self, data: Mapping[str, Any], *, base_dir: str | Path | None = None
    ) -> DeclAgentBuilder:
        loaded = load_dict(data, base_dir=Path(base_dir or Path.cwd()), environ=self._environ)
        return self._loaded_now(loaded)

    def from_loaded(self, loaded: LoadedAgent) -> DeclAgentBuilder:
        self._loaded = loaded
        return self

    # -- code-side bindings -----------------------------------------------------------

    def with_tool(self, name: str, factory: ToolFactory | Tool) -> DeclAgentBuilder:
        """Add a tool in code; it is never routed to a workspace."""
        self._code_tools.append((name, factory))
        return self

    def register_factory(self, kind_or_name: str, factory: ToolFactory) -> DeclAgentBuilder:
        """Bind `function`/`custom` declarations by name, or replace how a kind is built."""
        self._factories[kind_or_name] = factory
        return self

    def with_middleware(self, name: str, middleware: Any) -> DeclAgentBuilder:
        """Make a middleware available to this document's `middleware:` list by name
        (before the names registered for every document with `raf.register_middleware`)."""
        middleware_kind(middleware)
        self._middleware[name] = middleware
        return self

    def with_guardrail(self, name: str, guardrail: Any) -> DeclAgentBuilder:
        """Make a guardrail available to this document's `guardrails:` lists by name
        (before those registered for every document with `raf.register_guardrail`)."""
        from raf.agent.guardrails import TextGuardrail, ToolGuardrail

        if not isinstance(guardrail, ToolGuardrail):
            TextGuardrail.of(guardrail, name)
        self._guardrails[name] = guardrail
        return self

    def with_context(self, provider: ContextProvider) -> DeclAgentBuilder:
        """Add a provider in code: after the declared ones, before compression."""
        self._providers.append(provider)
        return self

    def with_chat_client(self, client: ChatClient | str) -> DeclAgentBuilder:
        """Use this client instead of the document's `model` (sub-agents inherit it); a
        model string (`"openai:gpt-4o-mini"`) resolves now, as `resolve_model` does."""
        from raf.clients.models import as_chat_client

        self._client = as_chat_client(client, where="with_chat_client()")
        return self

    def with_connection(
        self,
        name: str,
        *,
        client: ChatClient | None = None,
        endpoint: str | None = None,
        api_key: str | None = None,
        provider: str | None = None,
        **options: Any,
    ) -> DeclAgentBuilder:
        """Register a connection a document names with `connection: {kind: reference, name}`."""
        self._connections[name] = Connection(
            name=name,
            client=client,
            endpoint=endpoint,
            api_key=api_key,
            provider=provider,
            options=options,
        )
        return self

    def with_session_store(self, store: SessionStore) -> DeclAgentBuilder:
        self._store = store
        return self

    @property
    def declaration(self) -> AgentDecl:
        return self._require().decl

    @property
    def warnings(self) -> list[Problem]:
        """Things that are allowed but probably wrong (an unknown workspace policy)."""
        return list(self._require().warnings)

    def _loaded_now(self, loaded: LoadedAgent) -> DeclAgentBuilder:
        for warning in loaded.warnings:
            log.warning("%s", warning)
        self._loaded = loaded
        return self

    def _require(self) -> LoadedAgent:
        if self._loaded is None:
            raise ConfigurationError(
                "no document: call from_yaml_file(), from_yaml_str() or from_dict() first"
            )
        return self._loaded

    # -- build ------------------------------------------------------------------------

    def build(self) -> Any:
        """The agent; every problem found while linking is reported at once.

        A prompt document builds an `Agent`; a document whose `metadata.orchestration`
        joins its sub-agents builds an `OrchestrationAgent` (`AgentLike`, not an `Agent`).
        Which one is known only once the document is read, so the result is typed `Any`
        (narrow it with `isinstance` where it matters)."""
        from raf.decl.agent.link_base import Bindings
        from raf.decl.agent.linker import Linker

        bindings = Bindings(
            code_tools=self._code_tools,
            factories=self._factories,
            providers=self._providers,
            client=self._client,
            connections=self._connections,
            store=self._store,
            environ=self._environ,
            middleware=self._middleware,
            guardrails=self._guardrails,
        )
        return Linker(bindings, self._require(), code_tools=True).link()

    def build_agent(self) -> Agent[Any]:
        """`build()` typed as an `Agent`: for a prompt document. A document that builds an
        orchestration is refused with a `ConfigurationError` saying so (use
        `build_agent_like()` for either)."""
        from raf.agent.agent import Agent

        built = self.build()
        if not isinstance(built, Agent):
            raise ConfigurationError(
                f"this document builds {type(built).__name__} {getattr(built, 'name', '')!r}, "
                "not an Agent (its metadata.orchestration joins its sub-agents); call "
                "build_agent_like() or build() for it"
            )
        return built

    def build_agent_like(self) -> AgentLike:
        """`build()` typed as `AgentLike`, the shape both a prompt document's `Agent` and an
        orchestration share (run, run_stream, name, description)."""
        built: AgentLike = self.build()
        return built
