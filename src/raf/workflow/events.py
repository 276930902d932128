"""The typed event stream of a workflow run, each event JSON-ready through `to_dict`."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from raf.core.responses import AgentResponseUpdate
from raf.workflow.codec import encode


@dataclass(kw_only=True, slots=True)
class WorkflowEvent:
    """Base of every event a run emits."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the event's type name and its plain fields."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, AgentResponseUpdate):
                out[f.name] = value.to_dict()
            elif isinstance(value, BaseException):
                out[f.name] = f"{type(value).__name__}: {value}"
            else:
                out[f.name] = encode(value, strict=False)
        return out


@dataclass(kw_only=True, slots=True)
class WorkflowStarted(WorkflowEvent):
    """A run started, or resumed from `resumed_from`."""

    run_id: str
    workflow: str
    resumed_from: str | None = None


@dataclass(kw_only=True, slots=True)
class WorkflowCompleted(WorkflowEvent):
    """The run finished: no messages left and no input pending."""

    run_id: str
    outputs: list[Any] = field(default_factory=list)
    checkpoint_id: str | None = None


@dataclass(kw_only=True, slots=True)
class WorkflowPaused(WorkflowEvent):
    """The run waits for answers to `request_ids`; resume from `checkpoint_id`."""

    run_id: str
    checkpoint_id: str
    request_ids: list[str] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class WorkflowFailed(WorkflowEvent):
    """The run failed; `checkpoint_id` is the last good checkpoint."""

    run_id: str
    error: str
    node: str | None = None
    checkpoint_id: str | None = None


@dataclass(kw_only=True, slots=True)
class SuperstepStarted(WorkflowEvent):
    """A superstep begins with these nodes active."""

    superstep: int
    nodes: list[str] = field(default_factory=list)


@dataclass(kw_only=True, slots=True)
class SuperstepCompleted(WorkflowEvent):
    """A superstep ended and its checkpoint was written."""

    superstep: int
    checkpoint_id: str | None = None


@dataclass(kw_only=True, slots=True)
class NodeInvoked(WorkflowEvent):
    """A node's handler is called with a message (`attempt` counts retries from 1)."""

    node: str
    superstep: int
    attempt: int = 1


@dataclass(kw_only=True, slots=True)
class NodeStreaming(WorkflowEvent):
    """An update streamed by the agent inside a node, tagged with that node."""

    node: str
    update: AgentResponseUpdate


@dataclass(kw_only=True, slots=True)
class NodeCompleted(WorkflowEvent):
    """A node's handler returned; `result` is what it returned, if anything."""

    node: str
    superstep: int
    result: Any = None


@dataclass(kw_only=True, slots=True)
class NodeFailed(WorkflowEvent):
    """A node's attempt failed; `will_retry` says whether another attempt follows."""

    node: str
    superstep: int
    error: str
    attempt: int = 1
    will_retry: bool = False


@dataclass(kw_only=True, slots=True)
class NodeSkipped(WorkflowEvent):
    """A node exhausted its retries and its policy skips it."""

    node: str
    superstep: int
    error: str


@dataclass(kw_only=True, slots=True)
class NodeCompensated(WorkflowEvent):
    """A finished node's compensation ran after the run failed (`error` if it failed)."""

    node: str
    error: str | None = None


@dataclass(kw_only=True, slots=True)
class InputRequested(WorkflowEvent):
    """A node asks for input; answer it with `run(checkpoint_id=…, responses={id: …})`."""

    request_id: str
    node: str
    data: Any = None
    response_type: str = "str"


@dataclass(kw_only=True, slots=True)
class OutputEvent(WorkflowEvent):
    """A node yielded a workflow output."""

    node: str
    data: Any = None


@dataclass(kw_only=True, slots=True)
class LoopLimitReached(WorkflowEvent):
    """A loop-back edge hit its limit and, by its policy, stopped looping."""

    source: str
    target: str
    limit: int
