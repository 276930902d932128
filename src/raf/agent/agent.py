"""The agent and its run lifecycle: providers → model (tool loop inside) → providers."""

from __future__ import annotations

import copy
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic, Self, TypeVar

from raf.agent.guardrails import TextGuardrail, ToolGuardrail, guardrail_middleware
from raf.agent.habits import refuse_habits
from raf.agent.history import InMemoryHistoryProvider
from raf.agent.hooks import InstructionsFunction, OutputValidator, split_instructions
from raf.agent.output_type import OutputType, check_for_client, resolve_output_type
from raf.agent.run.client import DEFAULT_MAX_TOOL_ROUNDS, FunctionInvokingChatClient
from raf.agent.run.output import DEFAULT_OUTPUT_RETRIES
from raf.agent.run.providers import close_providers
from raf.agent.run.pumps import RunSteps, run_stream, run_to_end
from raf.agent.run.repeats import DEFAULT_MAX_REPEATED_CALLS
from raf.agent.run.run import Run, begin, with_run_arguments
from raf.agent.template import PromptTemplate, render_instructions
from raf.core.agent_like import load_saved_session, run_outside_a_loop
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider, as_context_provider
from raf.core.errors import ConfigurationError, RafError, ToolDefinitionError
from raf.core.function_tool import FunctionTool
from raf.core.messages import ChatMessage, MessageInput, Role
from raf.core.middleware import NO_MIDDLEWARE, MiddlewareSet
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import FINISH_STOP, AgentResponse, AgentResponseUpdate
from raf.core.run_context import DepsT
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool, as_tool, index_tools, is_tool
from raf.core.usage import UsageLimits

log = logging.getLogger("raf.agent")

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_HISTORY: Any = object()
"""`Agent(history=...)` unset: the agent keeps its transcript with a new
`InMemoryHistoryProvider`, first among its providers (as `AgentBuilder` does)."""


def taken_tool(item: Tool | Callable[..., Any]) -> Tool:
    """A tool as an agent takes it: a Tool as it is, a plain function as a tool described
    by its type hints and docstring (as `@tool` with no options makes it)."""
    if is_tool(item) or hasattr(item, "invoke"):
        return as_tool(item)
    if callable(item) and not isinstance(item, type):
        return FunctionTool(item)
    raise ToolDefinitionError(
        f"{item!r} is not a tool: give a function (its type hints and docstring describe "
        "it), a function decorated with @tool (for a name, approval or a timeout), or an "
        "object with a 'name' and an async 'invoke(arguments, context)'"
    )


