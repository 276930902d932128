"""`FunctionInvokingChatClient`: the tool loop as a chat client of its own, taking a
run's steps from `call_model` (or `resume`) to the answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from raf.agent.run.pumps import tool_loop_steps, tool_loop_updates
from raf.agent.run.repeats import DEFAULT_MAX_REPEATED_CALLS, check_max_repeated_calls
from raf.agent.run.run import Run, Step
from raf.agent.run.steps import call_model, resume
from raf.core.chat_client import ChatClient
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
    ) -> tuple[Run, Step]:
        """One request as a run with no agent, and its first step."""
        options = options if options is not None else ChatOptions()
        tools = [*self.tools, *options.tools] if self.tools else options.tools
        context = run if run is not None else RunContext()
        request = Run(
            context=context,
            client=self.inner,
            stream=stream,
            conversation=list(messages),
            chat_options=options,
            tools=index_tools(tools, where="in this run"),
            max_rounds=self.max_tool_rounds,
            max_result_chars=self.max_result_chars,
            repeat_limit=self.max_repeated_calls,
        )
        return request, resume if context.approvals.responses else call_model

    async def get_response(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None = None,
        *,
        run: RunContext | None = None,
    ) -> ChatResponse:
        request, first = self.start(messages, options, run=run)
        await tool_loop_steps(request, first)
        return request.chat_response()

    async def get_streaming_response(
        self,
        messages: Sequence[ChatMessage],
        options: ChatOptions | None = None,
        *,
        run: RunContext | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        request, first = self.start(messages, options, run=run, stream=True)
        async for update in tool_loop_updates(request, first):
            yield update

    def __repr__(self) -> str:
        return f"FunctionInvokingChatClient({self.inner!r}, max_tool_rounds={self.max_tool_rounds})"
