"""Running one tool call: function middleware, the tool's timeout, errors as results."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from types import CoroutineType
from typing import Any

from raf.agent.run.eager import run_all
from raf.agent.run.run import Outcome, Run
from raf.core import builders
from raf.core.contents import (
    ApprovalRequestContent,
    FunctionCallContent,
    FunctionResultContent,
    result_to_text,
)
from raf.core.errors import (
    ModelRetry,
    RafError,
    RunCancelledError,
    ToolApprovalPending,
    ToolExecutionError,
)
from raf.core.function_tool import FunctionTool
from raf.core.idempotency import key_scope
from raf.core.middleware import FunctionInvocationContext, run_chain
from raf.core.tools import Tool, ToolContext, ToolResult, tool_timeout

_UNREAD = ToolContext()
"""The context handed to a function tool whose function declares none (never read)."""


class _ToolAborted(Exception):
    """Carries a BaseException a tool raised (KeyboardInterrupt, SystemExit, …) out of its
    task as an ordinary exception, so asyncio does not stop the event loop with it."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        super().__init__(repr(error))


async def invoke_all(run: Run, calls: Sequence[FunctionCallContent]) -> list[Outcome]:
    """Run calls concurrently; outcomes keep the calls' order. A tool that raises a
    BaseException cancels its siblings and the exception leaves the run."""
    try:
        context = run.context
        if context.cancellation is None:
            # No token to race against: calls that finish at once cost no task, and the
            # sync calls share one wake-up of the loop.
            # a call joins when it waits for nothing but raf's tool pool (a sync
            # function tool with no timeout around it); plain loops on this path: a
            # comprehension is a function call of its own
            joins: list[bool] = []
            if not context.middleware.function and context.tool_timeout is None:
                tools = run.tools
                for call in calls:
                    tool = tools.get(call.name)
                    joins.append(
                        isinstance(tool, FunctionTool)
                        and tool.runs_in_tool_thread
                        and tool.timeout is None
                    )
            if len(calls) == 1 and not (joins and joins[0]):
                return [await invoke(run, calls[0])]  # what `run_all` does with one call
            started = []
            for call in calls:
                started.append(invoke(run, call))
            return await run_all(started, joins)
        if len(calls) == 1:
            return [await run.race(invoke(run, calls[0]))]
        tasks = [asyncio.ensure_future(invoke(run, c)) for c in calls]
        try:
            return list(await run.race(asyncio.gather(*tasks)))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    except _ToolAborted as exc:
        raise exc.error from None


async def invoke(run: Run, call: FunctionCallContent) -> Outcome:
    """One call, through the function middleware when there is any."""
    tool = run.tools.get(call.name)
    chain = run.context.middleware.function
    try:
        if not chain:
            result = await _run_tool(run, tool, call, call.arguments)
        else:
            context = FunctionInvocationContext(
                run=run.context, call=call, tool=tool, arguments=dict(call.arguments)
            )

            async def final(ctx: FunctionInvocationContext) -> None:
                ctx.result = await _run_tool(run, ctx.tool, ctx.call, ctx.arguments)

            await run_chain(chain, context, final)
            if context.result is None:
                raise RafError(
                    f"a function middleware returned without a result for {call.name!r}: "
                    "call call_next() or set result"
                )
            result = context.result
    except ToolApprovalPending as exc:
        return ApprovalRequestContent(
            call_id=call.call_id, name=call.name, arguments=dict(call.arguments), reason=exc.reason
        )
    if not isinstance(result, ToolResult):  # a middleware may set a plain value
        result = ToolResult(value=result)
    if result.error is not None:
        return FunctionResultContent(call_id=call.call_id, name=call.name, error=result.error)
    value = result.value
    kind = type(value)  # `_cap` inline for the short texts and numbers most tools return
    if kind not in _UNCUT and (kind is not str or len(value) > run.max_result_chars):
        value = _cap(value, run.max_result_chars)
    return builders.function_result(call.call_id, call.name, value)


async def _run_tool(
    run: Run, tool: Tool | None, call: FunctionCallContent, arguments: Mapping[str, Any]
) -> ToolResult:
    """The tool itself: what goes wrong becomes an error result the model reads."""
    if tool is None:
        known = ", ".join(sorted(run.tools)) or "none"
        return ToolResult.fail(f"unknown tool {call.name!r}; available tools: {known}")
    if call.raw_arguments is not None and not call.arguments:
        return ToolResult.fail(
            f"arguments for {call.name!r} are not valid JSON: {call.raw_arguments!r}"
        )
    context = run.context
    tool_context: ToolContext | None = None
    if type(tool) is FunctionTool:
        # most function tools declare no timeout: `tool_timeout` only when one does
        timeout = (tool.timeout and tool_timeout(tool)) or context.tool_timeout
        if not tool.reads_context:
            tool_context = _UNREAD  # its function takes no context: `invoke` never reads it
    else:
        timeout = tool_timeout(tool) or context.tool_timeout
    if tool_context is None:
        tool_context = ToolContext(
            agent=context.agent,
            session=context.session,
            options=run.chat_options,
            cancellation=context.cancellation,
            call_id=call.call_id,
            run=context,
            key_scope=key_scope(
                session_id=context.session.id if context.session else None,
                run_id="" if context.session else context.run_id,
            ),
        )
    try:
        if timeout is None:
            value: Any = tool.invoke(arguments, tool_context)
            # a coroutine, as `invoke` is declared; a hand-written tool may answer at once
            if type(value) is CoroutineType or inspect.isawaitable(value):
                value = await value
        else:
            async with asyncio.timeout(timeout) as scope:
                try:
                    value = tool.invoke(arguments, tool_context)
                    if inspect.isawaitable(value):
                        value = await value
                except TimeoutError:
                    if scope.expired():
                        raise
                    raise ToolExecutionError(f"tool {call.name!r} failed: TimeoutError") from None
    except ToolApprovalPending:
        raise
    except TimeoutError:
        return ToolResult.fail(
            f"tool {call.name!r} timed out after {timeout:g} s and was stopped; "
            "try a smaller request or another way"
        )
    except (ToolExecutionError, RunCancelledError) as exc:
        return ToolResult.fail(str(exc))
    except ModelRetry as exc:  # the tool's own words to the model, to call it better
        return ToolResult.fail(exc.message)
    except Exception as exc:
        return ToolResult.fail(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}")
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        raise _ToolAborted(exc) from exc
    return value if isinstance(value, ToolResult) else ToolResult(value=value)


_UNCUT = frozenset({int, float, bool, type(None)})
"""Result types `_cap` returns as they are, whatever the limit."""


def _cap(value: Any, limit: int) -> Any:
    """A result the model reads, cut to `limit` characters with a note when longer."""
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, bool | int | float):
        return value
    else:
        text = result_to_text(value)
    if len(text) <= limit:
        return value
    return (
        text[:limit] + f"\n[truncated: showing {limit} of {len(text)} characters; "
        "ask for a smaller part if you need more]"
    )
