"""Durable runs on DBOS (`raf-agents[durable]`): each agent run a DBOS workflow, each
model call and tool call a recorded step, approvals awaited durably, runs queued per
agent and spread over workers sharing one PostgreSQL system database."""

try:
    import dbos as _dbos  # noqa: F401  (checked first, so the error names the extra)
except ImportError as _missing:
    from raf.core.errors import MissingExtraError

    raise MissingExtraError("durable runs", "durable", "dbos") from _missing

from raf.durable.codec import (
    response_from_json,
    response_to_json,
    tool_result_from_json,
    tool_result_to_json,
)
from raf.durable.runtime import (
    APPROVALS_TOPIC,
    DURABLE_KEY,
    DurableRunError,
    DurableRuntime,
    TurnOutcome,
    current_runtime,
    default_executor_id,
    queue_name,
    sqlite_url,
)
from raf.durable.serializer import JsonSerializer, RecordedError, UnsafeRecordError
from raf.durable.steps import DURABLE_MIDDLEWARE, DurableChatMiddleware, DurableFunctionMiddleware
from raf.durable.workflows import WorkflowFactory, WorkflowOutcome, workflow_queue_name

__all__ = [
    "APPROVALS_TOPIC",
    "DURABLE_KEY",
    "DURABLE_MIDDLEWARE",
    "DurableChatMiddleware",
    "DurableFunctionMiddleware",
    "DurableRunError",
    "DurableRuntime",
    "JsonSerializer",
    "RecordedError",
    "TurnOutcome",
    "UnsafeRecordError",
    "WorkflowFactory",
    "WorkflowOutcome",
    "current_runtime",
    "default_executor_id",
    "queue_name",
    "response_from_json",
    "response_to_json",
    "sqlite_url",
    "tool_result_from_json",
    "tool_result_to_json",
    "workflow_queue_name",
]
