"""The local web UI of `raf ui` and `raf serve --ui`: pages served with the native API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raf.serve.hosting import AgentHost
from raf.serve.ui.recorder import TurnRecorder
from raf.serve.ui.workflows import Hosted, WorkflowHost

__all__ = ["ServeUI", "TurnRecorder", "WorkflowHost"]


@dataclass(kw_only=True, slots=True)
class ServeUI:
    """What the pages need besides the host: the workflows, and the run recorder."""

    workflows: WorkflowHost
    recorder: TurnRecorder
    traces: Any = None
    """OpenTelemetry span trees (`raf.serve.ui.traces.OtelTraces`), or None: then the
    Traces page draws the recorder's spans."""
    datasets: Path | None = None
    """The folder of eval datasets the Evals page lists and the chat page saves runs into
    as cases; None: `$RAF_EVAL_DATASETS_DIR`, else `datasets` in the eval runs folder."""

    @classmethod
    def attach(
        cls,
        host: AgentHost,
        workflows: Mapping[str, Hosted] | Sequence[Hosted] = (),
        *,
        tracing: bool = True,
        datasets: str | Path | None = None,
    ) -> ServeUI:
        """A UI over `host`: its runs are recorded from now on, `workflows` can be run
        (a `ServedWorkflow` as the server serves it, a workflow object its runs in turn);
        with `tracing` and the `otel` extra installed, runs are traced with OpenTelemetry
        too (a tracer provider of the UI's own) and the Traces page shows those spans;
        `datasets` is the folder of eval datasets (see the field)."""
        from raf.serve.ui.traces import otel_traces

        traces = otel_traces() if tracing else None
        if traces is not None:
            host.middleware.extend(traces.middleware())
        recorder = TurnRecorder()
        host.middleware.extend(recorder.middleware())
        return cls(
            workflows=WorkflowHost(workflows),
            recorder=recorder,
            traces=traces,
            datasets=Path(datasets) if datasets is not None else None,
        )
