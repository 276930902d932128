"""Workflows: graphs of executors run in supersteps, with checkpoints and human input.

    from raf.workflow import WorkflowBuilder, executor

    @executor
    def upper(text: str) -> str:
        return text.upper()

    @executor
    def exclaim(text: str) -> str:
        return text + "!"

    workflow = WorkflowBuilder("shout", start=upper).add_edge(upper, exclaim).build()
    result = await workflow.run("hi")        # result.outputs == ["HI!"]

Nodes are `Executor` subclasses with `@handler` methods, functions, or agents
(`AgentExecutor`). Edges: `add_edge` (optional condition), `add_fan_out`, `add_fan_in`
(a barrier), `add_switch`, `add_loop` (the only way to close a cycle). Each superstep
ends with a checkpoint in a `CheckpointStore`; `run(checkpoint_id=…)` resumes it, in
any process. A node calls `ctx.request_input(data, response_type)` to pause the run
until `run(checkpoint_id=…, responses={request_id: answer})`. `workflow.as_agent()`
puts a workflow behind the agent interface.
"""

from raf.stores.checkpoints import (
    Checkpoint,
    CheckpointInfo,
    CheckpointStore,
    InMemoryCheckpointStore,
    JsonFileCheckpointStore,
    SqliteCheckpointStore,
    latest_checkpoint,
)
from raf.stores.postgres_checkpoints import PostgresCheckpointStore
from raf.workflow.agent_executor import AgentExecutor
from raf.workflow.as_agent import WorkflowAgent
from raf.workflow.builder import WorkflowBuilder
from raf.workflow.context import InputRequest, InputResponse, WorkflowContext
from raf.workflow.edges import (
    Case,
    Edge,
    FanInEdge,
    FanOutEdge,
    LoopEdge,
    NodePolicy,
    RetryPolicy,
    SwitchEdge,
)
from raf.workflow.errors import (
    AnswerClaimedError,
    CheckpointError,
    CheckpointNotFoundError,
    GraphChangedError,
    UnreachableNodeWarning,
    WorkflowError,
    WorkflowRunError,
    WorkflowTimeoutError,
    WorkflowValidationError,
)
from raf.workflow.events import (
    InputRequested,
    LoopLimitReached,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeInvoked,
    NodeSkipped,
    NodeStreaming,
    OutputEvent,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowPaused,
    WorkflowStarted,
)
from raf.workflow.executor import Executor, FunctionExecutor, executor, handler
from raf.workflow.workflow import Workflow, WorkflowRunResult

__all__ = [
    "AgentExecutor",
    "AnswerClaimedError",
    "Case",
    "Checkpoint",
    "CheckpointError",
    "CheckpointInfo",
    "CheckpointNotFoundError",
    "CheckpointStore",
    "Edge",
    "Executor",
    "FanInEdge",
    "FanOutEdge",
    "FunctionExecutor",
    "GraphChangedError",
    "InMemoryCheckpointStore",
    "InputRequest",
    "InputRequested",
    "InputResponse",
    "JsonFileCheckpointStore",
    "LoopEdge",
    "LoopLimitReached",
    "NodeCompensated",
    "NodeCompleted",
    "NodeFailed",
    "NodeInvoked",
    "NodePolicy",
    "NodeSkipped",
    "NodeStreaming",
    "OutputEvent",
    "PostgresCheckpointStore",
    "RetryPolicy",
    "SqliteCheckpointStore",
    "SuperstepCompleted",
    "SuperstepStarted",
    "SwitchEdge",
    "UnreachableNodeWarning",
    "Workflow",
    "WorkflowAgent",
    "WorkflowBuilder",
    "WorkflowCompleted",
    "WorkflowContext",
    "WorkflowError",
    "WorkflowEvent",
    "WorkflowFailed",
    "WorkflowPaused",
    "WorkflowRunError",
    "WorkflowRunResult",
    "WorkflowStarted",
    "WorkflowTimeoutError",
    "WorkflowValidationError",
    "executor",
    "handler",
    "latest_checkpoint",
]
