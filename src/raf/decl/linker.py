"""One build of a declarative agent: tools resolved and routed, providers ordered, sub-agents
built, every problem collected (seed 001, rules 0-7)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raf.agent.agent import Agent
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider
from raf.core.errors import (
    ConfigurationError,
    MissingExtraError,
    Problem,
    RafError,
    ValidationProblems,
)
from raf.core.middleware import find_middleware, registered_middleware
from raf.core.options import ChatOptions
from raf.core.tools import ApprovalRequiredTool, Tool
from raf.core.usage import UsageLimits
from raf.decl import contexts as ctx
from raf.decl.factories import ToolFactory, ToolFactoryContext, tools_from
from raf.decl.loader import LoadedAgent
from raf.decl.model_client import chat_options, client_for
from raf.decl.output_schema import as_json_schema
from raf.decl.problems import suggest
from raf.decl.schema import (
    BUILTIN_TOOLS,
    CompressionContextDecl,
    CustomToolDecl,
    DeclModel,
    FunctionToolDecl,
    GuardrailsDecl,
    KnowledgeContextDecl,
    LimitsDecl,
    McpContextDecl,
    McpToolDecl,
    MemoryContextDecl,
    ModelDecl,
    OpenApiToolDecl,
    SkillsContextDecl,
    SubAgentRefDecl,
    WikiContextDecl,
    WorkspaceContextDecl,
)
from raf.decl.source import Path_, format_path
from raf.decl.tool_decls import config_dict

if TYPE_CHECKING:
    from raf.agent.builder import AgentBuilder
    from raf.decl.builder import DeclAgentBuilder

log = logging.getLogger("raf.decl")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class Linker:
    """One build: collects problems, links tools and providers, builds sub-agents."""

    def __init__(
        self,
        builder: DeclAgentBuilder,
        loaded: LoadedAgent,
        *,
        code_tools: bool,
        chain: tuple[str, ...] = (),
        parent_client: Callable[[], ChatClient] | None = None,
    ) -> None:
        self.builder = builder
        self.loaded = loaded
        self.decl = loaded.decl
        self.doc = loaded.doc
        self.code_tools = code_tools
        self.chain = chain
        self.parent_client = parent_client
        self.problems: list[Problem] = []
        self._client: ChatClient | None = None
        self._first_missing: MissingExtraError | None = None

    def fail(self, path: Path_, exc: BaseException | str) -> None:
        if isinstance(exc, MissingExtraError) and self._first_missing is None:
            self._first_missing = exc
        message = exc if isinstance(exc, str) else str(exc)
        if isinstance(exc, ValidationProblems):
            self.problems.extend(exc.problems)
            return
        self.problems.append(self.doc.problem(path, message))

    def client(self) -> ChatClient:
        """The document's model: a referenced connection's client, else the client given
        with `with_chat_client`, else `RAF_MODEL`, else the parent's (sub-agents without a
        model), else the model block resolved."""
        if self._client is None:
            model = self.decl.model
            connection = model.connection if isinstance(model, ModelDecl) else None
            registered = (
                self.builder._connections.get(connection.name or "")
                if connection is not None and connection.kind == "reference"
                else None
            )
            if registered is not None and registered.client is not None:
                self._client = registered.client
            elif self.builder._client is not None:
                self._client = self.builder._client
            elif self._env_model():
                from raf.clients.models import resolve_model

                self._client = resolve_model(self._env_model())
            elif model is None and self.parent_client is not None:
                self._client = self.parent_client()
            else:
                self._client = client_for(model, self.builder._connections, self.doc.base_dir)
        return self._client

    def _options(self, model: ModelDecl) -> ChatOptions:
        """The model block's options; the embedded model is never asked for more output
        than it can write (its context is small)."""
        options = chat_options(model.options, model.id)
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

        environ = self.builder._environ if self.builder._environ is not None else os.environ
        return environ.get(ENV_VAR, "").strip() or None

    def link(self) -> Agent:
        from raf.agent.builder import AgentBuilder

        decl = self.decl
        agent = AgentBuilder(decl.name).with_description(decl.description)
        instructions = self._instructions()
        if instructions:
            agent.with_instructions(instructions)
        agent.with_max_tool_rounds(decl.max_tool_rounds)
        self._run_settings(agent)
        if isinstance(decl.model, ModelDecl):
            agent.with_options(self._options(decl.model))
        if self.builder._store is not None and not self.chain:
            agent.with_session_store(self.builder._store)

        declared, toolsets = self._declared_tools()
        workspace_index = next(
            (i for i, c in enumerate(decl.contexts) if isinstance(c, WorkspaceContextDecl)), None
        )
        providers: list[ContextProvider] = list(toolsets)
        workspace: Any = None
        compression: ContextProvider | None = None
        for index, context in enumerate(decl.contexts):
            path: Path_ = ("contexts", index)
            try:
                if isinstance(context, CompressionContextDecl):
                    compression = ctx.compression_provider(
                        context.config, context.name, self.builder._connections, self.client
                    )
                    continue
                if isinstance(context, MemoryContextDecl) and not context.config.enabled:
                    continue  # `enabled: false` turns the memory off
                provider = self._context(context)
            except (RafError, ImportError, OSError, TypeError, ValueError) as exc:
                self.fail(path, _as_error(exc, context.kind))
                continue
            if index == workspace_index:
                workspace = provider
            providers.append(provider)
        _share_skills(providers)
        # rule 1: declared scope tools go to the workspace, the rest register normally
        for path, tool in declared:
            if workspace is not None and _is_scope_tool(tool):
                try:
                    workspace.add_tool(tool)
                except RafError as exc:
                    self.fail(path, exc)
            else:
                agent.with_tool(tool)
        orchestration = self.loaded.orchestration
        if orchestration is None:
            for sub in self._sub_agents():
                agent.with_tool(sub)
        if self.code_tools:
            for name, factory in self.builder._code_tools:
                try:
                    for tool in tools_from(
                        factory, ToolFactoryContext(name=name, kind="code"), name
                    ):
                        agent.with_tool(tool)  # never routed (rule 1)
                except (RafError, ImportError) as exc:  # code, not the document: no location
                    if isinstance(exc, MissingExtraError) and self._first_missing is None:
                        self._first_missing = exc
                    self.problems.append(Problem(message=f"with_tool({name!r}): {exc}"))
            providers.extend(self.builder._providers)
        if decl.compression is not None:
            try:
                compression = ctx.compression_provider(
                    decl.compression,
                    decl.compression.name,
                    self.builder._connections,
                    self.client,
                )
            except (RafError, ImportError, TypeError, ValueError) as exc:
                self.fail(("compression",), _as_error(exc, "compression"))
        if compression is not None:  # always last; it compresses all the others injected
            watch = getattr(compression, "watch", None)
            if watch is not None:
                providers = [watch(p) for p in providers]
            providers.append(compression)
        for provider in providers:
            agent.with_context_provider(provider)
        if orchestration is not None:
            return self._orchestration(agent, orchestration)
        try:
            agent.with_chat_client(self.client())
        except RafError as exc:
            self.fail(("model",), exc)
        if self.problems:
            error = ValidationProblems(self.problems)
            raise error from self._first_missing
        try:
            built = agent.build()
        except RafError as exc:
            raise ValidationProblems([self.doc.problem(("tools",), str(exc))]) from exc
        # kept for the structured-output work; nothing enforces it yet
        built.output_schema = decl.output_json_schema()  # type: ignore[attr-defined]
        return built

    # -- pieces -----------------------------------------------------------------------

    def _run_settings(self, agent: AgentBuilder) -> None:
        """Middleware by registered name, usage limits and the tool timeout."""
        decl = self.decl
        for index, name in enumerate(decl.middleware):
            found = self.builder._middleware.get(name)
            if found is None:
                try:
                    found = find_middleware(name)
                except KeyError:
                    known = [*self.builder._middleware, *registered_middleware()]
                    near = suggest(name, known)
                    hint = f"; did you mean {near!r}?" if near else ""
                    listed = ", ".join(sorted(set(known))) or "none"
                    self.fail(
                        ("middleware", index),
                        f"no middleware is registered as {name!r}{hint} (registered: {listed}; "
                        "add one with raf.register_middleware(name, middleware) or "
                        "DeclAgentBuilder.with_middleware)",
                    )
                    continue
            agent.use_middleware(found)
        if decl.guardrails is not None:
            self._guardrails(agent, decl.guardrails)
        limits = decl.usage_limits
        if limits is not None:
            agent.with_usage_limits(
                _limits(limits), session=_limits(limits.session) if limits.session else None
            )
        if decl.tool_timeout is not None:
            agent.with_tool_timeout(decl.tool_timeout)

    def _guardrails(self, agent: AgentBuilder, decl: GuardrailsDecl) -> None:
        """Each name of `guardrails:` resolved and added to the agent, in its list's place."""
        from raf.agent.guardrails import ToolGuardrail, find_guardrail, registered_guardrails

        for kind in ("input", "output", "tools"):
            for index, name in enumerate(getattr(decl, kind)):
                where = ("guardrails", kind, index)
                found = self.builder._guardrails.get(name)
                if found is None:
                    try:
                        found = find_guardrail(name)
                    except KeyError:
                        known = [*self.builder._guardrails, *registered_guardrails()]
                        near = suggest(name, known)
                        hint = f"; did you mean {near!r}?" if near else ""
                        listed = ", ".join(sorted(set(known))) or "none"
                        self.fail(
                            where,
                            f"no guardrail is registered as {name!r}{hint} (registered: "
                            f"{listed}; add one with raf.register_guardrail(name, guardrail) "
                            "or DeclAgentBuilder.with_guardrail)",
                        )
                        continue
                is_tool = isinstance(found, ToolGuardrail)
                if is_tool != (kind == "tools"):
                    self.fail(
                        where,
                        f"guardrail {name!r} is a ToolGuardrail: list it under `tools`"
                        if is_tool
                        else f"guardrail {name!r} checks text, not tool calls: list it "
                        "under `input` or `output`",
                    )
                elif kind == "input":
                    agent.with_input_guardrail(found, name=name)
                elif kind == "output":
                    agent.with_output_guardrail(found, name=name)
                else:
                    agent.with_tool_guardrail(found)

    def _instructions(self) -> str | None:
        template = self.decl.template
        text = self.decl.instructions or (template.content if template is not None else None)
        if text and template is not None and template.format == "mustache":
            variables = template.variables
            text = _PLACEHOLDER.sub(lambda m: variables.get(m.group(1), m.group(0)), text)
        extra = self.decl.additional_instructions
        if extra:
            return f"{text}\n\n{extra}" if text else extra
        return text

    def _declared_tools(self) -> tuple[list[tuple[Path_, Tool]], list[ContextProvider]]:
        tools: list[tuple[Path_, Tool]] = []
        toolsets: list[ContextProvider] = []
        seen: dict[str, Path_] = {}
        for index, decl in enumerate(self.decl.tools):
            path: Path_ = ("tools", index)
            try:
                if isinstance(decl, McpToolDecl | OpenApiToolDecl) and not self._factory_for(
                    decl.name, decl.kind
                ):
                    toolsets.append(self._toolset(decl))
                    continue
                made = self._tool(decl)
            except (RafError, ImportError, OSError, TypeError, ValueError) as exc:
                self.fail((*path, "kind"), _as_error(exc, decl.kind))
                continue
            for tool in made:
                if tool.name in seen:
                    where = format_path(seen[tool.name])
                    self.fail(path, f"duplicate tool name {tool.name!r}: {where} already has it")
                    continue
                seen[tool.name] = path
                tools.append((path, tool))
        return tools, toolsets

    def _factory_for(self, name: str | None, kind: str) -> ToolFactory | None:
        factories = self.builder._factories
        if name and name in factories:
            return factories[name]
        return factories.get(kind)

    def _tool(self, decl: Any) -> list[Tool]:
        factory = self._factory_for(decl.name, decl.kind)
        raw = getattr(decl, "config", None)
        config = config_dict(raw) if isinstance(raw, DeclModel) else dict(raw or {})
        if factory is not None:
            context = ToolFactoryContext(
                name=decl.name or decl.kind,
                kind=decl.kind,
                description=decl.description,
                config=config,
                base_dir=self.doc.base_dir,
                parameters=_parameters(decl),
            )
            made = tools_from(factory, context, decl.name or decl.kind)
        elif isinstance(decl, FunctionToolDecl | CustomToolDecl):
            raise ConfigurationError(
                f"{decl.kind} tool {decl.name!r} is bound in code: call "
                f".register_factory({decl.name!r}, factory) before build()"
            )
        elif decl.kind in BUILTIN_TOOLS:
            from raf.decl.tool_resolver import ToolResolver

            made = list(
                ToolResolver().resolve(
                    decl.kind, decl.name, config or None, base_dir=self.doc.base_dir
                )
            )
        else:  # pragma: no cover - the schema admits no other kind
            raise ConfigurationError(f"unknown tool kind {decl.kind!r}")
        if getattr(decl, "approval_required", False):
            made = [ApprovalRequiredTool(t) for t in made]
        return made

    def _toolset(self, decl: McpToolDecl | OpenApiToolDecl) -> ContextProvider:
        if isinstance(decl, McpToolDecl):
            try:
                from raf.tools.mcp import McpServerConfig, McpToolset
            except ImportError as exc:
                raise MissingExtraError("an 'mcp' tool", "mcp", exc.name) from exc
            mcp = McpToolset(
                McpServerConfig(
                    **ctx._with_cwd(decl.config.to_config(decl.name), self.doc.base_dir)
                )
            )
            return ctx.ToolsetProvider(f"mcp:{decl.name}", mcp.load, mcp.aclose)
        try:
            from raf.tools.openapi import OpenApiToolset
        except ImportError as exc:
            raise MissingExtraError("an 'openapi' tool", "openapi", exc.name) from exc
        config = decl.config
        spec = config.spec_url
        if "://" not in spec:
            spec = str(self.doc.base_dir / spec)
        options: dict[str, Any] = {"name": decl.name, "timeout": config.timeout}
        if config.base_url:
            options["base_url"] = config.base_url
        auth = config.auth
        if auth is not None and auth.token is not None:
            token = auth.token.get_secret_value()
            if auth.kind == "bearer":
                options["bearer_token"] = token
            elif auth.kind == "header":
                options["headers"] = {auth.header or "X-API-Key": token}
        if config.operations is not None:
            options["operations"] = list(config.operations)
        if config.approval_mode == "always":
            options["approval_required"] = True
        toolset = OpenApiToolset(spec, **options)
        return ctx.ToolsetProvider(f"openapi:{decl.name}", toolset.load)

    def _context(self, context: Any) -> ContextProvider:
        base = self.doc.base_dir
        if isinstance(context, WorkspaceContextDecl):
            provider: ContextProvider = ctx.workspace_provider(context, base)
            return provider
        if isinstance(context, SkillsContextDecl):
            return ctx.skills_provider(context, base)
        if isinstance(context, MemoryContextDecl):
            return ctx.memory_provider(context, base, self.builder._connections)
        if isinstance(context, KnowledgeContextDecl):
            return ctx.knowledge_provider(context, base)
        if isinstance(context, WikiContextDecl):
            return ctx.wiki_provider(context, base)
        if isinstance(context, McpContextDecl):
            return ctx.mcp_provider(context, base)
        raise ConfigurationError(f"unknown context kind {context.kind!r}")  # pragma: no cover

    def _orchestration(self, agent: AgentBuilder, decl: Any) -> Agent:
        """The sub-agents as members of the declared orchestration, the document's own agent
        in the mode's leading role where it has one; the result is used as an agent."""
        from raf.decl.orchestration import ROOT, build_orchestration, needs_lead

        members: list[Agent] = []
        for sub, child in self._sub_agent_members():
            if isinstance(sub, SubAgentRefDecl) and sub.name:
                child.name = sub.name
            if isinstance(sub, SubAgentRefDecl) and sub.description:
                child.description = sub.description
            members.append(child)
        lead_needed = needs_lead(decl)
        if lead_needed:
            try:
                agent.with_chat_client(self.client())
            except RafError as exc:
                self.fail(("model",), exc)
        if self.problems:
            raise ValidationProblems(self.problems) from self._first_missing
        try:
            lead = agent.build() if lead_needed else None
            orchestration = build_orchestration(
                decl,
                name=self.decl.name,
                description=self.decl.description,
                members=members,
                lead=lead,
            )
        except RafError as exc:
            raise ValidationProblems([self.doc.problem(ROOT, str(exc))]) from exc
        store = self.builder._store if not self.chain else None
        return orchestration.as_agent(session_store=store)

    def _sub_agent_members(self) -> list[tuple[Any, Agent]]:
        """Each sub-agent declaration with the agent built from it."""
        built: list[tuple[Any, Agent]] = []
        for sub, loaded in zip(self.decl.sub_agents, self.loaded.sub_agents, strict=False):
            linker = Linker(
                self.builder,
                loaded,
                code_tools=False,
                chain=(*self.chain, self.decl.name),
                parent_client=self.client,
            )
            try:
                built.append((sub, linker.link()))
            except ValidationProblems as exc:
                self.problems.extend(exc.problems)
        return built

    def _sub_agents(self) -> list[Tool]:
        from raf.agent.agent_tool import AgentTool

        tools: list[Tool] = []
        for sub, child in self._sub_agent_members():
            if isinstance(sub, SubAgentRefDecl):
                tools.append(AgentTool(child, name=sub.name, description=sub.description))
            else:
                tools.append(AgentTool(child))
        return tools


