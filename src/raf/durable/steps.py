"""Chat and function middleware that run each model call and each tool call as a DBOS
step: the first time the work runs and its result is recorded as raf's JSON; when a
workflow is replayed after a crash, the recorded result comes back and nothing runs."""

from __future__ import annotations

from typing import Any

from dbos import DBOS

from raf.core.idempotency import idempotency_scope
from raf.core.middleware import (
    CallNext,
    ChatContext,
    FunctionInvocationContext,
    MiddlewareSet,
)
from raf.durable.codec import (
    response_from_json,
    response_to_json,
    tool_result_from_json,
    tool_result_to_json,
)


def in_workflow() -> bool:
    """Whether the caller runs inside a DBOS workflow (outside one, steps are plain calls)."""
    return DBOS.workflow_id is not None


class DurableChatMiddleware:
    """Every model call of a run inside a DBOS workflow is one recorded step."""

    middleware_kind = "chat"

    async def __call__(self, context: ChatContext, call_next: CallNext) -> None:
        if not in_workflow():
            await call_next()
            return

        async def model_call() -> dict[str, Any]:
            await call_next()
            assert context.result is not None  # the chain sets it or raises
            return response_to_json(context.result)

        name = f"model:{context.agent_name}"
        data = await DBOS.run_step_async({"name": name}, model_call)
        context.result = response_from_json(data)


class DurableFunctionMiddleware:
    """Every tool call of a run inside a DBOS workflow is one recorded step, so a tool
    that finished before a crash is not called again when the run resumes."""

    middleware_kind = "function"

    async def __call__(self, context: FunctionInvocationContext, call_next: CallNext) -> None:
        if not in_workflow():
            await call_next()
            return

        async def tool_call() -> dict[str, Any]:
            # a retried step (after a crash) repeats the call: the same workflow id and
            # call id give the tool the same idempotency key
            with idempotency_scope(f"durable:{DBOS.workflow_id}"):
                await call_next()
            return tool_result_to_json(context.result, context.tool_name)

        data = await DBOS.run_step_async({"name": f"tool:{context.tool_name}"}, tool_call)
        context.result = tool_result_from_json(data)


DURABLE_MIDDLEWARE = MiddlewareSet(
    chat=(DurableChatMiddleware(),), function=(DurableFunctionMiddleware(),)
)
"""The two step middleware, innermost-last when joined to an agent's own."""
