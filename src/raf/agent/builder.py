"""AgentBuilder: the fluent way to assemble an agent, history provider always first."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Self

from raf.agent.agent import Agent, taken_tool
from raf.agent.guardrails import TextGuardrail, ToolCheck, ToolGuardrail
from raf.agent.history import InMemoryHistoryProvider
from raf.agent.hooks import InstructionsFunction, OutputValidator
from raf.agent.run import DEFAULT_MAX_REPEATED_CALLS, DEFAULT_MAX_TOOL_ROUNDS
from raf.agent.run.output import DEFAULT_OUTPUT_RETRIES
from raf.agent.run.repeats import check_max_repeated_calls
from raf.agent.template import PromptTemplate
from raf.core.chat_client import ChatClient, ChatClientDecorator
from raf.core.context import ContextProvider
from raf.core.errors import ConfigurationError
from raf.core.middleware import (
    NO_MIDDLEWARE,
    AgentMiddleware,
    ChatMiddleware,
    FunctionMiddleware,
    MiddlewareSet,
)
from raf.core.options import ChatOptions
from raf.core.run_context import DepsT
from raf.core.sessions import SessionStore
from raf.core.tools import Tool
from raf.core.usage import UsageLimits


class AgentBuilder(Generic[DepsT]):
    """`AgentBuilder().with_chat_client(c).with_tool(t).build()`.

    `deps_type=Deps` names the type of the dependencies each run passes
    (`agent.run(..., deps=Deps(...))`) to the tools that declare a `RunContext[Deps]`
    parameter; a type checker then checks both sides."""

    def __init__(self, name: str = "agent", *, deps_type: type[DepsT] | None = None) -> None:
        self._deps_type = deps_type
        self._name = name
        self._description = ""
        self._instructions: list[str | Callable[..., Any]] = []
        self._tools: list[Tool] = []
        self._providers: list[ContextProvider] = []
        self._client: ChatClient | None = None
        self._decorators: list[ChatClientDecorator] = []
        self._max_tool_rounds = DEFAULT_MAX_TOOL_ROUNDS
        self._max_repeated_calls: int | None = DEFAULT_MAX_REPEATED_CALLS
        self._options = ChatOptions()
        self._store: SessionStore | None = None
        self._middleware = NO_MIDDLEWARE
        self._outer_middleware = NO_MIDDLEWARE
        self._input_guardrails: list[TextGuardrail] = []
        self._output_guardrails: list[TextGuardrail] = []
        self._tool_guardrails: list[ToolGuardrail] = []
        self._usage_limits: UsageLimits | None = None
        self._session_usage_limits: UsageLimits | None = None
        self._tool_timeout: float | None = None
        self._history: ContextProvider | None = InMemoryHistoryProvider()
        self._output_type: Any = None
        self._template: PromptTemplate | None = None
        self._output_retries = DEFAULT_OUTPUT_RETRIES
        self._output_validators: list[Callable[..., Any]] = []

    def with_name(self, name: str) -> Self:
        self._name = name
        return self

    def with_description(self, description: str) -> Self:
        self._description = description
        return self

    def with_instructions(self, instructions: str | Callable[..., Any]) -> Self:
        """Add to the system prompt (several calls are joined with newlines): text, or a
        function `(ctx: RunContext[Deps]) -> str` that writes its part at each run (after
        the text)."""
        if not isinstance(instructions, str):
            InstructionsFunction.of(instructions)  # refused here, where it was added
        self._instructions.append(instructions)
        return self

    def with_instructions_template(
        self,
        template: str | PromptTemplate,
        *,
        input_schema: dict[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> Self:
        """Instructions as a mustache template (`Help {{customer}}.`), rendered at each run
        with `agent.run(..., variables={...})`; `input_schema` (JSON Schema) checks the
        variables, `variables` gives defaults. Rendered before plain instructions."""
        if isinstance(template, PromptTemplate):
            if input_schema is not None or variables is not None:
                raise ConfigurationError(
                    "with_instructions_template(): give input_schema and variables to the "
                    "PromptTemplate itself"
                )
            self._template = template
        else:
            self._template = PromptTemplate(
                text=template, input_schema=input_schema, defaults=dict(variables or {})
            )
        return self

    def with_tool(self, tool: Tool | Callable[..., Any]) -> Self:
        """Register a tool; a plain function is turned into one with `@tool`."""
        self._tools.append(taken_tool(tool))
        return self

    def with_tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> Self:
        for item in tools:
            self.with_tool(item)
        return self

    def with_context_provider(self, provider: ContextProvider) -> Self:
        """Add a provider; providers run in the order they are added, after history."""
        self._providers.append(provider)
        return self

    def with_history_provider(self, provider: ContextProvider) -> Self:
        """Replace the built-in in-memory history provider (it still runs first)."""
        self._history = provider
        return self

    def with_chat_client(self, client: ChatClient | str) -> Self:
        """The model: a client, or a model string (`"openai:gpt-4o-mini"`) resolved now,
        as `resolve_model` does."""
        from raf.clients.models import as_chat_client

        self._client = as_chat_client(client, where="with_chat_client()")
        return self

    def with_decorator(self, decorator: ChatClientDecorator) -> Self:
        """Wrap the chat client (retry, logging, …) inside the tool loop."""
        self._decorators.append(decorator)
        return self

    def with_max_tool_rounds(self, rounds: int) -> Self:
        if rounds < 0:
            raise ConfigurationError(f"max_tool_rounds must be 0 or more, got {rounds}")
        self._max_tool_rounds = rounds
        return self

    def with_max_repeated_calls(self, calls: int | None) -> Self:
        """After this many identical calls with identical results in a row, the model is
        asked to answer without tools (default 3; None or 0: never)."""
        try:
            self._max_repeated_calls = check_max_repeated_calls(calls)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        return self

    def with_options(self, options: ChatOptions) -> Self:
        """Default model settings (temperature, max_tokens, …) for every run."""
        self._options = options
        return self

    def with_session_store(self, store: SessionStore) -> Self:
        """Save the session to `store` after every run."""
        self._store = store
        return self

    def use_middleware(self, *middleware: Any, outermost: bool = False) -> Self:
        """Add agent, chat or function middleware (each `async (context, call_next)`);
        the kind comes from a decorator or the context type its first parameter names.
        Middleware added first is outermost; `outermost=True` puts these before all
        added so far (tracing does, to see what the others do)."""
        try:
            added = MiddlewareSet.of(middleware)
        except ConfigurationError as exc:
            raise ConfigurationError(f"use_middleware(): {exc}") from None
        if outermost:
            self._outer_middleware = added + self._outer_middleware
        else:
            self._middleware = self._middleware + added
        return self

    def use_agent_middleware(self, middleware: AgentMiddleware) -> Self:
        """Add middleware that wraps each whole run."""
        self._middleware = self._middleware + MiddlewareSet(agent=(middleware,))
        return self

    def use_chat_middleware(self, middleware: ChatMiddleware) -> Self:
        """Add middleware that wraps every model call."""
        self._middleware = self._middleware + MiddlewareSet(chat=(middleware,))
        return self

    def use_function_middleware(self, middleware: FunctionMiddleware) -> Self:
        """Add middleware that wraps every tool call."""
        self._middleware = self._middleware + MiddlewareSet(function=(middleware,))
        return self

    def with_input_guardrail(self, check: Any, *, name: str | None = None) -> Self:
        """Check each request before the model sees it: a function `(text) ->
        GuardrailResult` or an agent answering PASS / FAIL: reason. A trip ends the run
        with `InputGuardrailTripped`."""
        self._input_guardrails.append(TextGuardrail.of(check, name))
        return self

    def with_output_guardrail(self, check: Any, *, name: str | None = None) -> Self:
        """Check each final answer (as `with_input_guardrail`); a trip ends the run with
        `OutputGuardrailTripped` and stores nothing of the turn."""
        self._output_guardrails.append(TextGuardrail.of(check, name))
        return self

    def with_tool_guardrail(
        self,
        guardrail: ToolGuardrail | None = None,
        *,
        before: ToolCheck | None = None,
        after: ToolCheck | None = None,
        tools: Sequence[str] | None = None,
        name: str = "",
    ) -> Self:
        """Check tool calls: `before` may refuse a call (the model reads the reason as the
        result), `after` may refuse or replace the result; `tools` limits it to those."""
        if guardrail is None:
            guardrail = ToolGuardrail(
                before=before,
                after=after,
                tools=frozenset(tools) if tools is not None else None,
                name=name,
            )
        elif not isinstance(guardrail, ToolGuardrail):
            raise ConfigurationError(
                f"with_tool_guardrail(): expected a ToolGuardrail, got {guardrail!r}"
            )
        self._tool_guardrails.append(guardrail)
        return self

    def with_usage_limits(
        self, limits: UsageLimits | None = None, *, session: UsageLimits | None = None
    ) -> Self:
        """Cap every run (`limits`) and the whole session's totals (`session`)."""
        for name, value in (("limits", limits), ("session", session)):
            if value is not None and not isinstance(value, UsageLimits):
                raise ConfigurationError(
                    f"with_usage_limits({name}=...): expected UsageLimits, got {value!r}"
                )
        self._usage_limits = limits
        self._session_usage_limits = session
        return self

    def with_tool_timeout(self, seconds: float | None) -> Self:
        """Seconds a tool call may take when its tool declares no timeout (None: no limit)."""
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0
        ):
            raise ConfigurationError(
                f"with_tool_timeout(seconds=...): must be above 0 or None, got {seconds!r}"
            )
        self._tool_timeout = float(seconds) if seconds is not None else None
        return self

    def with_output_type(self, output_type: Any, *, retries: int | None = None) -> Self:
        """Every answer must be `output_type` (a pydantic model, dataclass, TypedDict, a
        list or union of them, a scalar, or a JSON Schema dict); `response.value` holds it.
        An answer that fails validation goes back to the model `retries` times (default 1)."""
        if retries is not None:
            if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
                raise ConfigurationError(
                    f"with_output_type(retries=...): a whole number 0 or above, got {retries!r}"
                )
            self._output_retries = retries
        self._output_type = output_type
        return self

    def with_output_validator(self, validator: Callable[..., Any]) -> Self:
        """Check each final answer: `validator(output)` or `validator(ctx, output)`; it
        returns the output to keep or raises `ModelRetry("...")` to send the model back
        (up to the output retries). See `Agent.output_validator`."""
        OutputValidator.of(validator)  # refused here, where it was added
        self._output_validators.append(validator)
        return self

    def build(self) -> Agent[DepsT]:
        if self._client is None:
            raise ConfigurationError(
                f"agent {self._name!r} has no chat client: call with_chat_client(...)"
            )
        client = self._client
        for decorator in self._decorators:
            client = decorator(client)
        agent = Agent(
            chat_client=client,
            instructions=self._instructions or None,
            tools=self._tools,
            context_providers=self._providers,
            history=self._history,
            name=self._name,
            description=self._description,
            max_tool_rounds=self._max_tool_rounds,
            default_options=self._options,
            session_store=self._store,
            middleware=self._middleware,
            input_guardrails=self._input_guardrails,
            output_guardrails=self._output_guardrails,
            tool_guardrails=self._tool_guardrails,
            output_validators=self._output_validators,
            usage_limits=self._usage_limits,
            session_usage_limits=self._session_usage_limits,
            tool_timeout=self._tool_timeout,
            max_repeated_calls=self._max_repeated_calls,
            output_type=self._output_type,
            output_retries=self._output_retries,
            instructions_template=self._template,
            deps_type=self._deps_type,
        )
        if self._outer_middleware:
            # tracing (added outermost) sees the guardrails, which see what all else does
            agent.middleware = self._outer_middleware + agent.middleware
        return agent
