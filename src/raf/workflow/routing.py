"""Routing committed messages along edges: conditions, fan-out selectors, switch cases,
loop-back limits, fan-in barriers, and outputs for messages with nowhere to go."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from raf.workflow.edges import Edge, FanInEdge, FanOutEdge, LoopEdge, SwitchEdge
from raf.workflow.errors import WorkflowRunError
from raf.workflow.events import LoopLimitReached, OutputEvent, WorkflowEvent
from raf.workflow.state import Delivery, RunState

if TYPE_CHECKING:
    from raf.workflow.graph import WorkflowGraph


class Router:
    """Routes the messages of one run; the run's state is passed in."""

    def __init__(self, workflow: WorkflowGraph, emit: Callable[[WorkflowEvent], None]) -> None:
        self.wf = workflow
        self.emit = emit

    def output(self, st: RunState, node_id: str, data: Any) -> None:
        """Make `data` an output of the run."""
        st.outputs.append(data)
        self.emit(OutputEvent(node=node_id, data=data))

    def route(self, st: RunState, source: str, message: Any, only: str | None) -> None:
        """Send a committed message along the source's edges (only to `only` if set)."""
        wf = self.wf
        edges = wf.outgoing.get(source, ())
        if not edges:
            if only is not None:
                raise WorkflowRunError(
                    f"node {source!r} sent a message to {only!r} but has no edge to it",
                    node=source,
                )
            self.output(st, source, message)
            return
        handled = False
        named = only is None
        for edge in edges:
            targets = _edge_targets(edge)
            if only is not None:
                if only not in targets:
                    continue
                named = True
            if isinstance(edge, FanInEdge):
                handled = True
                self._fan_in(st, edge, source, message)
                continue
            accepting = [
                t
                for t in targets
                if (only is None or t == only) and wf.nodes[t].find_handler(message) is not None
            ]
            if not accepting:
                continue
            handled = True
            for target in self._choose(st, edge, message, accepting):
                st.pending.append(Delivery(target=target, message=message, source=source))
        if not named:
            raise WorkflowRunError(
                f"node {source!r} sent a message to {only!r} but has no edge to it", node=source
            )
        if not handled:
            raise WorkflowRunError(
                f"node {source!r} sent a message of type {type(message).__name__} that no "
                f"node on its edges handles ({', '.join(_all_targets(edges))})",
                node=source,
            )

    def _choose(self, st: RunState, edge: Any, message: Any, accepting: list[str]) -> list[str]:
        """The targets an edge delivers `message` to (conditions, cases, loop limits)."""
        try:
            if isinstance(edge, Edge):
                ok = edge.condition is None or bool(edge.condition(message))
                return [edge.target] if ok else []
            if isinstance(edge, FanOutEdge):
                if edge.selector is None:
                    return accepting
                picked = list(edge.selector(message, list(edge.targets)))
                bad = [t for t in picked if t not in edge.targets]
                if bad:
                    raise WorkflowRunError(
                        f"{edge.key}: the selector picked {bad}, which are not its targets",
                        node=edge.source,
                    )
                return [t for t in picked if t in accepting]
            if isinstance(edge, SwitchEdge):
                for case in edge.cases:
                    if case.target in accepting and case.condition(message):
                        return [case.target]
                return [edge.default] if edge.default in accepting else []
            if isinstance(edge, LoopEdge):
                if edge.condition is not None and not edge.condition(message):
                    return []
                count = st.loop_counts.get(edge.key, 0) + 1
                if count > edge.max_iterations:
                    if edge.on_limit == "stop":
                        self.emit(
                            LoopLimitReached(
                                source=edge.source, target=edge.target, limit=edge.max_iterations
                            )
                        )
                        return []
                    raise WorkflowRunError(
                        f"{edge.key} reached its limit of {edge.max_iterations} iteration(s)",
                        node=edge.source,
                    )
                st.loop_counts[edge.key] = count
                return [edge.target]
        except WorkflowRunError:
            raise
        except Exception as exc:
            raise WorkflowRunError(
                f"the condition of {edge.key} failed: {type(exc).__name__}: {exc}",
                node=edge.source,
            ) from exc
        raise AssertionError(f"unknown edge {edge!r}")

    def _fan_in(self, st: RunState, edge: FanInEdge, source: str, message: Any) -> None:
        buffers = st.fan_in.setdefault(edge.key, {})
        waiting = buffers.get(source)
        if waiting is None:
            buffers[source] = [message]
        else:
            waiting.append(message)

    def release_barriers(self, st: RunState) -> None:
        """Deliver each fan-in whose sources have all sent: every message they sent up
        to the end of this superstep, in the order of the sources."""
        for edge in self.wf.fan_ins:
            buffers = st.fan_in.get(edge.key)
            if buffers is not None and len(buffers) == len(edge.sources):
                joined = [m for s in edge.sources for m in buffers[s]]
                del st.fan_in[edge.key]
                st.pending.append(Delivery(target=edge.target, message=joined))


def _edge_targets(edge: Any) -> list[str]:
    if isinstance(edge, FanOutEdge | SwitchEdge):
        return list(edge.targets)
    return [edge.target]


def _all_targets(edges: Any) -> list[str]:
    return [t for e in edges for t in _edge_targets(e)]
