"""The local web UI of `raf ui` and `raf serve --ui`: pages served with the native API."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from raf.serve.hosting import AgentHost
from raf.serve.ui.recorder import TurnRecorder
from raf.serve.ui.workflows import WorkflowHost
from raf.workflow import Workflow

__all__ = ["ServeUI", "TurnRecorder", "WorkflowHost"]


@dataclass(kw_only=True, slots=True)
class ServeUI:
    """What the pages need besides the host: the workflows, and the run recorder."""

    workflows: WorkflowHost
    recorder: TurnRecorder

    @classmethod
    def attach(
        cls,
        host: AgentHost,
        workflows: Mapping[str, Workflow] | Sequence[Workflow] = (),
    ) -> ServeUI:
        """A UI over `host`: its runs are recorded from now on, `workflows` can be run."""
        recorder = TurnRecorder()
        host.middleware.extend(recorder.middleware())
        return cls(workflows=WorkflowHost(workflows), recorder=recorder)
