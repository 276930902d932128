"""What the UI shows of each run: the exact requests the model saw, and a span tree with
durations, recorded by agent, chat and function middleware on the hosted agents."""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from raf.core.messages import Role
from raf.core.middleware import (
    AgentRunContext,
    CallNext,
    ChatContext,
    FunctionInvocationContext,
    agent_middleware,
    chat_middleware,
    function_middleware,
)
from raf.core.tokens import EstimatingCounter

RUNS_PER_SESSION = 50
"""Runs kept per session (oldest dropped first); the record is in memory only."""

SESSIONS_KEPT = 200
"""Sessions whose runs are kept (the least recently run dropped first)."""


@dataclass(kw_only=True, slots=True)
class Span:
    """One timed step of a run: the run itself, a model call or a tool call."""

    id: str
    parent: str | None
    name: str
    kind: str
    start: float
    duration_ms: float | None = None
    error: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class RunRecord:
    """One agent run in a session: its spans and the model requests it made."""

    id: str
    agent: str
    session_id: str
    started: float
    spans: list[Span] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "session_id": self.session_id,
            "started": self.started,
            "spans": [asdict(s) for s in self.spans],
            "requests": self.requests,
        }


def _tool_entry(tool: Any) -> dict[str, Any]:
    return {
        "name": str(getattr(tool, "name", "")),
        "kind": str(getattr(tool, "kind", "")),
        "description": str(getattr(tool, "description", "")),
        "parameters": getattr(tool, "parameters", {}),
    }


def _options_entry(context: ChatContext) -> dict[str, Any]:
    options = context.options
    out: dict[str, Any] = {}
    for name in ("model_id", "temperature", "max_tokens", "top_p", "seed", "stop"):
        value = getattr(options, name, None)
        if value is not None:
            out[name] = value
    if options.tool_choice is not None:
        out["tool_choice"] = str(options.tool_choice)
    if options.response_format is not None:
        out["response_format"] = options.response_format
    return out


class TurnRecorder:
    """Middleware that keeps, per session, the last runs' spans and model requests."""

    def __init__(
        self, runs_per_session: int = RUNS_PER_SESSION, sessions_kept: int = SESSIONS_KEPT
    ) -> None:
        self.runs_per_session = runs_per_session
        self.sessions_kept = sessions_kept
        self._sessions: dict[str, deque[RunRecord]] = {}
        self._open: dict[str, tuple[RunRecord, Span]] = {}
        self._counter = EstimatingCounter()

    def middleware(self) -> list[Any]:
        """The three middleware to run on every hosted agent's runs."""

        @agent_middleware
        async def record_run(context: AgentRunContext, call_next: CallNext) -> None:
            await self._around_run(context, call_next)

        @chat_middleware
        async def record_request(context: ChatContext, call_next: CallNext) -> None:
            await self._around_model(context, call_next)

        @function_middleware
        async def record_tool(context: FunctionInvocationContext, call_next: CallNext) -> None:
            await self._around_tool(context, call_next)

        return [record_run, record_request, record_tool]

    def runs(self, session_id: str) -> list[dict[str, Any]]:
        """The recorded runs of a session, oldest first."""
        return [r.to_dict() for r in self._sessions.get(session_id, ())]

    def forget(self, session_id: str) -> None:
        """Drop a session's record (the session was deleted)."""
        self._sessions.pop(session_id, None)

    # -- the three seams -------------------------------------------------------------

    async def _around_run(self, context: AgentRunContext, call_next: CallNext) -> None:
        session = context.session
        session_id = session.id if session is not None else ""
        now = time.time()
        record = RunRecord(
            id=uuid.uuid4().hex[:16], agent=context.agent_name, session_id=session_id, started=now
        )
        span = Span(
            id=record.id,
            parent=None,
            name=f"run {context.agent_name}",
            kind="run",
            start=now,
            attributes={"stream": context.stream, "new_messages": len(context.messages)},
        )
        record.spans.append(span)
        runs = self._sessions.pop(session_id, None) or deque(maxlen=self.runs_per_session)
        runs.append(record)
        self._sessions[session_id] = runs  # dicts keep order: this session is newest now
        while len(self._sessions) > self.sessions_kept:
            del self._sessions[next(iter(self._sessions))]
        self._open[session_id] = (record, span)
        with _timed(span):
            try:
                await call_next()
            finally:
                if self._open.get(session_id, (None,))[0] is record:
                    del self._open[session_id]
                result = context.result
                if result is not None:
                    span.attributes["finish_reason"] = str(result.finish_reason or "")
                    if result.usage is not None:
                        span.attributes["usage"] = result.usage.to_dict()

    def _current(self, session_id: str) -> tuple[RunRecord, Span] | None:
        return self._open.get(session_id)

    async def _around_model(self, context: ChatContext, call_next: CallNext) -> None:
        session = context.run.session
        current = self._current(session.id if session is not None else "")
        if current is None:
            await call_next()
            return
        record, parent = current
        messages = [m.to_dict() for m in context.messages]
        system = "\n\n".join(m.text for m in context.messages if m.role is Role.SYSTEM)
        tools = [_tool_entry(t) for t in context.options.tools]
        estimate = self._counter.count(system) + sum(
            self._counter.count(m.text) for m in context.messages if m.role is not Role.SYSTEM
        )
        entry: dict[str, Any] = {
            "index": len(record.requests) + 1,
            "at": time.time(),
            "agent": context.agent_name,
            "system": system,
            "messages": messages,
            "tools": tools,
            "options": _options_entry(context),
            "estimated_input_tokens": estimate,
            "usage": None,
        }
        record.requests.append(entry)
        span = Span(
            id=uuid.uuid4().hex[:16],
            parent=parent.id,
            name=f"model call {entry['index']}",
            kind="model",
            start=entry["at"],
            attributes={"messages": len(messages), "tools": len(tools)},
        )
        record.spans.append(span)
        with _timed(span):
            try:
                await call_next()
            finally:
                result = context.result
                if result is not None:
                    if result.usage is not None:
                        entry["usage"] = result.usage.to_dict()
                        span.attributes["usage"] = entry["usage"]
                    if result.model_id:
                        entry["model_id"] = result.model_id

    async def _around_tool(self, context: FunctionInvocationContext, call_next: CallNext) -> None:
        session = context.run.session
        current = self._current(session.id if session is not None else "")
        if current is None:
            await call_next()
            return
        record, parent = current
        span = Span(
            id=uuid.uuid4().hex[:16],
            parent=parent.id,
            name=f"tool {context.tool_name}",
            kind="tool",
            start=time.time(),
            attributes={"call_id": context.call_id, "arguments": context.arguments},
        )
        record.spans.append(span)
        try:
            with _timed(span):
                await call_next()
        finally:
            if context.result is not None and context.result.error:
                span.error = context.result.error


@contextmanager
def _timed(span: Span) -> Iterator[None]:
    """Time what runs inside on `span`, and name the error that ends it, if one does."""
    began = time.perf_counter()
    try:
        yield
    except BaseException as exc:
        span.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        span.duration_ms = (time.perf_counter() - began) * 1000
