"""One build of a declarative agent: tools resolved and routed, providers ordered, sub-agents
built, every problem collected."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider
from raf.core.errors import (
    ConfigurationError,
    MissingExtraError,
    Problem,
    RafError,
    ValidationProblems,
)
from raf.core.options import ChatOptions
from raf.decl.agent import contexts as ctx
from raf.decl.agent.link_base import Bindings

if TYPE_CHECKING:
    from raf.decl.agent.link_base import DeclaredAgent
from raf.decl.agent.link_contexts import compressed_last, linked_contexts, share_skills
from raf.decl.agent.link_prompt import apply_template, plain_instructions
from raf.decl.agent.link_settings import apply_run_settings
from raf.decl.agent.link_subagents import orchestrated, sub_agent_tools
from raf.decl.agent.link_tools import add_code_tools, declared_tools, is_scope_tool
from raf.decl.agent.model_client import chat_options, client_for, registered_connection
from raf.decl.documents.loaded import LoadedAgent
from raf.decl.documents.model_plan import model_name
from raf.decl.documents.schema import ModelDecl
from raf.decl.documents.source import KeyPath

log = logging.getLogger("raf.decl")


class Linker:
    """One build: collects problems, links tools and providers, builds sub-agents."""

    def __init__(
        self,
        bindings: Bindings,
        loaded: LoadedAgent,
        *,
        code_tools: bool,
        chain: tuple[str, ...] = (),
        parent_client: Callable[[], ChatClient] | None = None,
    ) -> None:
        self.bindings = bindings
        self.loaded = loaded
        self.decl = loaded.decl
        self.doc = loaded.doc
        self.code_tools = code_tools
        self.chain = chain
        self.parent_client = parent_client
        self.problems: list[Problem] = []
        self._client: ChatClient | None = None
        self._first_missing: MissingExtraError | None = None

    def fail(self, path: KeyPath, exc: BaseException | str) -> None:
        self._note_missing(exc)
        message = exc if isinstance(exc, str) else str(exc)
        if isinstance(exc, ValidationProblems):
            self.problems.extend(exc.problems)
            return
        self.problems.append(self.doc.problem(path, message))

    def fail_in_code(self, message: str, exc: BaseException) -> None:
        """A problem of something given in code, not in the document: it has no location."""
        self._note_missing(exc)
        self.problems.append(Problem(message=message))

    def raise_problems(self) -> None:
        """Raises `ValidationProblems` with every problem collected so far, if any."""
        if self.problems:
            raise ValidationProblems(self.problems) from self._first_missing

    def _note_missing(self, exc: BaseException | str) -> None:
        if isinstance(exc, MissingExtraError) and self._first_missing is None:
            self._first_missing = exc

    def client(self) -> ChatClient:
        """The document's model: a referenced connection's client, else the client given
        with `with_chat_client`, else `RAF_MODEL`, else the parent's (sub-agents without a
        model), else the model block resolved."""
        if self._client is None:
            model = self.decl.model
            connection = model.connection if isinstance(model, ModelDecl) else None
            registered = (
                registered_connection(self.bindings.connections, connection.name)
                if connection is not None and connection.kind == "reference"
                else None
            )
            if registered is not None and registered.client is not None:
                self._client = registered.client
            elif self.bindings.client is not None:
                self._client = self.bindings.client
            elif self._env_model():
                from raf.clients.models import resolve_model

                self._client = resolve_model(self._env_model())
            elif model is None and self.parent_client is not None:
                self._client = self.parent_client()
            else:
                self._client = client_for(model, self.bindings.connections, self.doc.base_dir)
        return self._client

    def _options(self, model: ModelDecl) -> ChatOptions:
        """The model block's options; the embedded model is never asked for more output
        than it can write (its context is small)."""
        # A client given in code or by RAF_MODEL replaces the document's model: its name
        # must not reach the new client (it would ask Anthropic for "gpt-4o-mini").
        replaced = self.bindings.client is not None or self._env_model() is not None
        options = chat_options(model.options, None if replaced else model_name(model.id))
        try:
            client = self.client()
        except RafError:  # reported when the client is attached
            return options
        if options.max_tokens is not None and ctx.is_embedded(client):
            limit = _output_limit(client)
            if options.max_tokens > limit:
                message = (
                    f"maxTokens {options.max_tokens} is more than the embedded model can "
                    f"write; {limit} is used"
                )
                log.warning("%s", self.doc.problem(("model", "options", "maxTokens"), message))
                options.max_tokens = limit
        return options

    def _env_model(self) -> str | None:
        """`RAF_MODEL`, which replaces the document's model (as in every raf command)."""
        import os

        from raf.clients.models import ENV_VAR

        environ = self.bindings.environ if self.bindings.environ is not None else os.environ
        return environ.get(ENV_VAR, "").strip() or None

    def child(self, loaded: LoadedAgent) -> Linker:
        """The linker of one of this document's sub-agents (which inherit its model)."""
        return Linker(
            self.bindings,
            loaded,
            code_tools=False,
            chain=(*self.chain, self.decl.name),
            parent_client=self.client,
        )

    def link(self) -> DeclaredAgent:
        from raf.agent.builder import AgentBuilder

        decl = self.decl
        agent = AgentBuilder(decl.name).with_description(decl.description)
        instructions = plain_instructions(decl)
        if instructions:
            agent.with_instructions(instructions)
        apply_template(self, agent)
        agent.with_max_tool_rounds(decl.max_tool_rounds)
        apply_run_settings(self, agent)
        if isinstance(decl.model, ModelDecl):
            agent.with_options(self._options(decl.model))
        if self.bindings.store is not None and not self.chain:
            agent.with_session_store(self.bindings.store)

        declared, toolsets = declared_tools(self)
        contexts = linked_contexts(self)
        providers: list[ContextProvider] = [*toolsets, *contexts.providers]
        share_skills(providers)
        # declared scope tools go to the workspace, the rest register normally
        for path, tool in declared:
            if contexts.workspace is not None and is_scope_tool(tool):
                try:
                    contexts.workspace.add_tool(tool)
                except RafError as exc:
                    self.fail(path, exc)
            else:
                agent.with_tool(tool)
        orchestration = self.loaded.orchestration
        if orchestration is None:
            for sub in sub_agent_tools(self):
                agent.with_tool(sub)
        if self.code_tools:
            add_code_tools(self, agent)
            providers.extend(self.bindings.providers)
        for provider in compressed_last(self, providers, contexts.compression):
            agent.with_context_provider(provider)
        if orchestration is not None:
            return orchestrated(self, agent, orchestration)
        try:
            agent.with_chat_client(self.client())
        except RafError as exc:
            self.fail(("model",), exc)
        self.raise_problems()
        output = decl.output_json_schema()
        if output is not None:
            try:
                agent.with_output_type(output)
                return agent.build()
            except ConfigurationError as exc:
                problem = self.doc.problem(("outputSchema",), exc.message)
                raise ValidationProblems([problem]) from exc
        try:
            return agent.build()
        except RafError as exc:
            raise ValidationProblems([self.doc.problem(("tools",), str(exc))]) from exc


def _output_limit(client: Any) -> int:
    """The most the embedded model can write in one answer: its table entry, and never
    more than half its context."""
    from raf.clients.models import model_info

    half = int(getattr(client, "n_ctx", 4096)) // 2
    path = getattr(client, "path", None)
    info = model_info(f"local:{path}" if path else "local")
    return min(info.max_output_tokens, half) if info.known else half
