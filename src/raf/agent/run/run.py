"""One run as one object, and how a run is set up: what it was asked and what it may
use, what the providers prepared, the conversation with the model, the calls it runs,
and what it answered; `begin` checks a request and gives its `Run`.

Every step of the run (`raf.agent.run.steps`) reads and advances a `Run`; the pumps
(`raf.agent.run.pumps`) take its steps one after another. Tools and middleware see
`context`, the `RunContext` of the run; approvals live in `context.approvals`. The tool
loop on its own (`FunctionInvokingChatClient`) is a `Run` with no agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from raf.agent.hooks import InstructionsFunction, OutputValidator
from raf.agent.output_type import OutputType, check_for_client, resolve_output_type
from raf.agent.run.repeats import annotated, call_of, same_call
from raf.core import builders
from raf.core.approvals import check_approval_responses, refuse_messages_with_answers
from raf.core.call_approval import RunApprovals, awaiting_answers, close_unrecorded_claims
from raf.core.contents import (
    ApprovalRequestContent,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import (
    ApprovalError,
    ConfigurationError,
    RunCancelledError,
    UsageLimitExceeded,
)
from raf.core.hand_out import hand_out
from raf.core.messages import (
    ROLE_ASSISTANT,
    ROLE_TOOL,
    ChatMessage,
    MessageInput,
    new_id,
    to_messages,
)
from raf.core.middleware import MiddlewareSet
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import (
    FINISH_AWAITING_APPROVAL,
    FINISH_OTHER,
    KIND_APPROVAL_REQUEST,
    KIND_FINISHED,
    KIND_TOOL_CALLED,
    KIND_USAGE,
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
)
from raf.core.run_context import RunContext
from raf.core.sessions import AgentSession
from raf.core.tools import Tool
from raf.core.usage import UsageDetails, UsageLimits

if TYPE_CHECKING:
    from raf.core.chat_client import ChatClient
    from raf.core.context import ContextProvider
    from raf.core.sessions import SessionStore

T = TypeVar("T")

Step = Callable[["Run"], Awaitable["Step | None"]]
"""A step of a run: takes the run, returns the step that follows (None: done)."""

Outcome = FunctionResultContent | ApprovalRequestContent
"""What invoking one call gives: its result, or a request to pause for a human."""


class ToolLoopSettings(Protocol):
    """The tool loop's settings a run reads (a `FunctionInvokingChatClient` has them)."""

    @property
    def max_tool_rounds(self) -> int: ...
    @property
    def max_result_chars(self) -> int: ...
    @property
    def max_repeated_calls(self) -> int | None: ...


class RunnableAgent(Protocol):
    """What a run reads from its agent (all public; nothing is reached behind it)."""

    @property
    def name(self) -> str: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def instruction_functions(self) -> tuple[InstructionsFunction, ...]: ...
    @property
    def context_providers(self) -> tuple[ContextProvider, ...]: ...
    @property
    def default_options(self) -> ChatOptions: ...
    @property
    def tools(self) -> tuple[Tool, ...]: ...
    @property
    def tool_index(self) -> dict[str, Tool] | None:
        """The agent's tools by name, when `tools` is the list they were checked as."""

    @property
    def leaf_client(self) -> ChatClient: ...
    @property
    def tool_loop(self) -> ToolLoopSettings: ...
    @property
    def session_store(self) -> SessionStore | None: ...


class RunPhase(Enum):
    """Where a run stands; each phase says which of `Run`'s parts are filled."""

    SET_UP = "set_up"
    """Checked and set up; no provider has run."""
    PREPARED = "prepared"
    """The providers ran: the conversation, options and tools for the model are set."""
    ANSWERED = "answered"
    """The model answered (its tool calls inside): `response` is set."""
    RECORDING = "recording"
    """The turn is being stored (a failure there is not recorded again)."""
    RECORDED = "recorded"
    """The turn is in the session (and its store)."""
    FAILED = "failed"
    """The run raised; the session keeps what the failure allows."""


