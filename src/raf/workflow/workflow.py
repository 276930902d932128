"""A built, validated workflow: run it, stream its events, resume it, or use it as an agent.

result = await workflow.run("input")                      # to the end, or a pause
async for event in workflow.run_stream("input"): ...       # typed events as they happen
result = await workflow.run(checkpoint_id=cp, responses={request_id: answer})
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from raf.stores.checkpoints import CheckpointStore
from raf.workflow.as_agent import WorkflowAgent
from raf.workflow.context import InputRequest
from raf.workflow.errors import WorkflowError
from raf.workflow.events import WorkflowEvent
from raf.workflow.graph import WorkflowGraph
from raf.workflow.runner import WorkflowRunner


@dataclass(kw_only=True, slots=True)
class WorkflowRunResult:
    """How a run ended: its outputs, or the requests it waits for, and its checkpoint."""

    run_id: str
    status: Literal["completed", "paused"]
    outputs: list[Any] = field(default_factory=list)
    requests: list[InputRequest] = field(default_factory=list)
    checkpoint_id: str | None = None
    events: list[WorkflowEvent] = field(default_factory=list)

    @property
    def output(self) -> Any:
        """The last output, or None."""
        return self.outputs[-1] if self.outputs else None


class Workflow(WorkflowGraph):
    """A graph of executors joined by edges, checked at build; see `WorkflowBuilder`."""

    _running: bool = False
    """True while a run of this object is going (one at a time)."""

    # -- running ---------------------------------------------------------------------------

    async def run(
        self,
        input: Any = None,
        *,
        checkpoint_id: str | None = None,
        responses: Mapping[str, Any] | None = None,
        checkpoint_store: CheckpointStore | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-run limit
        run_id: str | None = None,
        on_event: Callable[[WorkflowEvent], None] | None = None,
        claimant: str | None = None,
    ) -> WorkflowRunResult:
        """Run to the end or to a pause. With `checkpoint_id`, resume that checkpoint
        (in this process or another), answering pending requests with `responses`.
        An answer is taken once: a second resume answering the same request raises
        `AnswerClaimedError`, unless it passes the same `claimant` (a retry of one
        answering step, as a durable run makes after a crash)."""
        events: list[WorkflowEvent] = []
        if on_event is None:
            emit = events.append
        else:

            def emit(event: WorkflowEvent) -> None:
                events.append(event)
                on_event(event)

        self._claim()
        try:
            runner = await self._prepare(
                input, checkpoint_id, responses, checkpoint_store, run_id, emit, claimant
            )
            status = await runner.execute(
                resumed_from=checkpoint_id,
                deadline=timeout if timeout is not None else self.timeout,
            )
        finally:
            self._running = False
        st = runner.state
        return WorkflowRunResult(
            run_id=st.run_id,
            status=status,
            outputs=list(st.outputs),
            requests=list(st.requests.values()),
            checkpoint_id=st.checkpoint_id,
            events=events,
        )

    async def run_stream(
        self,
        input: Any = None,
        *,
        checkpoint_id: str | None = None,
        responses: Mapping[str, Any] | None = None,
        checkpoint_store: CheckpointStore | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - a whole-run limit
        run_id: str | None = None,
        claimant: str | None = None,
    ) -> AsyncIterator[WorkflowEvent]:
        """The events of `run` as they happen; a failed run yields `WorkflowFailed`, then
        raises its `WorkflowRunError`."""
        queue: asyncio.Queue[WorkflowEvent | None] = asyncio.Queue()
        self._claim()
        try:
            runner = await self._prepare(
                input,
                checkpoint_id,
                responses,
                checkpoint_store,
                run_id,
                queue.put_nowait,
                claimant,
            )
        except BaseException:
            self._running = False
            raise

        async def drive() -> None:
            try:
                await runner.execute(
                    resumed_from=checkpoint_id,
                    deadline=timeout if timeout is not None else self.timeout,
                )
            finally:
                self._running = False
                queue.put_nowait(None)

        task = asyncio.ensure_future(drive())
        try:
            while (event := await queue.get()) is not None:
                yield event
            await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def _claim(self) -> None:
        """Refuse a second run of this object while one is going: its nodes (and their
        state, such as agent sessions) belong to one run at a time."""
        if self._running:
            raise WorkflowError(
                f"workflow {self.name!r} is already running; build one workflow per concurrent run"
            )
        self._running = True

    async def _prepare(
        self,
        input: Any,
        checkpoint_id: str | None,
        responses: Mapping[str, Any] | None,
        store: CheckpointStore | None,
        run_id: str | None,
        emit: Callable[[WorkflowEvent], None],
        claimant: str | None = None,
    ) -> WorkflowRunner:
        runner = WorkflowRunner(self, store or self.checkpoint_store, emit)
        if checkpoint_id is None:
            if responses:
                raise WorkflowError("responses answer a paused run: pass its checkpoint_id too")
            runner.start(input, run_id)
        else:
            if input is not None:
                raise WorkflowError(
                    "a resumed run continues from its checkpoint: pass no new input"
                )
            await runner.resume(checkpoint_id, responses or {}, claimant)
        return runner

    def as_agent(self, *, name: str | None = None, description: str | None = None) -> WorkflowAgent:
        """This workflow behind the agent interface (`run`, `run_stream`, sessions)."""
        return WorkflowAgent(self, name=name, description=description)

    def __repr__(self) -> str:
        return f"Workflow(name={self.name!r}, nodes={list(self.nodes)}, start={self.start!r})"
