"""The tool loop: model → tool calls → results → model, with approvals and cancellation."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from raf.core.chat_client import ChatClient
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
    result_to_text,
)
from raf.core.errors import (
    ApprovalError,
    RunCancelledError,
    ToolApprovalPending,
    ToolExecutionError,
)
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.options import ChatOptions
from raf.core.responses import (
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    ResponseFolder,
    UpdateKind,
)
from raf.core.tools import Tool, ToolContext, ToolResult, index_tools
from raf.core.usage import UsageDetails

DEFAULT_MAX_TOOL_ROUNDS = 10
DEFAULT_MAX_RESULT_CHARS = 64_000
CANCELLED_RESULT = "cancelled: the run was cancelled before this call finished"

T = TypeVar("T")


class FunctionInvokingChatClient:
    """Wraps a client and runs the tools the model calls until it answers in text.

    After `max_tool_rounds` rounds of tool calls the model is asked once more without
    tools, so every run ends with text. Calls of one model message run concurrently and
    their results keep call order. A raising tool, an unknown tool or invalid arguments
    become error results the model reads. If a call needs approval, nothing in its batch
    runs and the response ends with `FinishReason.AWAITING_APPROVAL`.
    """

    def __init__(
        self,
        inner: ChatClient,
        *,
        tools: Sequence[Tool] = (),
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        if max_tool_rounds < 0:
            raise ValueError("max_tool_rounds must be 0 or more")
        self.inner = inner
        self.tools = list(tools)
        self.max_tool_rounds = max_tool_rounds
        self.max_result_chars = max_result_chars

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        loop = _ToolLoop(self, messages, options, stream=False)
        async for _ in loop.run():
            pass
        return loop.response()

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        loop = _ToolLoop(self, messages, options, stream=True)
        async for update in loop.run():
            yield update

    def __repr__(self) -> str:
        return f"FunctionInvokingChatClient({self.inner!r}, max_tool_rounds={self.max_tool_rounds})"


class _ToolLoop:
    """The state of one request through the loop; `run()` yields updates when streaming."""

    def __init__(
        self,
        owner: FunctionInvokingChatClient,
        messages: Sequence[ChatMessage],
        options: ChatOptions,
        *,
        stream: bool,
    ) -> None:
        self.owner = owner
        self.options = options
        self.stream = stream
        self.conversation = list(messages)
        self.produced: list[ChatMessage] = []
        self.usage: UsageDetails | None = None
        self.finish_reason: FinishReason | None = None
        self.model_id: str | None = None
        all_tools = [*owner.tools, *options.tools] if owner.tools else options.tools
        self.tools = index_tools(all_tools, where="in this run")
        self.token = options.cancellation
        self._out: list[AgentResponseUpdate] = []
        self._continue = False

    def response(self) -> ChatResponse:
        return ChatResponse(
            messages=self.produced,
            finish_reason=self.finish_reason,
            usage=self.usage,
            model_id=self.model_id,
        )

    # -- the loop ---------------------------------------------------------------------

    async def run(self) -> AsyncIterator[AgentResponseUpdate]:
        """Yields updates when streaming; otherwise runs to the end without yielding."""
        rounds = 0
        if self.options.approval_responses:
            await self._resume_approved()
            for update in self._drain():
                yield update
            rounds = 1
            if self.finish_reason is not None:
                return
        max_rounds = self.owner.max_tool_rounds
        while True:
            if self._cancelled():
                await self._finish_cancelled()
                for update in self._drain():
                    yield update
                return
            use_tools = bool(self.tools) and rounds < max_rounds
            request_options = self.options
            if not use_tools and self.options.tools:
                request_options = replace(self.options, tools=[], tool_choice="none")
            reply: list[ChatMessage] = []
            try:
                if self.stream:
                    async for update in self._stream_model(request_options, reply):
                        yield update
                else:
                    await self._call_model(request_options, reply)
            except RunCancelledError:
                await self._finish_cancelled()
                for update in self._drain():
                    yield update
                return
            await self._after_reply(reply, use_tools, max_rounds)
            for update in self._drain():
                yield update
            if not self._continue:
                return
            rounds += 1

    async def _after_reply(
        self, reply: list[ChatMessage], use_tools: bool, max_rounds: int
    ) -> None:
        """Decide what the model's reply leads to: the end, a pause, or a round of tools."""
        self._continue = False  # only a completed round of tools goes on to the model
        calls = [c for m in reply for c in m.function_calls]
        if not calls:
            self.finish_reason = self.finish_reason or FinishReason.STOP
            await self._finished()
            return
        if not use_tools:
            # The model called tools although none were offered: answer each call so
            # the transcript stays consistent, and stop.
            note = (
                f"not run: the tool-round limit ({max_rounds}) was reached"
                if self.tools
                else "not run: no tools are available in this run"
            )
            results = [
                FunctionResultContent(call_id=c.call_id, error=note, name=c.name) for c in calls
            ]
            await self._add_results(results)
            self.finish_reason = FinishReason.OTHER
            await self._finished()
            return
        needing = [c for c in calls if self._needs_approval(c)]
        if needing:
            await self._pause_for_approval(reply[-1], needing)
            return
        if self._cancelled():
            await self._finish_cancelled()
            return
        self.finish_reason = None
        await self._run_batch(reply[-1], calls)
        self._continue = self.finish_reason is None

    def _emit(self, update: AgentResponseUpdate) -> None:
        """Queue an update for the stream (nothing is kept when not streaming)."""
        if self.stream:
            self._out.append(update)

    def _drain(self) -> list[AgentResponseUpdate]:
        out, self._out = self._out, []
        return out

    # -- model calls ------------------------------------------------------------------

    async def _call_model(self, options: ChatOptions, reply: list[ChatMessage]) -> None:
        response = await self._race(self.owner.inner.get_response(self.conversation, options))
        messages = response.messages
        for message in messages:
            if message.message_id is None:
                message.message_id = new_id("msg")
        self._account(response.usage, response.model_id)
        self.finish_reason = response.finish_reason
        self._keep(messages, reply)

    async def _stream_model(
        self, options: ChatOptions, reply: list[ChatMessage]
    ) -> AsyncIterator[AgentResponseUpdate]:
        folder = ResponseFolder()
        call_id = new_id("msg")
        stream = self.owner.inner.get_streaming_response(self.conversation, options)
        try:
            while True:
                try:
                    # With a token, each chunk is awaited against it, so a stalled
                    # model cannot hold a cancelled run.
                    if self.token is None:
                        update = await anext(stream)
                    else:
                        update = await self._race(anext(stream))
                except StopAsyncIteration:
                    break
                if self._cancelled():
                    raise RunCancelledError("cancelled")
                if not update.message_id and update.kind not in (
                    UpdateKind.USAGE,
                    UpdateKind.FINISHED,
                ):
                    update = replace(update, message_id=call_id)
                folder.add(update)
                if update.kind is UpdateKind.FINISHED:
                    continue  # the loop emits its own final update
                if update.kind is UpdateKind.USAGE:
                    continue  # summed and emitted once at the end
                yield update
        except RunCancelledError:
            await _aclose(stream)
            raise
        self._account(folder.usage, None)
        self.finish_reason = folder.finish_reason
        self._keep(folder.messages(), reply)

    def _keep(self, messages: list[ChatMessage], reply: list[ChatMessage]) -> None:
        self.conversation.extend(messages)
        self.produced.extend(messages)
        reply.extend(messages)

    def _account(self, usage: UsageDetails | None, model_id: str | None) -> None:
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage
        if model_id:
            self.model_id = model_id

    async def _finished(self) -> None:
        if not self.stream:
            return
        if self.usage is not None:
            self._emit(AgentResponseUpdate(kind=UpdateKind.USAGE, usage=self.usage))
        self._emit(AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=self.finish_reason))

    # -- tools ------------------------------------------------------------------------

    def _needs_approval(self, call: FunctionCallContent) -> bool:
        tool = self.tools.get(call.name)
        if tool is None or not tool.requires_approval:
            return False
        return tool.approval_required(call.arguments)

    async def _run_batch(self, message: ChatMessage, calls: Sequence[FunctionCallContent]) -> None:
        if self.stream:
            for call in calls:
                self._emit(
                    AgentResponseUpdate(
                        kind=UpdateKind.TOOL_CALLING,
                        role=Role.ASSISTANT,
                        call_id=call.call_id,
                        tool_name=call.name,
                    )
                )
        try:
            if len(calls) == 1:
                results = [await self._race(self._invoke(calls[0]))]
            else:
                results = list(await self._race(asyncio.gather(*(self._invoke(c) for c in calls))))
        except RunCancelledError:
            await self._finish_cancelled()
            return
        await self._add_results_or_pause(message, results)

    async def _add_results_or_pause(
        self, message: ChatMessage | None, results: Sequence[_Outcome]
    ) -> None:
        """Add the results; calls whose tool is waiting for a human (`ToolApprovalPending`)
        pause the run with an approval request each."""
        done = [r for r in results if isinstance(r, FunctionResultContent)]
        paused = [r for r in results if isinstance(r, ApprovalRequestContent)]
        if done:
            await self._add_results(done)
        if not paused:
            return
        if message is None:
            # resuming: the calls' message belongs to an earlier run; ask in a new one
            message = ChatMessage(role=Role.ASSISTANT, contents=[], message_id=new_id("msg"))
            self.produced.append(message)
        await self._pause_with(message, paused)

    async def _add_results(self, results: Sequence[FunctionResultContent]) -> None:
        message = ChatMessage(role=Role.TOOL, contents=list(results), message_id=new_id("msg"))
        self.conversation.append(message)
        self.produced.append(message)
        if self.stream:
            for result in results:
                self._emit(
                    AgentResponseUpdate(
                        kind=UpdateKind.TOOL_CALLED,
                        message_id=message.message_id or "",
                        role=Role.TOOL,
                        content=result,
                        call_id=result.call_id,
                        tool_name=result.name or "",
                    )
                )

    async def _invoke(self, call: FunctionCallContent) -> _Outcome:
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            return FunctionResultContent(
                call_id=call.call_id,
                name=call.name,
                error=f"unknown tool {call.name!r}; available tools: {known}",
            )
        if call.raw_arguments is not None and not call.arguments:
            return FunctionResultContent(
                call_id=call.call_id,
                name=call.name,
                error=f"arguments for {call.name!r} are not valid JSON: {call.raw_arguments!r}",
            )
        context = ToolContext(
            agent=self.options.agent,
            session=self.options.session,
            options=self.options,
            cancellation=self.token,
            call_id=call.call_id,
        )
        try:
            result: Any = tool.invoke(call.arguments, context)
            if inspect.isawaitable(result):  # a hand-written tool may invoke synchronously
                result = await result
        except ToolApprovalPending as exc:
            return ApprovalRequestContent(
                call_id=call.call_id,
                name=call.name,
                arguments=dict(call.arguments),
                reason=exc.reason,
            )
        except (ToolExecutionError, RunCancelledError) as exc:
            return FunctionResultContent(call_id=call.call_id, name=call.name, error=str(exc))
        except Exception as exc:
            return FunctionResultContent(
                call_id=call.call_id,
                name=call.name,
                error=f"tool {call.name!r} failed: {type(exc).__name__}: {exc}",
            )
        if not isinstance(result, ToolResult):  # a plain value is a successful result
            result = ToolResult(value=result)
        if result.error is not None:
            return FunctionResultContent(call_id=call.call_id, name=call.name, error=result.error)
        return FunctionResultContent(
            call_id=call.call_id, name=call.name, result=self._cap(result.value)
        )

    def _cap(self, value: Any) -> Any:
        limit = self.owner.max_result_chars
        if isinstance(value, str):
            text = value
        elif value is None or isinstance(value, bool | int | float):
            return value
        else:
            text = result_to_text(value)
            if len(text) <= limit:
                return value
        if len(text) <= limit:
            return value
        return (
            text[:limit] + f"\n[truncated: showing {limit} of {len(text)} characters; "
            "ask for a smaller part if you need more]"
        )

    # -- approval ---------------------------------------------------------------------

    async def _pause_for_approval(
        self, message: ChatMessage, needing: Sequence[FunctionCallContent]
    ) -> None:
        requests = [
            ApprovalRequestContent(call_id=c.call_id, name=c.name, arguments=dict(c.arguments))
            for c in needing
        ]
        await self._pause_with(message, requests)

    async def _pause_with(
        self, message: ChatMessage, requests: Sequence[ApprovalRequestContent]
    ) -> None:
        for request in requests:
            message.contents.append(request)
            if self.stream:
                self._emit(
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
        await self._finished()

    async def _resume_approved(self) -> None:
        """Run the batch that paused, honouring the human decisions."""
        pending = {p.call_id: p for p in self.options.pending_approvals}
        if not pending:
            pending = _pending_from_messages(self.conversation)
        decisions = check_approval_responses(pending, self.options.approval_responses)
        batch = _paused_batch(self.conversation, pending)
        if self._cancelled():
            await self._finish_cancelled()
            return
        to_run = [c for c in batch if c.call_id not in decisions or decisions[c.call_id].approved]
        denied = {cid: d for cid, d in decisions.items() if not d.approved}
        if self.stream:
            for call in to_run:
                self._emit(
                    AgentResponseUpdate(
                        kind=UpdateKind.TOOL_CALLING, call_id=call.call_id, tool_name=call.name
                    )
                )
        try:
            ran = list(await self._race(asyncio.gather(*(self._invoke(c) for c in to_run))))
        except RunCancelledError:
            await self._finish_cancelled()
            return
        by_id = {r.call_id: r for r in ran}
        results: list[_Outcome] = []
        for call in batch:
            if call.call_id in denied:
                reason = denied[call.call_id].reason
                note = "the user denied this call"
                results.append(
                    FunctionResultContent(
                        call_id=call.call_id,
                        name=call.name,
                        error=f"{note}: {reason}" if reason else note,
                    )
                )
            else:
                results.append(by_id[call.call_id])
        await self._add_results_or_pause(None, results)

    # -- cancellation -----------------------------------------------------------------

    def _cancelled(self) -> bool:
        return self.token is not None and self.token.cancelled

    async def _race(self, awaitable: Awaitable[T]) -> T:
        """Await, but stop at once when the run's token is cancelled."""
        token = self.token
        if token is None:
            return await awaitable
        if token.cancelled:
            if asyncio.isfuture(awaitable):
                awaitable.cancel()
            elif hasattr(awaitable, "close"):
                awaitable.close()
            raise RunCancelledError("cancelled")
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(token.wait())
        try:
            done, _ = await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            work.cancel()
            stop.cancel()
            raise
        if work in done:
            stop.cancel()
            return work.result()
        work.cancel()
        await asyncio.wait({work})  # let it unwind; its own outcome no longer matters
        raise RunCancelledError("cancelled")

    async def _finish_cancelled(self) -> None:
        """Give every call without a result a 'cancelled' result, then finish."""
        answered = {
            c.call_id
            for m in self.conversation
            for c in m.contents
            if isinstance(c, FunctionResultContent)
        }
        dangling = [
            c
            for m in self.conversation
            if m.role is Role.ASSISTANT
            for c in m.function_calls
            if c.call_id not in answered
        ]
        if dangling:
            results = [
                FunctionResultContent(call_id=c.call_id, name=c.name, error=CANCELLED_RESULT)
                for c in dangling
            ]
            await self._add_results(results)
        self.finish_reason = FinishReason.CANCELLED
        await self._finished()


_Outcome = FunctionResultContent | ApprovalRequestContent
"""What invoking one call gives: its result, or a request to pause for a human."""


def _pending_from_messages(messages: Sequence[ChatMessage]) -> dict[str, ApprovalRequestContent]:
    answered = {c.call_id for m in messages for c in m.function_results}
    return {
        c.call_id: c for m in messages for c in m.approval_requests if c.call_id not in answered
    }


def _paused_batch(
    messages: Sequence[ChatMessage], pending: dict[str, ApprovalRequestContent]
) -> list[FunctionCallContent]:
    """The calls of the message that paused; rebuilt from the requests if it is gone."""
    for message in reversed(messages):
        calls = message.function_calls
        if any(c.call_id in pending for c in calls):
            answered = {c.call_id for m in messages for c in m.function_results}
            batch = [c for c in calls if c.call_id not in answered]
            # The arguments that run are the ones recorded when the run paused.
            return [
                replace(c, arguments=dict(pending[c.call_id].arguments))
                if c.call_id in pending
                else c
                for c in batch
            ]
    return [
        FunctionCallContent(call_id=p.call_id, name=p.name, arguments=dict(p.arguments))
        for p in pending.values()
    ]


def check_approval_responses(
    pending: dict[str, ApprovalRequestContent],
    responses: Sequence[ApprovalResponseContent],
) -> dict[str, ApprovalResponseContent]:
    """Match responses to pending requests; refuse anything that does not fit exactly."""
    if not pending:
        raise ApprovalError(
            "approval responses were given but no tool call is waiting for approval in this session"
        )
    decisions: dict[str, ApprovalResponseContent] = {}
    for response in responses:
        request = pending.get(response.call_id)
        if request is None:
            waiting = ", ".join(sorted(pending)) or "none"
            raise ApprovalError(
                f"call id {response.call_id!r} is not waiting for approval in this session "
                f"(waiting: {waiting}); nothing was run"
            )
        if response.call_id in decisions:
            raise ApprovalError(f"two responses were given for call id {response.call_id!r}")
        if response.arguments is not None and _canonical(response.arguments) != _canonical(
            request.arguments
        ):
            raise ApprovalError(
                f"the response for call {response.call_id!r} ({request.name}) carries "
                "arguments that differ from the pending call; nothing was run"
            )
        decisions[response.call_id] = response
    missing = [cid for cid in pending if cid not in decisions]
    if missing:
        raise ApprovalError("every pending call needs an answer; missing: " + ", ".join(missing))
    return decisions


def _canonical(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


async def _aclose(stream: AsyncIterator[AgentResponseUpdate]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
