"""What a handler gets besides its message: send on, yield outputs, ask for input, state."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from raf.core.messages import new_id
from raf.workflow.events import WorkflowEvent

OutT = TypeVar("OutT")
T = TypeVar("T")


@dataclass(kw_only=True, slots=True)
class InputRequest:
    """A question a node put to the outside world; the run pauses until it is answered."""

    request_id: str
    node: str
    data: Any = None
    response_type: str = "str"
    """Name of the type the answer must have (a key of the graph's known types)."""


@dataclass(kw_only=True, slots=True)
class InputResponse(Generic[T]):
    """The answer to a request, delivered to the node that asked: declare a handler for it."""

    request_id: str
    data: Any = None
    """What was asked (the request's data)."""
    response: T


@dataclass(kw_only=True, slots=True)
class Sent:
    """A message a handler sent, routed when its superstep commits."""

    message: Any
    target: str | None = None


@dataclass(kw_only=True, slots=True)
class InvocationEffects:
    """Everything one handler call did, kept apart until the call succeeds."""

    sent: list[Sent] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    requests: list[InputRequest] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)


class WorkflowContext(Generic[OutT]):
    """The handle a handler uses to act on the run; `WorkflowContext[T]` declares what it
    sends, which the builder checks against the handlers at the other end of its edges."""

    __slots__ = ("_effects", "_emit", "_register_type", "_shared", "node_id", "run_id", "superstep")

    def __init__(
        self,
        *,
        node_id: str,
        run_id: str,
        superstep: int,
        shared_state: dict[str, Any],
        emit: Callable[[WorkflowEvent], None],
        register_type: Callable[[type], str],
    ) -> None:
        self.node_id = node_id
        self.run_id = run_id
        self.superstep = superstep
        self._shared = shared_state
        self._emit = emit
        self._register_type = register_type
        self._effects = InvocationEffects()

    async def send_message(self, message: OutT, *, target: str | None = None) -> None:
        """Send `message` along this node's edges (only to `target` when given)."""
        self._effects.sent.append(Sent(message=message, target=target))

    async def yield_output(self, data: Any) -> None:
        """Make `data` an output of the workflow run."""
        self._effects.outputs.append(data)

    async def request_input(self, data: Any, response_type: type[Any] = str) -> str:
        """Ask for input; the run pauses, and the answer (of `response_type`) comes back to
        this node as an `InputResponse`. Returns the request id."""
        request = InputRequest(
            request_id=new_id("req"),
            node=self.node_id,
            data=data,
            response_type=self._register_type(response_type),
        )
        self._effects.requests.append(request)
        return request.request_id

    def get_state(self, key: str, default: Any = None) -> Any:
        """A value of the run's shared state (JSON-ready values; kept in checkpoints)."""
        if key in self._effects.state:
            return self._effects.state[key]
        return self._shared.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Set a value of the shared state; visible to others when this superstep ends."""
        self._effects.state[key] = value

    def emit(self, event: WorkflowEvent) -> None:
        """Put an event on the run's stream now (used for streaming agent updates)."""
        self._emit(event)
