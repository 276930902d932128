"""The Traces page's span trees: OpenTelemetry GenAI spans from an in-memory collector
when the `otel` extra is installed, else the spans the run recorder keeps."""

from __future__ import annotations

from typing import Any

from raf.core.errors import MissingExtraError

KINDS = {"invoke_agent": "run", "chat": "model", "execute_tool": "tool"}
"""GenAI operation names, as the page's span kinds."""


class OtelTraces:
    """A `Tracing` configuration of its own (its own tracer provider, so the process's
    global one is untouched) whose finished spans an `InMemoryTraces` keeps."""

    def __init__(self) -> None:
        from raf.observability import InMemoryTraces, Tracing

        self.collector = InMemoryTraces()
        self.tracing = Tracing(traces=self.collector)

    def middleware(self) -> list[Any]:
        """The tracing middleware, to add to every run the host starts."""
        return list(self.tracing.middleware.all())

    def runs(self, session_id: str) -> list[dict[str, Any]]:
        """The session's finished runs as flat span lists, oldest first."""
        out: list[dict[str, Any]] = []
        for run in self.collector.runs(session_id):
            spans: list[dict[str, Any]] = []
            for node in run.root.walk():
                error = None
                if node.status == "error":
                    error = node.status_description or "error"
                spans.append(
                    {
                        "id": node.span_id,
                        "parent": None if node is run.root else node.parent_id,
                        "name": node.name,
                        "kind": KINDS.get(node.operation or "", "other"),
                        "start": node.start,
                        "duration_ms": node.duration * 1000,
                        "error": error,
                        "attributes": node.attributes,
                    }
                )
            out.append(
                {
                    "id": run.run_id,
                    "agent": run.agent_name,
                    "session_id": run.session_id,
                    "started": run.root.start,
                    "spans": spans,
                }
            )
        return out


def otel_traces() -> OtelTraces | None:
    """OpenTelemetry traces when the `otel` extra is installed; None otherwise."""
    try:
        return OtelTraces()
    except MissingExtraError:
        return None