# The phases, bound once beside their enum for the code every run goes through (Python
# 3.11 reads a member off its class in about 70 ns, a module name in about 6).
PHASE_SET_UP = RunPhase.SET_UP
PHASE_PREPARED = RunPhase.PREPARED
PHASE_ANSWERED = RunPhase.ANSWERED
PHASE_RECORDING = RunPhase.RECORDING
PHASE_RECORDED = RunPhase.RECORDED
PHASE_FAILED = RunPhase.FAILED


def _nothing() -> None:
    return None


NO_TOOLS: Mapping[str, Tool] = MappingProxyType({})
"""The tools of a run before its providers give it its own (read-only: one serves all)."""


@dataclass(kw_only=True, slots=True)
class Run:
    """Everything one run knows; each step reads and advances it."""

    # -- set up (by `begin`, or by the tool loop for a request of its own) -------------
    context: RunContext
    """The run as tools and middleware see it (session, approvals, limits, …)."""
    client: ChatClient
    """The model."""
    stream: bool = False
    """Whether the caller reads updates as they come (else only the response)."""
    agent: RunnableAgent | None = None
    """The agent that runs (None: the tool loop on its own, from `call_model` to done)."""
    session: AgentSession | None = None
    request: list[ChatMessage] = field(default_factory=list)
    """The request's new messages (what the caller sent)."""
    options: AgentRunOptions | None = None
    instructions: str | None = None
    """The agent's instructions template, rendered for this run."""
    output: OutputType | None = None
    """The type the answer must have (None: text)."""
    output_retries: int = 0
    validators: Sequence[OutputValidator] = ()
    """Checks of the final answer (they may send the model back with `ModelRetry`)."""
    max_rounds: int = 10
    """Rounds of tool calls before the model is asked once more without tools."""
    max_result_chars: int = 64_000
    repeat_limit: int | None = None
    """Identical calls with identical results in a row that turn the tools off."""
    phase: RunPhase = PHASE_SET_UP
    # -- prepared (by the providers) ----------------------------------------------------
    invoked: Sequence[ContextProvider] = ()
    """The providers whose on_invoking ran (they hear how the run went)."""
    conversation: list[ChatMessage] = field(default_factory=list)
    """What the model is sent: instructions, history, request, and this run's messages."""
    chat_options: ChatOptions
    """The options for the model (until the providers give the run its own, the
    agent's, which the run only reads)."""
    tools: Mapping[str, Tool]
    """The run's tools by name (none until the providers set them)."""
    # -- the conversation with the model ------------------------------------------------
    produced: list[ChatMessage] = field(default_factory=list)
    """The messages this run added (the response's messages)."""
    usage: UsageDetails | None = None
    finish_reason: FinishReason | None = None
    model_id: str | None = None
    rounds: int = 0
    """Rounds of tool calls so far in this answer."""
    use_tools: bool = True
    """Whether the current model call offers tools."""
    live: Awaitable[None] | None = None
    """A streaming model call for the pump to await before the next step (its deltas
    are relayed to the caller as they come: `raf.core.hand_out.relay`)."""
    out: list[AgentResponseUpdate] = field(default_factory=list)
    """Updates the steps made for the stream, until the pump yields them."""
    reply: Sequence[ChatMessage] = ()
    """The messages of the last model call."""
    batch_message: ChatMessage | None = None
    """The assistant message whose calls the next batch runs (None when resuming)."""
    batch: Sequence[FunctionCallContent] = ()
    limit_error: UsageLimitExceeded | None = None
    model_error: Exception | None = None
    """The error the model client raised, if a model call failed (not a middleware's)."""
    # -- repeats: the latest run of identical (tool, arguments, result) triples ---------
    repeat_last: tuple[Any, ...] | None = None
    repeat_count: int = 0
    repeat_note: str | None = None
    """Set once `repeat_limit` was reached: why the tools are off for the rest of the turn."""
    # -- the answer ---------------------------------------------------------------------
    attempts: int = 0
    """Answers checked against the output type so far."""
    attempt_start: int = 0
    """Where the current answer's messages begin in `produced` (a retry starts anew)."""
    value: Any = None
    """The answer as the output type, once checked."""
    response: AgentResponse | None = None
    # -- cancellation -------------------------------------------------------------------
    _racing: asyncio.Task[Any] | None = None
    """The task awaiting a `race` now (None between races)."""
    _interrupted: asyncio.Task[Any] | None = None
    """The task the token's cancellation interrupted, until its race has seen it."""
    _watching: bool = False
    _unregister: Callable[[], None] = _nothing

    # -- the answer so far ----------------------------------------------------------------

    def chat_response(self) -> ChatResponse:
        """What the run answered so far, as a model's response."""
        return ChatResponse(
            messages=self.produced,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_id=self.model_id,
        )

    def agent_response(self) -> AgentResponse:
        """What the run answered so far, as the agent's response in its session."""
        return AgentResponse(
            messages=self.produced,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_id=self.model_id,
            session_id=self.session.id if self.session is not None else None,
            value=self.value,
        )

    # -- moves every step shares ----------------------------------------------------------

    def keep(self, messages: Sequence[ChatMessage]) -> None:
        """Add the model's messages to the transcript."""
        self.conversation.extend(messages)
        self.produced.extend(messages)
        self.reply = messages

    def account(self, usage: UsageDetails | None, model_id: str | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage
        if model_id:
            self.model_id = model_id

    def emit(self, update: AgentResponseUpdate) -> None:
        self.out.append(update)

    async def send_out(self) -> None:
        """Hand out now what this step made for the stream so far (the pump hands out
        the rest once the step returns): for what must not wait for the step's own
        waits, such as a batch's calls announced before they run."""
        out = self.out
        if out:
            self.out = []
            await hand_out(out)

    def closing_updates(self) -> list[AgentResponseUpdate]:
        """The last updates of a stream: summed usage, then the finish reason (with the
        checked value, for an output type)."""
        if not self.stream:
            return []
        out = []
        if self.usage is not None:
            out.append(AgentResponseUpdate(kind=KIND_USAGE, usage=self.usage))
        out.append(
            AgentResponseUpdate(
                kind=KIND_FINISHED,
                finish_reason=self.finish_reason,
                model_id=self.model_id or "",
                value=self.value,
            )
        )
        return out

    def add_results(self, results: Sequence[FunctionResultContent]) -> None:
        """Append one tool message with `results` (announced when streaming)."""
        message = builders.message(ROLE_TOOL, list(results), new_id("msg"))
        self.conversation.append(message)
        self.produced.append(message)
        if not self.stream:
            return
        self.out.extend(
            AgentResponseUpdate(
                kind=KIND_TOOL_CALLED,
                message_id=message.message_id or "",
                role=ROLE_TOOL,
                content=result,
                call_id=result.call_id,
                tool_name=result.name or "",
            )
            for result in results
        )

    def pause_with(
        self, message: ChatMessage | None, requests: Sequence[ApprovalRequestContent]
    ) -> None:
        """Add approval requests to `message` (a new one when resuming) and pause."""
        if message is None:
            message = builders.message(ROLE_ASSISTANT, [], new_id("msg"))
            self.produced.append(message)
        for request in requests:
            message.contents.append(request)
            if self.stream:
                self.out.append(
                    AgentResponseUpdate(
                        kind=KIND_APPROVAL_REQUEST,
                        message_id=message.message_id or "",
                        role=message.role,
                        content=request,
                        call_id=request.call_id,
                        tool_name=request.name,
                    )
                )
        self.finish_reason = FINISH_AWAITING_APPROVAL

    def answer_dangling(self, note: str) -> None:
        """Give every call without a result an error result, so the transcript stays whole."""
        answered = {c.call_id for m in self.conversation for c in m.function_results}
        dangling = [
            c
            for m in self.conversation
            if m.role is ROLE_ASSISTANT
            for c in m.function_calls
            if c.call_id not in answered
        ]
        if dangling:
            self.add_results(
                [
                    FunctionResultContent(call_id=c.call_id, name=c.name, error=note)
                    for c in dangling
                ]
            )

    def observe_repeats(
        self, calls: Sequence[FunctionCallContent], results: list[FunctionResultContent]
    ) -> list[FunctionResultContent]:
        """`results` in order, the one whose (tool, arguments, result) makes the latest
        run of identical triples reach `repeat_limit` carrying a note to the model (the
        tools are off for the rest of the turn from then on: `repeat_note`)."""
        limit = self.repeat_limit
        if limit is None or self.repeat_note is not None:
            return results
        count = len(calls)
        for index, result in enumerate(results):
            # usually the call at the same place in the batch
            call = calls[index] if index < count else None
            if call is None or call.call_id != result.call_id:
                call = call_of(result, calls)
            # the call's arguments as the model sent them (the transcript keeps them)
            seen = (
                result.name,
                call.arguments if call is not None else None,
                result.result,
                result.error,
            )
            last = self.repeat_last
            # a different tool is a different call: most batches end the comparison there
            if last is not None and last[0] == seen[0] and same_call(seen, last):
                self.repeat_count += 1
            else:
                self.repeat_last, self.repeat_count = seen, 1
            if self.repeat_count >= limit and self.repeat_note is None:
                self.repeat_note = (
                    f"{result.name!r} was called {self.repeat_count} times in a row with the "
                    "same arguments and returned the same result each time; tools are off for "
                    "the rest of this turn: answer with what you have"
                )
                results = [
                    *results[:index],
                    annotated(result, f"[stopped repeating: {self.repeat_note}]"),
                    *results[index + 1 :],
                ]
        return results

    def completed_rounds(self) -> ChatResponse | None:
        """After a failed model call: the rounds whose tools ran, every call answered, or
        None when no tool ran in this run."""
        if not any(m.role is ROLE_TOOL for m in self.produced):
            return None
        self.answer_dangling("not run: the model call that followed failed")
        self.finish_reason = FINISH_OTHER
        return self.chat_response()

    # -- cancellation -----------------------------------------------------------------

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await, but stop at once when the run's token is cancelled: the token's
        cancellation interrupts the awaiting task there (as `asyncio.timeout` does), so a
        race costs no task of its own."""
        token = self.context.cancellation
        if token is None:
            return await awaitable
        if token.cancelled:
            if asyncio.isfuture(awaitable):
                awaitable.cancel()
            elif hasattr(awaitable, "close"):
                awaitable.close()
            raise RunCancelledError("cancelled")
        if not self._watching:
            # one callback per run, not one per race (a stream races every chunk); the
            # token may be cancelled from another thread: the loop interrupts
            loop = asyncio.get_running_loop()

            def wake() -> None:
                loop.call_soon_threadsafe(self._stop)

            self._watching = True
            self._unregister = token.on_cancel(wake)
        task = self._racing = asyncio.current_task()
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if self._interrupted is task and task is not None:
                self._interrupted = None
                if task.uncancel() == 0:  # no one else asked this task to stop
                    raise RunCancelledError("cancelled") from None
            raise
        finally:
            self._racing = None
        if self._interrupted is task and task is not None:  # it finished regardless
            self._interrupted = None
            task.uncancel()
        return result

    def _stop(self) -> None:
        """On the loop, once the token is cancelled: interrupt the race in progress (a
        later race sees the token cancelled before it starts)."""
        task = self._racing
        if task is not None and self._interrupted is None:
            self._interrupted = task
            task.cancel()

    def close(self) -> None:
        """Stop watching the token (its callback goes)."""
        if self._watching:
            self._unregister()
            self._watching = False


# -- setting a run up: the checks before anything runs, and the Run they give --------


class RunSettings(Protocol):
    """What an agent gives each run beyond `RunnableAgent`: its run-wide settings, read
    when the run begins (the `Agent` itself is one)."""

    @property
    def middleware(self) -> MiddlewareSet: ...
    @property
    def usage_limits(self) -> UsageLimits | None: ...
    @property
    def session_usage_limits(self) -> UsageLimits | None: ...
    @property
    def tool_timeout(self) -> float | None: ...
    @property
    def output_type(self) -> OutputType | None: ...
    @property
    def output_retries(self) -> int: ...
    @property
    def output_validators(self) -> tuple[OutputValidator, ...]: ...


def begin(
    agent: RunnableAgent,
    settings: RunSettings,
    messages: MessageInput,
    session: AgentSession,
    options: AgentRunOptions,
    instructions: str | None,
    *,
    stream: bool,
) -> Run:
    """Check the request and set the run up (nothing has run yet); `instructions` is
    the agent's instructions template rendered for this run."""
    request = to_messages(messages)
    responses = options.tool_approval_responses
    if session.pending_approvals or responses:  # else nothing waits and nothing is answered
        check_approvals(session, request, options)
    if (
        options.tool_timeout is not None
        or options.output_retries is not None
        or options.usage_limits is not None
        or options.session_usage_limits is not None
    ):  # else every option it checks is unset, and unset is valid
        check_run_options(options)
    middleware = settings.middleware
    if options.middleware:
        extra = options.middleware
        if not isinstance(extra, MiddlewareSet):
            extra = MiddlewareSet.of(extra)
        middleware = middleware.joined(extra)
    context: RunContext[Any] = RunContext(
        deps=options.deps,
        agent=agent,
        session=session,
        approvals=RunApprovals.from_session(
            session, responses, options.session_store or agent.session_store
        ),
        cancellation=options.cancellation,
        limits=options.usage_limits or settings.usage_limits,
        session_limits=options.session_usage_limits or settings.session_usage_limits,
        middleware=middleware,
        tool_timeout=options.tool_timeout or settings.tool_timeout,
    )
    if options.output_type is None:
        output = settings.output_type
    else:
        output = resolve_output_type(options.output_type, where="output_type")
        check_for_client(agent.leaf_client, output, where="output_type")
    loop = agent.tool_loop
    return Run(
        context=context,
        client=agent.leaf_client,
        stream=stream,
        agent=agent,
        session=session,
        request=request,
        options=options,
        chat_options=agent.default_options,
        tools=NO_TOOLS,
        instructions=instructions,
        output=output,
        validators=settings.output_validators,
        output_retries=(
            settings.output_retries if options.output_retries is None else options.output_retries
        ),
        max_rounds=loop.max_tool_rounds
        if options.max_tool_rounds is None
        else options.max_tool_rounds,
        max_result_chars=loop.max_result_chars,
        repeat_limit=loop.max_repeated_calls,
    )


def check_run_options(options: AgentRunOptions) -> None:
    """Refuse run settings that could only misbehave, naming the argument."""
    timeout = options.tool_timeout
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigurationError(
            f"must be a number of seconds above 0 or None, got {timeout!r}",
            key_path="AgentRunOptions(tool_timeout=...)",
        )
    retries = options.output_retries
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or retries < 0
    ):
        raise ConfigurationError(
            f"must be a whole number 0 or above, got {retries!r}",
            key_path="AgentRunOptions(output_retries=...)",
        )
    for name in ("usage_limits", "session_usage_limits"):
        value = getattr(options, name)
        if value is not None and not isinstance(value, UsageLimits):
            raise ConfigurationError(
                f"expected UsageLimits or None, got {value!r}",
                key_path=f"AgentRunOptions({name}=...)",
            )