def _limits(decl: LimitsDecl) -> UsageLimits | None:
    limits = UsageLimits(
        requests=decl.requests,
        tool_calls=decl.tool_calls,
        input_tokens=decl.input_tokens,
        output_tokens=decl.output_tokens,
        total_tokens=decl.total_tokens,
    )
    return None if limits.is_empty else limits


def _share_skills(providers: list[ContextProvider]) -> None:
    """A memory read as a skill joins the document's skills provider, if it has one."""
    from raf.context.memory import SuperBrainContextProvider
    from raf.context.skills import AgentSkillsProvider

    skills = next((p for p in providers if isinstance(p, AgentSkillsProvider)), None)
    if skills is None:
        return
    for provider in providers:
        if isinstance(provider, SuperBrainContextProvider) and provider.access == "skill":
            provider.host_skills(skills)


def _output_limit(client: Any) -> int:
    """The most the embedded model can write in one answer: its table entry, and never
    more than half its context."""
    from raf.clients.models import model_info

    half = int(getattr(client, "n_ctx", 4096)) // 2
    path = getattr(client, "path", None)
    info = model_info(f"local:{path}" if path else "local")
    return min(info.max_output_tokens, half) if info.known else half


def _parameters(decl: Any) -> dict[str, Any] | None:
    parameters = getattr(decl, "parameters", None)
    return as_json_schema(parameters) if isinstance(parameters, dict) else None


def _is_scope_tool(tool: Tool) -> bool:
    from raf.tools.workspace import is_scope_tool

    return is_scope_tool(tool)


def _as_error(exc: BaseException, kind: str) -> BaseException | str:
    if isinstance(exc, ImportError) and not isinstance(exc, MissingExtraError):
        return f"a '{kind}' declaration cannot be built: {exc}"
    if isinstance(exc, TypeError | ValueError | OSError):
        return f"a '{kind}' declaration cannot be built: {exc}"
    return exc
