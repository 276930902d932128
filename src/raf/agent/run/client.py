"""`FunctionInvokingChatClient`: the tool loop as a chat client, driving the steps."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from raf.agent.run.repeats import (
    DEFAULT_MAX_REPEATED_CALLS,
    RepeatWatch,
    check_max_repeated_calls,
)
from raf.agent.run.state import LoopState
from raf.agent.run.steps import call_model, finish_cancelled, resume_approved
from raf.core.chat_client import ChatClient
from raf.core.errors import RunCancelledError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse
from raf.core.run_context import RunContext
from raf.core.tools import Tool, index_tools

DEFAULT_MAX_TOOL_ROUNDS = 10
DEFAULT_MAX_RESULT_CHARS = 64_000


class FunctionInvokingChatClient:
    """Wraps a client and runs the tools the model calls until it answers in text.

    After `max_tool_rounds` rounds of tool calls the model is asked once more without
    tools, so every run ends with text. Calls of one model message run concurrently and
    their results keep call order. A raising tool, an unknown tool, invalid arguments or
    a call past its timeout become error results the model reads. If a call needs
    approval, nothing in its batch runs and the response ends with
    `FinishReason.AWAITING_APPROVAL`. When the same call (tool and arguments) returns the
    same result `max_repeated_calls` times in a row, the last result says so and the model
    is asked once more without tools (None or 0: never). The run's state (session,
    approvals, cancellation, limits, middleware) comes in a `RunContext`; without one the
    loop runs bare.
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        tools: Sequence[Tool] = (),
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_repeated_calls: int | None = DEFAULT_MAX_REPEATED_CALLS,
    ) -> None:
        if max_tool_rounds < 0:
            raise ValueError("max_tool_rounds must be 0 or more")
        self.max_repeated_calls = check_max_repeated_calls(max_repeated_calls)
        self.inner = inner
        self.tools = list(tools)
        self.max_tool_rounds = max_tool_rounds
        self.max_result_chars = max_result_chars

    def start(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None = None,
        *,
        run: RunContext | None = None,
        stream: bool = False,
        max_tool_rounds: int | None = None,
        tool_index: dict[str, Tool] | None = None,
        own_messages: bool = False,
    ) -> LoopState:
        """The state of one request, ready for `drive`. `tool_index`: the request's tools
        by name, already checked (else built here); `own_messages`: `messages` is a new
        list the loop may extend (else it is copied)."""
        options = options if options is not None else ChatOptions()
        if tool_index is None or self.tools:
            tools = [*self.tools, *options.tools] if self.tools else options.tools
            tool_index = index_tools(tools, where="in this run")
        conversation = messages if own_messages and isinstance(messages, list) else list(messages)
        # `LoopState(...)`, without Python 3.11 packing the keywords into a dict for
        # `type.__call__` (the class has no `__new__`)
        state = object.__new__(LoopState)
        LoopState.__init__(
            state,
            inner=self.inner,
            run=run if run is not None else RunContext(),
            options=options,
            stream=stream,
            tools=tool_index,
            max_rounds=self.max_tool_rounds if max_tool_rounds is None else max_tool_rounds,
            max_result_chars=self.max_result_chars,
            conversation=conversation,
            repeats=RepeatWatch(limit=self.max_repeated_calls),
        )
        state.next = resume_approved if state.run.approvals.responses else call_model
        return state

    async def get_response(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None = None,
        *,
        run: RunContext | None = None,
    ) -> ChatResponse:
        state = self.start(messages, options, run=run)
        await drive_quietly(state)
        return state.response()

    async def get_streaming_response(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None = None,
        *,
        run: RunContext | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        state = self.start(messages, options, run=run, stream=True)
        async for update in drive(state):
            yield update

    def __repr__(self) -> str:
        return f"FunctionInvokingChatClient({self.inner!r}, max_tool_rounds={self.max_tool_rounds})"


async def drive_quietly(state: LoopState) -> None:
    """Run the steps of a request that does not stream until one returns no next step;
    no step is held up between others (the fast path of `drive`, without a generator)."""
    step = state.next
    trail = state.trail
    try:
        while step is not None:
            taken = step
            step = await step(state)
            if trail is not None:
                trail.append(taken.__name__)
    finally:
        state.close()


async def drive(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """Run the steps until one returns no next step. Streaming, yield after each step the
    updates it made and then its live model call, if it started one; the stream ends with
    the usage and the finish. Not streaming, nothing is yielded (`drive_quietly`)."""
    if not state.stream:
        await drive_quietly(state)
        return
    step = state.next
    trail = state.trail
    try:
        while step is not None:
            taken = step
            step = await step(state)
            if trail is not None:
                trail.append(taken.__name__)
            if state.out:
                out, state.out = state.out, []
                for update in out:
                    yield update
            live = state.live
            if live is not None:
                state.live = None
                try:
                    async for update in live:
                        yield update
                except RunCancelledError:
                    step = finish_cancelled
    finally:
        state.close()
    for update in state.finished():
        yield update
