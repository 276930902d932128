"""The state of one request through the tool loop, and the small moves every step shares."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from raf.agent.run.repeats import RepeatWatch
from raf.core.contents import (
    ApprovalRequestContent,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import RunCancelledError, UsageLimitExceeded
from raf.core.messages import ChatMessage, Role, build_message, new_id
from raf.core.options import ChatOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    UpdateKind,
)
from raf.core.run_context import RunContext
from raf.core.tools import Tool
from raf.core.usage import UsageDetails

T = TypeVar("T")

Step = Callable[["LoopState"], Awaitable["Step | None"]]
"""A step of the loop: takes the state, returns the step that follows (None: done)."""

Outcome = FunctionResultContent | ApprovalRequestContent
"""What invoking one call gives: its result, or a request to pause for a human."""

# Enum members read on every run, bound to names once: reading one off its class costs
# about a microsecond on Python 3.11.
_TOOL = Role.TOOL
_USAGE = UpdateKind.USAGE
_FINISHED = UpdateKind.FINISHED
_TOOL_CALLED = UpdateKind.TOOL_CALLED


def _nothing() -> None:
    return None


@dataclass(kw_only=True, slots=True)
class LoopState:
    """Everything one request through the loop knows; each step reads and advances it."""

    inner: Any
    """The chat client below the loop (a `ChatClient`)."""
    run: RunContext
    options: ChatOptions
    stream: bool
    tools: dict[str, Tool]
    max_rounds: int
    max_result_chars: int
    conversation: list[ChatMessage]
    produced: list[ChatMessage] = field(init=False, default_factory=list)
    usage: UsageDetails | None = field(init=False, default=None)
    finish_reason: FinishReason | None = field(init=False, default=None)
    model_id: str | None = field(init=False, default=None)
    rounds: int = field(init=False, default=0)
    next: Step | None = field(init=False, default=None)
    """The first step (then advanced by the driver)."""
    use_tools: bool = field(init=False, default=True)
    """Whether the current model call offers tools."""
    repeats: RepeatWatch
    """Identical calls with identical results in a row; at its limit the tools go off."""
    live: AsyncIterator[AgentResponseUpdate] | None = field(init=False, default=None)
    """A streaming model call for the driver to yield from before the next step."""
    out: list[AgentResponseUpdate] = field(init=False, default_factory=list)
    """Updates the steps made for the stream, until the driver yields them."""
    reply: list[ChatMessage] = field(init=False, default_factory=list)
    """The messages of the last model call."""
    batch_message: ChatMessage | None = field(init=False, default=None)
    """The assistant message whose calls the next batch runs (None when resuming)."""
    batch: list[FunctionCallContent] = field(init=False, default_factory=list)
    preset: dict[str, FunctionResultContent] = field(init=False, default_factory=dict)
    """Results known before the batch runs (calls the human denied)."""
    decided: list[str] = field(init=False, default_factory=list)
    """Call ids whose approvals this batch spends."""
    limit_error: UsageLimitExceeded | None = field(init=False, default=None)
    model_error: Exception | None = field(init=False, default=None)
    """The error the model client raised, if a model call failed (not a middleware's)."""
    trail: list[str] | None = field(init=False, default=None)
    """Where the driver writes the name of each step it takes (None: it does not)."""
    _racing: asyncio.Task[Any] | None = field(init=False, default=None)
    """The task awaiting a `race` now (None between races)."""
    _interrupted: asyncio.Task[Any] | None = field(init=False, default=None)
    """The task the token's cancellation interrupted, until its race has seen it."""
    _watching: bool = field(init=False, default=False)
    _unregister: Callable[[], None] = field(init=False, default=_nothing)

    # -- the result -------------------------------------------------------------------

    def response(self, *, session_id: str | None = None) -> ChatResponse:
        """What the loop answered so far; with `session_id`, as an agent's response in
        that session (made at once, not converted from a chat response)."""
        if session_id is not None:
            return AgentResponse(
                messages=self.produced,
                finish_reason=self.finish_reason,
                usage=self.usage,
                model_id=self.model_id,
                session_id=session_id,
            )
        return ChatResponse(
            messages=self.produced,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_id=self.model_id,
        )

    def completed_rounds(self) -> ChatResponse | None:
        """After a failed model call: the rounds whose tools ran, every call answered, or
        None when no tool ran in this request."""
        if not any(m.role is Role.TOOL for m in self.produced):
            return None
        self.answer_dangling("not run: the model call that followed failed")
        self.finish_reason = FinishReason.OTHER
        return self.response()

    def keep(self, messages: Sequence[ChatMessage]) -> None:
        """Add the model's messages to the transcript."""
        self.conversation.extend(messages)
        self.produced.extend(messages)
        self.reply = list(messages)

    def account(self, usage: UsageDetails | None, model_id: str | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage
        if model_id:
            self.model_id = model_id

    def emit(self, update: AgentResponseUpdate) -> None:
        self.out.append(update)

    def finished(self) -> list[AgentResponseUpdate]:
        """The closing updates of a stream: summed usage, then the finish reason."""
        if not self.stream:
            return []
        out = []
        if self.usage is not None:
            out.append(AgentResponseUpdate(kind=_USAGE, usage=self.usage))
        out.append(
            AgentResponseUpdate(
                kind=_FINISHED,
                finish_reason=self.finish_reason,
                model_id=self.model_id or "",
            )
        )
        return out

    def add_results(self, results: Sequence[FunctionResultContent]) -> None:
        """Append one tool message with `results` (announced when streaming)."""
        message = build_message(_TOOL, list(results), new_id("msg"))
        self.conversation.append(message)
        self.produced.append(message)
        if not self.stream:
            return
        self.out.extend(
            AgentResponseUpdate(
                kind=_TOOL_CALLED,
                message_id=message.message_id or "",
                role=_TOOL,
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
            message = ChatMessage(role=Role.ASSISTANT, contents=[], message_id=new_id("msg"))
            self.produced.append(message)
        for request in requests:
            message.contents.append(request)
            if self.stream:
                self.out.append(
                    AgentResponseUpdate(
                        kind=UpdateKind.APPROVAL_REQUEST,
                        message_id=message.message_id or "",
                        role=message.role,
                        content=request,
                        call_id=request.call_id,
                        tool_name=request.name,
                    )
                )
        self.finish_reason = FinishReason.AWAITING_APPROVAL

    def answer_dangling(self, note: str) -> None:
        """Give every call without a result an error result, so the transcript stays whole."""
        answered = {c.call_id for m in self.conversation for c in m.function_results}
        dangling = [
            c
            for m in self.conversation
            if m.role is Role.ASSISTANT
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

    # -- cancellation -----------------------------------------------------------------

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await, but stop at once when the run's token is cancelled: the token's
        cancellation interrupts the awaiting task there (as `asyncio.timeout` does), so a
        race costs no task of its own."""
        token = self.run.cancellation
        if token is None:
            return await awaitable
        if token.cancelled:
            if asyncio.isfuture(awaitable):
                awaitable.cancel()
            elif hasattr(awaitable, "close"):
                awaitable.close()
            raise RunCancelledError("cancelled")
        if not self._watching:
            # one callback per request, not one per race (a stream races every chunk);
            # the token may be cancelled from another thread: the loop interrupts
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
