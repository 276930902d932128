"""The checked graph of a workflow: its executors and edges, and what a run asks of it
(where messages go, which types a checkpoint may bring back, how a node is compensated).

The runner, its state and its routing read this graph; `Workflow` (which runs it) is
built on it, so nothing here knows how a run is driven.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin, get_type_hints

from raf.stores.checkpoints import CheckpointStore, InMemoryCheckpointStore
from raf.workflow.codec import encode, type_key
from raf.workflow.context import InputRequest, InputResponse
from raf.workflow.edges import EdgeGroup, FanInEdge, NodePolicy, sources_of
from raf.workflow.errors import WorkflowError, WorkflowRunError
from raf.workflow.executor import Executor
from raf.workflow.typeinfo import ANY, matches

_BUILTIN_TYPES: dict[str, type] = {
    t.__name__: t for t in (str, int, float, bool, list, dict, type(None))
}
_BUILTIN_TYPES["Any"] = object


class WorkflowGraph:
    """A graph of executors joined by edges, checked at build, with what a run asks of it:
    where messages go, which types a checkpoint may hold, how a node is compensated."""

    def __init__(
        self,
        *,
        name: str,
        start: str,
        nodes: dict[str, Executor],
        edges: list[EdgeGroup],
        policies: dict[str, NodePolicy],
        max_concurrency: int,
        max_supersteps: int,
        timeout: float | None,
        checkpoint_store: CheckpointStore | None,
        description: str = "",
    ) -> None:
        self.name = name
        self.description = description
        self.start = start
        self.nodes = nodes
        self.edges = edges
        self.policies = policies
        self.max_concurrency = max_concurrency
        self.max_supersteps = max_supersteps
        self.timeout = timeout
        self.checkpoint_store: CheckpointStore = checkpoint_store or InMemoryCheckpointStore()
        self.fan_ins = [e for e in edges if isinstance(e, FanInEdge)]
        self.outgoing: dict[str, list[EdgeGroup]] = {}
        for edge in edges:
            for source in sources_of(edge):
                self.outgoing.setdefault(source, []).append(edge)
        self.types = _collect_types(nodes)
        self.graph_summary: dict[str, Any] = {
            "start": start,
            "nodes": {node_id: node.describe() for node_id, node in nodes.items()},
            "edges": [edge.describe() for edge in edges],
        }
        self.fingerprint = hashlib.sha256(
            json.dumps(self.graph_summary, sort_keys=True).encode()
        ).hexdigest()[:16]
        self.stateful = {
            node_id: node
            for node_id, node in nodes.items()
            if type(node).snapshot_state is not Executor.snapshot_state
        }
        """The nodes that keep state of their own (their snapshots go into checkpoints)."""
        self.initial_states: dict[str, Any] = {
            node_id: encode(state)
            for node_id, node in self.stateful.items()
            if (state := node.snapshot_state()) is not None
        }
        self._responders = {
            node_id
            for node_id, node in nodes.items()
            if any(
                t is Any or t is InputResponse or get_origin(t) is InputResponse
                for t in node.input_types
            )
        }

    def has_compensation(self, node_id: str) -> bool:
        policy = self.policies.get(node_id)
        return (policy is not None and policy.compensate is not None) or self.nodes[
            node_id
        ].has_compensation

    def compensation(self, node_id: str) -> Callable[[Any], Any]:
        policy = self.policies.get(node_id)
        if policy is not None and policy.compensate is not None:
            return policy.compensate
        return self.nodes[node_id].compensate

    def accepts_responses(self, node_id: str) -> bool:
        return node_id in self._responders

    def register_response_type(self, tp: type[Any]) -> str:
        """The stored name of a request's answer type; it must be one the graph knows, so
        that the answer can be checked in any process."""
        if tp is object or tp is Any:
            return "Any"
        origin = get_origin(tp)
        if origin is not None:
            tp = origin  # list[str] is checked as a list
        for name, builtin in _BUILTIN_TYPES.items():
            if tp is builtin:
                return name
        name = getattr(tp, "__qualname__", repr(tp))
        key = type_key(tp) if isinstance(tp, type) else name
        if key not in self.types:
            raise WorkflowRunError(
                f"request_input's response_type {name} is not a type this graph "
                f"declares: give the node a handler for InputResponse[{name}]"
            )
        return key

    def check_answer(self, request: InputRequest, value: Any) -> Any:
        """The answer as the requested type, or a clear error naming the request."""
        name = request.response_type
        tp = _BUILTIN_TYPES.get(name) or self.types.get(name)
        if tp is None or tp is object:
            return value
        if not matches(value, tp) and isinstance(value, dict):
            try:
                if dataclasses.is_dataclass(tp):
                    return tp(**value)
                validate = getattr(tp, "model_validate", None)
                if callable(validate):
                    return validate(value)
            except Exception as exc:
                raise WorkflowError(
                    f"the answer to request {request.request_id!r} is not a valid "
                    f"{tp.__qualname__}: {exc}"
                ) from None
        if not matches(value, tp):
            raise WorkflowError(
                f"the answer to request {request.request_id!r} (from node {request.node!r}) "
                f"must be {tp.__qualname__}, not {type(value).__name__}"
            )
        return value


def _collect_types(nodes: Mapping[str, Executor]) -> dict[str, type]:
    """Every dataclass, enum and pydantic model the handlers' types mention, by stored
    name: the only types a checkpoint may bring back."""
    found: dict[str, type] = {
        type_key(InputRequest): InputRequest,
        type_key(InputResponse): InputResponse,
    }

    def visit(tp: Any) -> None:
        if tp is Any:
            return
        origin = get_origin(tp)
        if origin is not None:
            for arg in get_args(tp):
                visit(arg)
            return
        if not isinstance(tp, type):
            return
        is_model = callable(getattr(tp, "model_validate", None))
        if not (dataclasses.is_dataclass(tp) or issubclass(tp, enum.Enum) or is_model):
            return
        key = type_key(tp)
        if key in found:
            return
        found[key] = tp
        if dataclasses.is_dataclass(tp) or is_model:
            try:
                hints = get_type_hints(tp)
            except Exception:
                return
            for hint in hints.values():
                visit(hint)

    for node in nodes.values():
        for spec in node.handlers():
            for tp in (*spec.input_types, *(spec.output_types if spec.output_types != ANY else ())):
                visit(tp)
        for tp in getattr(node, "extra_types", ()):
            visit(tp)
    return found
