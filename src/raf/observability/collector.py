"""Finished spans kept in memory and read back as runs: a span tree per agent run, with
durations, for a web page or a test to show (`InMemoryTraces`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import StatusCode

_OPERATION = "gen_ai.operation.name"
_CONVERSATION = "gen_ai.conversation.id"
_AGENT = "gen_ai.agent.name"


@dataclass(kw_only=True, slots=True)
class SpanEvent:
    """Something that happened inside a span (a tripped guardrail, an exception)."""

    name: str
    time: float
    """Seconds since the epoch."""
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class SpanNode:
    """One finished span and the spans under it, oldest first."""

    name: str
    span_id: str
    parent_id: str | None
    trace_id: str
    start: float
    """Seconds since the epoch."""
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    status: str = "unset"
    """"ok", "error" or "unset"."""
    status_description: str | None = None
    events: list[SpanEvent] = field(default_factory=list)
    children: list[SpanNode] = field(default_factory=list)

    @property
    def duration(self) -> float:
        """Seconds the span lasted."""
        return self.end - self.start

    @property
    def operation(self) -> str | None:
        """`invoke_agent`, `chat` or `execute_tool` (the span's gen_ai.operation.name)."""
        value = self.attributes.get(_OPERATION)
        return str(value) if value is not None else None

    def walk(self) -> list[SpanNode]:
        """This span and every span under it, depth first."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, children included."""
        return {
            "name": self.name,
            "span_id": self.span_id,
            "parent_id": self.parent_id,
            "trace_id": self.trace_id,
            "start": self.start,
            "end": self.end,
            "duration": self.duration,
            "attributes": dict(self.attributes),
            "status": self.status,
            "status_description": self.status_description,
            "events": [
                {"name": e.name, "time": e.time, "attributes": dict(e.attributes)}
                for e in self.events
            ],
            "children": [c.to_dict() for c in self.children],
        }


@dataclass(kw_only=True, slots=True)
class RunTrace:
    """One agent run that finished: its `invoke_agent` span and everything under it."""

    run_id: str
    """The run's root span id (16 hex digits)."""
    session_id: str | None
    agent_name: str | None
    root: SpanNode

    @property
    def duration(self) -> float:
        return self.root.duration

    @property
    def failed(self) -> bool:
        return self.root.status == "error"


class InMemoryTraces(SpanProcessor):
    """A span processor that keeps the spans of the last `max_traces` traces and answers
    with runs, by session: `instrument(agent, traces=traces)`, then `traces.runs(session_id)`.
    """

    def __init__(self, *, max_traces: int = 1000) -> None:
        if max_traces < 1:
            raise ValueError(f"max_traces must be 1 or more, got {max_traces}")
        self.max_traces = max_traces
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, dict[str, SpanNode]] = OrderedDict()
        self._traced: dict[str, set[str]] = {}
        """Per trace, the raf spans that started (a run's root is one whose parent is not
        among them; its parent may still be running when it ends)."""

    # -- SpanProcessor ------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        context = span.get_span_context()
        if context is None or not (span.attributes or {}).get(_OPERATION):
            return
        with self._lock:
            self._traced.setdefault(_hex(context.trace_id, 32), set()).add(
                _hex(context.span_id, 16)
            )

    def on_end(self, span: ReadableSpan) -> None:
        node = _node(span)
        if node is None:
            return
        with self._lock:
            spans = self._traces.get(node.trace_id)
            if spans is None:
                spans = self._traces[node.trace_id] = {}
                while len(self._traces) > self.max_traces:
                    dropped, _ = self._traces.popitem(last=False)
                    self._traced.pop(dropped, None)
            spans[node.span_id] = node

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # -- reading ------------------------------------------------------------------------

    def runs(self, session_id: str | None = None) -> list[RunTrace]:
        """The finished runs, oldest first; only those of `session_id` when given. A
        sub-agent's run is part of the run that called it, not a run of its own."""
        found: list[RunTrace] = []
        with self._lock:
            traces = [
                (dict(spans), set(self._traced.get(tid, ()))) for tid, spans in self._traces.items()
            ]
        for spans, traced in traces:
            for root in _roots(spans, traced):
                tree = _tree(root, spans)
                session = root.attributes.get(_CONVERSATION)
                if session_id is not None and session != session_id:
                    continue
                agent = root.attributes.get(_AGENT)
                found.append(
                    RunTrace(
                        run_id=root.span_id,
                        session_id=str(session) if session is not None else None,
                        agent_name=str(agent) if agent is not None else None,
                        root=tree,
                    )
                )
        found.sort(key=lambda r: r.root.start)
        return found

    def run(self, run_id: str) -> RunTrace | None:
        """The finished run whose root span has this id; None when not kept (or unknown)."""
        return next((r for r in self.runs() if r.run_id == run_id), None)

    def spans(self) -> list[SpanNode]:
        """Every span kept, flat (no children filled in), in the order they ended."""
        with self._lock:
            return [_copy(node) for spans in self._traces.values() for node in spans.values()]

    def clear(self) -> None:
        with self._lock:
            self._traces.clear()
            self._traced.clear()


def _hex(value: int, width: int) -> str:
    return format(value, f"0{width}x")


def _node(span: ReadableSpan) -> SpanNode | None:
    context = span.context
    if context is None or span.start_time is None or span.end_time is None:
        return None
    status = span.status.status_code
    return SpanNode(
        name=span.name,
        span_id=_hex(context.span_id, 16),
        parent_id=_hex(span.parent.span_id, 16) if span.parent is not None else None,
        trace_id=_hex(context.trace_id, 32),
        start=span.start_time / 1e9,
        end=span.end_time / 1e9,
        attributes=dict(span.attributes or {}),
        status={StatusCode.OK: "ok", StatusCode.ERROR: "error"}.get(status, "unset"),
        status_description=span.status.description,
        events=[
            SpanEvent(name=e.name, time=e.timestamp / 1e9, attributes=dict(e.attributes or {}))
            for e in span.events
        ],
    )


def _copy(node: SpanNode) -> SpanNode:
    return SpanNode(
        name=node.name,
        span_id=node.span_id,
        parent_id=node.parent_id,
        trace_id=node.trace_id,
        start=node.start,
        end=node.end,
        attributes=dict(node.attributes),
        status=node.status,
        status_description=node.status_description,
        events=list(node.events),
    )


def _roots(spans: dict[str, SpanNode], traced: set[str]) -> list[SpanNode]:
    return [
        s
        for s in spans.values()
        if s.operation == "invoke_agent" and (s.parent_id is None or s.parent_id not in traced)
    ]


def _tree(root: SpanNode, spans: dict[str, SpanNode]) -> SpanNode:
    children: dict[str, list[SpanNode]] = {}
    for span in spans.values():
        if span.parent_id is not None:
            children.setdefault(span.parent_id, []).append(span)

    def build(node: SpanNode) -> SpanNode:
        copy = _copy(node)
        kids = sorted(children.get(node.span_id, []), key=lambda s: s.start)
        copy.children = [build(k) for k in kids]
        return copy

    return build(root)
