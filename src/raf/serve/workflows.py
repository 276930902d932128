"""Workflows served like agents: each run on a workflow object of its own, every
checkpoint in one store that all workers share.

A built `Workflow` serves one run at a time (its nodes keep a run's state), so a server
that answers many requests for one workflow builds one per run at once, keeps the idle
ones for the next runs, and points every run at the shared checkpoint store. A run that
pauses on a question ends there; its answer resumes the checkpoint on whichever worker
takes it, and the store's claim on the answer lets only one of them go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from raf.stores.checkpoints import CheckpointStore
from raf.workflow import Workflow, WorkflowAgent
from raf.workflow.edges import EdgeGroup
from raf.workflow.events import WorkflowEvent
from raf.workflow.executor import Executor

__all__ = ["IDLE_KEPT", "ServedWorkflow"]

IDLE_KEPT = 8
"""Built workflows kept idle for the next runs (more runs at once build more)."""


class ServedWorkflow:
    """A workflow many requests run at once: `build` makes a fresh copy for each run
    that finds none idle; without `build` (a workflow object from the user's code) the
    one object serves its runs in turn, each waiting for the last to end or pause.
    Every run keeps its checkpoints in `checkpoints` (the workflow's own store when
    None)."""

    def __init__(
        self,
        workflow: Workflow,
        *,
        build: Callable[[], Workflow] | None = None,
        checkpoints: CheckpointStore | None = None,
    ) -> None:
        self.template = workflow
        """The first workflow built: its graph is what the server describes."""
        self.build = build
        self.checkpoint_store: CheckpointStore = (
            checkpoints if checkpoints is not None else workflow.checkpoint_store
        )
        """Where every run of this workflow keeps its checkpoints (shared by the workers)."""
        self._idle: list[Workflow] = [workflow]
        self._turn = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.template.name

    @property
    def description(self) -> str:
        return self.template.description

    @property
    def start(self) -> str:
        return self.template.start

    @property
    def nodes(self) -> Mapping[str, Executor]:
        return self.template.nodes

    @property
    def outgoing(self) -> Mapping[str, list[EdgeGroup]]:
        return self.template.outgoing

    @asynccontextmanager
    async def borrowed(self) -> AsyncIterator[Workflow]:
        """A workflow no other run is using, given back (kept idle) once the run ends."""
        if self.build is None:
            async with self._turn:
                yield self.template
            return
        workflow = self._idle.pop() if self._idle else self.build()
        try:
            yield workflow
        finally:
            if len(self._idle) < IDLE_KEPT:
                self._idle.append(workflow)

    async def run_stream(
        self,
        input: Any = None,
        *,
        checkpoint_id: str | None = None,
        responses: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        claimant: str | None = None,
    ) -> AsyncIterator[WorkflowEvent]:
        """The events of one run (or resumption) on a workflow of its own, its
        checkpoints in the shared store; as `Workflow.run_stream` otherwise."""
        async with self.borrowed() as workflow:
            async for event in workflow.run_stream(
                input,
                checkpoint_id=checkpoint_id,
                responses=responses,
                checkpoint_store=self.checkpoint_store,
                run_id=run_id,
                claimant=claimant,
            ):
                yield event

    def as_agent(self) -> WorkflowAgent:
        """This workflow behind the agent interface, as the server's surfaces run it."""
        return WorkflowAgent(self)

    def __repr__(self) -> str:
        return f"ServedWorkflow(name={self.name!r}, per_run={self.build is not None})"