class Agent(Generic[DepsT]):
    """An LLM agent: instructions, tools, context providers and a chat client.

    The agent holds no conversation state: everything a run needs lives in the session,
    so one agent serves many sessions and a session can resume in another process.
    `Agent(...)` and `AgentBuilder().build()` make the same agent from the same inputs:
    unless `history=None` (or a provider of kind "history" is given), the session's
    transcript is kept by an `InMemoryHistoryProvider` placed first.

    `instructions` is text, a function of the run (`(ctx: RunContext[Deps]) -> str`,
    sync or async, called at each run) or a list of both; `@agent.dynamic_instructions`
    adds such a function. `output_validators` (or `@agent.output_validator`) check each
    final answer and may send the model back with `ModelRetry("what to fix")`.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        if args or kwargs.keys() - _AGENT_KEYWORDS:
            refuse_habits(args, kwargs, cls.__init__)
        return super().__new__(cls)

    def __init__(
        self,
        *,
        chat_client: ChatClient | str,
        instructions: str | Callable[..., Any] | Sequence[str | Callable[..., Any]] | None = None,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        context_providers: Sequence[ContextProvider] = (),
        name: str = "agent",
        description: str = "",
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        default_options: ChatOptions | None = None,
        session_store: SessionStore | None = None,
        middleware: Sequence[Any] | MiddlewareSet = (),
        usage_limits: UsageLimits | None = None,
        session_usage_limits: UsageLimits | None = None,
        tool_timeout: float | None = None,
        max_repeated_calls: int | None = DEFAULT_MAX_REPEATED_CALLS,
        output_type: Any = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        instructions_template: PromptTemplate | str | None = None,
        history: ContextProvider | None = DEFAULT_HISTORY,
        deps_type: type[DepsT] | None = None,
        input_guardrails: Sequence[Any] = (),
        output_guardrails: Sequence[Any] = (),
        tool_guardrails: Sequence[ToolGuardrail] = (),
        output_validators: Sequence[Callable[..., Any]] = (),
    ) -> None:
        self.name = name
        self.deps_type = deps_type
        """The type of the dependencies each run passes to its tools (None: any)."""
        self.description = description
        text, functions = split_instructions(instructions)
        self.instructions: str | None = text
        """The fixed part of the system prompt."""
        self.instruction_functions: tuple[InstructionsFunction, ...] = functions
        """Functions that write more of the system prompt at each run, after `instructions`."""
        if isinstance(instructions_template, str):
            instructions_template = PromptTemplate(text=instructions_template)
        self.instructions_template = instructions_template
        """Instructions rendered at each run from its variables (before `instructions`)."""
        self.output_validators: tuple[OutputValidator, ...] = tuple(
            OutputValidator.of(v) for v in output_validators
        )
        """Checks of each final answer, in order (see `output_validator`)."""
        self._tool_index = index_tools([taken_tool(t) for t in tools], where=f"on agent {name!r}")
        self.tools: tuple[Tool, ...] = tuple(self._tool_index.values())
        self._indexed_tools = self.tools  # `tools` may be replaced after building
        providers = [as_context_provider(p) for p in context_providers]
        if history is DEFAULT_HISTORY:
            history = (
                None if any(p.kind == "history" for p in providers) else (InMemoryHistoryProvider())
            )
        if history is not None:
            providers.insert(0, as_context_provider(history))
        self.context_providers: tuple[ContextProvider, ...] = tuple(providers)
        self.max_tool_rounds = max_tool_rounds
        self.default_options = default_options or ChatOptions()
        self.session_store = session_store
        if isinstance(middleware, MiddlewareSet):
            self.middleware = middleware
        else:
            self.middleware = MiddlewareSet.of(middleware) if middleware else NO_MIDDLEWARE
        if input_guardrails or output_guardrails or tool_guardrails:
            for item in tool_guardrails:
                if not isinstance(item, ToolGuardrail):
                    raise ConfigurationError(
                        f"Agent(tool_guardrails=...): expected ToolGuardrail objects, got {item!r}"
                    )
            # the guardrails see what all other middleware does (as the builder's do)
            self.middleware = (
                guardrail_middleware(
                    input=[TextGuardrail.of(g) for g in input_guardrails],
                    output=[TextGuardrail.of(g) for g in output_guardrails],
                    tools=tool_guardrails,
                )
                + self.middleware
            )
        self.usage_limits = usage_limits
        self.session_usage_limits = session_usage_limits
        self.tool_timeout = tool_timeout
        if isinstance(chat_client, str) or not hasattr(chat_client, "get_response"):
            from raf.clients.models import as_chat_client

            chat_client = as_chat_client(chat_client, where="Agent(chat_client=...)")
        self.leaf_client = chat_client
        self.tool_loop = FunctionInvokingChatClient(
            chat_client, max_tool_rounds=max_tool_rounds, max_repeated_calls=max_repeated_calls
        )
        """The chat client wrapped in the tool loop (used when the run has tools)."""
        self.max_repeated_calls = self.tool_loop.max_repeated_calls
        self.output_type: OutputType | None = None
        """The type every answer must have (None: text); `response.value` holds it."""
        if output_type is not None:
            self.output_type = resolve_output_type(output_type, where="output_type")
            check_for_client(chat_client, self.output_type, where="output_type")
        self.output_retries = output_retries

    def dynamic_instructions(self, fn: F) -> F:
        """Decorator: `fn(ctx: RunContext[Deps]) -> str` (or `fn() -> str`, sync or async)
        writes part of the system prompt at each run, from the run's `ctx.deps` and
        session; it comes after the fixed instructions. Returns `fn` unchanged."""
        self.instruction_functions = (*self.instruction_functions, InstructionsFunction.of(fn))
        return fn

    def output_validator(self, fn: F) -> F:
        """Decorator: `fn(output)` or `fn(ctx: RunContext[Deps], output)`, sync or async,
        checks each final answer (the value with an output type, else the text). It
        returns the output to keep (None: unchanged), or raises `ModelRetry("...")`:
        the model reads the message and answers again, up to `output_retries` times,
        after which the run raises `OutputValidationError`. Returns `fn` unchanged."""
        self.output_validators = (*self.output_validators, OutputValidator.of(fn))
        return fn

    def with_tools(self, tools: Sequence[Tool | Callable[..., Any]]) -> Agent[DepsT]:
        """A copy of this agent with `tools` after its own (checked as when it was built);
        all else is shared with this agent (client, providers, middleware, guardrails)."""
        twin = copy.copy(self)
        index = index_tools(
            [*self.tools, *(taken_tool(t) for t in tools)], where=f"on agent {self.name!r}"
        )
        twin._tool_index = index
        twin.tools = twin._indexed_tools = tuple(index.values())
        return twin

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema the answers must match (None without an output type)."""
        output = self.output_type
        if output is None:
            return None
        return output.source if isinstance(output.source, dict) else output.schema.json_schema

    @property
    def chat_client(self) -> ChatClient:
        """The pipeline used when tools exist: the client wrapped in the tool loop."""
        return self.tool_loop if self.tools else self.leaf_client

    @property
    def tool_index(self) -> dict[str, Tool] | None:
        """The agent's tools by name, checked when built; None once `tools` was replaced."""
        return self._tool_index if self.tools is self._indexed_tools else None

    def create_session(self, session_id: str | None = None) -> AgentSession:
        return AgentSession(id=session_id) if session_id else AgentSession()

    async def load_session(self, session_id: str) -> AgentSession:
        return await load_saved_session(self.session_store, self.name, session_id)

    # -- running ----------------------------------------------------------------------

    async def run(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AgentResponse:
        """Run one turn: providers, the model with its tool loop, providers again.

        `output_type` (or the agent's) makes `response.value` the answer as that type;
        `variables` fill the instructions template; `deps` reach the tools that ask for
        a `RunContext[Deps]`."""
        run = self._begin(messages, session, options, output_type, variables, deps, stream=False)
        response = await run_to_end(run)
        if response.finish_reason is not FINISH_STOP or not response.text.strip():
            problem = response.answer_problem
            if problem is not None:
                log.warning("agent %r: %s", self.name, problem.message)
        return response

    def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same lifecycle as `run`, yielding updates; the session is stored before
        the final update is yielded. With an output type, text deltas carry the
        `partial_value` parsed so far and the final update the validated `value`.
        The run is checked and set up when the iteration starts."""
        return run_stream(
            functools.partial(
                self._begin, messages, session, options, output_type, variables, deps, stream=True
            )
        )

    def iter(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> RunSteps:
        """The run step by step: `async with agent.iter(...) as steps:` then `async for
        step in steps:`; each `RunStep` is handed out before it runs (`steps.replace(...)`
        runs another step in its place), names the step and, once the next is handed out,
        carries the updates it reported (together, what `run_stream` yields);
        `steps.response` is the answer after the last (`end`). Checks run when the
        context is entered."""
        return RunSteps(
            functools.partial(
                self._begin, messages, session, options, output_type, variables, deps, stream=True
            )
        )

    def run_sync(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AgentResponse:
        """`run` for scripts: starts an event loop (not callable inside one)."""
        return run_outside_a_loop(
            lambda: self.run(
                messages,
                session=session,
                options=options,
                output_type=output_type,
                variables=variables,
                deps=deps,
            )
        )

    # -- setting up a run -------------------------------------------------------------

    def _begin(
        self,
        messages: MessageInput,
        session: AgentSession | None,
        options: AgentRunOptions | None,
        output_type: Any,
        variables: Mapping[str, Any] | None,
        deps: DepsT | None,
        *,
        stream: bool,
    ) -> Run:
        # each step is skipped where its input is the default and it would change nothing
        if output_type is not None or variables is not None or deps is not None:
            options = with_run_arguments(options, output_type, variables, deps)
        if options is None:
            options = AgentRunOptions()
        elif options.deps is not None:
            check_deps(self, options.deps)
        variables = options.template_variables
        instructions = (
            None
            if self.instructions_template is None and not variables
            else render_instructions(self, variables)
        )
        session = session if session is not None else self.create_session()
        # the agent is its own run settings, read afresh by each run: a setting changed
        # between runs applies to the next one
        return begin(self, self, messages, session, options, instructions, stream=stream)

    def override(self, *, model: ChatClient | str) -> AbstractContextManager[Agent[DepsT]]:
        """Inside `with agent.override(model=...)`, runs use that model (a client or a
        model string) instead of the agent's; the agent's own comes back on leaving.
        For tests: other runs of the same agent meanwhile use the override too."""
        from raf.agent.override import override_model

        return override_model(self, model)

    async def aclose(self) -> None:
        """Close the providers that hold background work (those with an `aclose()`, such
        as the memory's consolidation worker), last registered first."""
        await close_providers(self.context_providers)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"Agent(name={self.name!r}, tools={[t.name for t in self.tools]}, "
            f"providers={[p.name for p in self.context_providers]})"
        )


_AGENT_KEYWORDS = frozenset(inspect.signature(Agent.__init__).parameters) - {"self"}
"""The keywords `Agent(...)` takes: a call with only these needs no habit check."""


def check_deps(agent: Agent[Any], deps: Any) -> Any:
    """The run's dependencies, refused when they are not of the agent's `deps_type`."""
    expected = agent.deps_type
    if deps is None or expected is None:
        return deps
    try:
        fits = isinstance(deps, expected)
    except TypeError:  # a Protocol or alias isinstance cannot check
        return deps
    if not fits:
        raise RafError(
            f"agent {agent.name!r} takes deps of type {getattr(expected, '__name__', expected)}, "
            f"got {type(deps).__name__}"
        )
    return deps


def system_text(messages: Sequence[ChatMessage]) -> str:
    """The system prompt of a request, as the model saw it."""
    return "\n".join(m.text for m in messages if m.role is Role.SYSTEM)


def agent_summary(agent: Agent) -> dict[str, Any]:
    """A JSON-ready description of an agent (used by the CLI and MCP server)."""
    return {
        "name": agent.name,
        "description": agent.description,
        "tools": [t.name for t in agent.tools],
        "providers": [{"name": p.name, "kind": p.kind} for p in agent.context_providers],
        "max_tool_rounds": agent.max_tool_rounds,
    }