def check_approvals(
    session: AgentSession, request: Sequence[ChatMessage], options: AgentRunOptions
) -> None:
    """Refuse a run that does not fit the session's approvals: answers that do not match
    what is pending, answers sent with new messages, new messages while calls wait."""
    if not session.pending_approvals and not options.tool_approval_responses:
        return  # the usual run: nothing waits and nothing is answered
    pending = {p.call_id: p for p in session.pending_approvals}
    if options.tool_approval_responses:
        check_approval_responses(pending, options.tool_approval_responses, session.spent_approvals)
        refuse_messages_with_answers(request)
    elif pending and not awaiting_answers(session):
        close_unrecorded_claims(session)
    elif pending:
        waiting = ", ".join(f"{p.name} ({p.call_id})" for p in pending.values())
        raise ApprovalError(
            f"session {session.id!r} has tool calls waiting for approval: {waiting}; "
            "answer them with AgentRunOptions(tool_approval_responses=[...]) first"
        )


def with_run_arguments(
    options: AgentRunOptions | None,
    output_type: Any,
    variables: Mapping[str, Any] | None,
    deps: Any = None,
) -> AgentRunOptions | None:
    """The run's options with the `output_type`, `variables` and `deps` given to `run`."""
    if output_type is None and variables is None and deps is None:
        return options
    options = options if options is not None else AgentRunOptions()
    changes: dict[str, Any] = {}
    if deps is not None:
        changes["deps"] = deps
    if output_type is not None:
        changes["output_type"] = output_type
    if variables is not None:
        changes["template_variables"] = variables
    return replace(options, **changes)
