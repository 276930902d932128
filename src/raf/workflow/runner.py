"""One run of a workflow in supersteps (bulk-synchronous): the nodes with messages run
in parallel (bounded), their effects are committed in a fixed order, messages are routed
along the edges for the next superstep, and a checkpoint is written."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from raf.core.messages import new_id
from raf.stores.checkpoints import CheckpointStore, Status
from raf.workflow.codec import decode
from raf.workflow.context import (
    InvocationEffects,
    WorkflowContext,
)
from raf.workflow.errors import (
    CheckpointError,
    WorkflowRunError,
    WorkflowTimeoutError,
)
from raf.workflow.events import (
    InputRequested,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeInvoked,
    NodeSkipped,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowPaused,
    WorkflowStarted,
)
from raf.workflow.executor import Executor, call_handler
from raf.workflow.routing import Router
from raf.workflow.state import Delivery, RunState, load_state, to_checkpoint
from raf.workflow.typeinfo import type_name

if TYPE_CHECKING:
    from raf.workflow.graph import WorkflowGraph

log = logging.getLogger("raf.workflow")

Emit = Callable[[WorkflowEvent], None]
backoff_sleep = asyncio.sleep
"""How the runner waits between attempts (replaceable in tests)."""
RunStatus = Literal["completed", "paused"]


@dataclass(kw_only=True, slots=True)
class _Outcome:
    delivery: Delivery
    node: str
    effects: InvocationEffects | None = None
    """What the handler did through its context (None: it took no context)."""
    result: Any = None
    skipped: bool = False


class _NodeFailure(Exception):
    def __init__(self, node: str, error: BaseException) -> None:
        self.node = node
        self.error = error
        super().__init__(str(error))


class WorkflowRunner:
    """Runs (or resumes) one run of a built workflow, emitting events as it goes."""

    def __init__(self, workflow: WorkflowGraph, store: CheckpointStore, emit: Emit) -> None:
        self.wf = workflow
        self.store = store
        self.emit = emit
        self.state = RunState(run_id="")
        self._semaphore = asyncio.Semaphore(workflow.max_concurrency)
        self.router = Router(workflow, emit)

    # -- start or resume -----------------------------------------------------------

    def start(self, message: Any, run_id: str | None) -> None:
        """A fresh run: nodes back to their built state, `message` to the start node."""
        self.state = RunState(run_id=run_id or new_id("run"))
        for node_id, snapshot in self.wf.initial_states.items():
            self.wf.nodes[node_id].restore_state(decode(snapshot, self.wf.types))
        start = self.wf.nodes[self.wf.start]
        if start.find_handler(message) is None:
            raise WorkflowRunError(
                f"the start node {start.id!r} accepts {_accepts(start)}, "
                f"not {type(message).__name__}"
            )
        self.state.pending = [Delivery(target=self.wf.start, message=message)]

    async def resume(
        self, checkpoint_id: str, responses: Mapping[str, Any], claimant: str | None = None
    ) -> None:
        """Take the run back from a checkpoint and queue the answers to its requests."""
        self.state = await load_state(
            self.wf, self.store, checkpoint_id, responses, claimant=claimant
        )

    # -- the loop --------------------------------------------------------------------

    async def execute(self, *, resumed_from: str | None, deadline: float | None) -> RunStatus:
        """Run supersteps until no message is left; returns "completed" or "paused"."""
        st = self.state
        self.emit(
            WorkflowStarted(run_id=st.run_id, workflow=self.wf.name, resumed_from=resumed_from)
        )
        try:
            if resumed_from is None:
                await self._checkpoint("running")
            async with asyncio.timeout(deadline):
                while st.pending:
                    if st.superstep >= self.wf.max_supersteps:
                        raise WorkflowRunError(
                            f"workflow {self.wf.name!r} ran {st.superstep} supersteps without "
                            f"finishing (the limit is {self.wf.max_supersteps})"
                        )
                    await self._superstep()
        except BaseException as exc:
            await self._release_unspent_answers()
            error = self._as_run_error(exc, deadline)
            if isinstance(exc, asyncio.CancelledError):
                raise
            if st.compensations:
                await self._compensate()
                await self._mark_compensated()
            self.emit(
                WorkflowFailed(
                    run_id=st.run_id,
                    error=str(error),
                    node=error.node,
                    checkpoint_id=error.checkpoint_id,
                )
            )
            raise error from exc
        if st.requests:
            await self._checkpoint("paused")
            assert st.checkpoint_id is not None
            self.emit(
                WorkflowPaused(
                    run_id=st.run_id, checkpoint_id=st.checkpoint_id, request_ids=list(st.requests)
                )
            )
            return "paused"
        await self._checkpoint("completed")
        self.emit(
            WorkflowCompleted(
                run_id=st.run_id, outputs=list(st.outputs), checkpoint_id=st.checkpoint_id
            )
        )
        return "completed"

    def _as_run_error(self, exc: BaseException, timeout: float | None) -> WorkflowRunError:
        st = self.state
        if isinstance(exc, WorkflowRunError):
            exc.checkpoint_id = exc.checkpoint_id or st.checkpoint_id
            exc.superstep = exc.superstep if exc.superstep is not None else st.superstep
            return exc
        if isinstance(exc, TimeoutError):
            return WorkflowTimeoutError(
                f"workflow {self.wf.name!r} timed out after {timeout} s in superstep "
                f"{st.superstep}; resume from checkpoint {st.checkpoint_id!r}",
                checkpoint_id=st.checkpoint_id,
                superstep=st.superstep,
            )
        if isinstance(exc, _NodeFailure):
            return WorkflowRunError(
                f"node {exc.node!r} failed in superstep {st.superstep}: "
                f"{type(exc.error).__name__}: {exc.error}",
                node=exc.node,
                checkpoint_id=st.checkpoint_id,
                superstep=st.superstep,
            )
        return WorkflowRunError(
            f"workflow {self.wf.name!r} failed in superstep {st.superstep}: "
            f"{type(exc).__name__}: {exc}",
            checkpoint_id=st.checkpoint_id,
            superstep=st.superstep,
        )

    async def _superstep(self) -> None:
        st = self.state
        st.superstep += 1
        groups: dict[str, list[Delivery]] = {}
        for delivery in st.pending:
            groups.setdefault(delivery.target, []).append(delivery)
        st.pending = []
        self.emit(SuperstepStarted(superstep=st.superstep, nodes=list(groups)))
        if len(groups) == 1:
            ((deliveries),) = groups.values()
            results = [await self._run_all(deliveries)]
        else:
            run = self._run_all if len(groups) <= self.wf.max_concurrency else self._run_bounded
            results = await _all_or_cancel([run(deliveries) for deliveries in groups.values()])
        for outcomes in results:
            for outcome in outcomes:
                self._commit(outcome)
        if st.fan_in:
            self.router.release_barriers(st)
        await self._checkpoint("running")
        self.emit(SuperstepCompleted(superstep=st.superstep, checkpoint_id=st.checkpoint_id))

    async def _run_all(self, deliveries: list[Delivery]) -> list[_Outcome]:
        """A node's messages of one superstep, one after another: a node is never
        re-entered, while different nodes run in parallel."""
        return [await self._invoke(d, depth=0) for d in deliveries]

    async def _run_bounded(self, deliveries: list[Delivery]) -> list[_Outcome]:
        """The same, within the concurrency bound (when more nodes are active)."""
        async with self._semaphore:
            return await self._run_all(deliveries)

    async def _invoke(self, delivery: Delivery, *, depth: int) -> _Outcome:
        wf, st = self.wf, self.state
        node_id = delivery.target
        node = wf.nodes[node_id]
        spec = node.find_handler(delivery.message)
        if spec is None:
            raise WorkflowRunError(
                f"node {node_id!r} has no handler for a message of type "
                f"{type(delivery.message).__name__}"
                + (f" sent by {delivery.source!r}" if delivery.source else "")
                + f"; it accepts {_accepts(node)}",
                node=node_id,
            )
        policy = wf.policies.get(node_id)
        retry = policy.retry if policy else None
        timeout = policy.timeout if policy else None
        attempt = 0
        while True:
            attempt += 1
            # A handler that takes no context cannot act on the run: no context to build.
            ctx: WorkflowContext[Any] | None = (
                WorkflowContext(
                    node_id=node_id,
                    run_id=st.run_id,
                    superstep=st.superstep,
                    shared_state=st.shared,
                    emit=self.emit,
                    register_type=wf.register_response_type,
                )
                if spec.takes_ctx
                else None
            )
            self.emit(NodeInvoked(node=node_id, superstep=st.superstep, attempt=attempt))
            try:
                if timeout is None:
                    result = await call_handler(spec, delivery.message, ctx)
                else:
                    async with asyncio.timeout(timeout):
                        result = await call_handler(spec, delivery.message, ctx)
            except Exception as exc:
                if isinstance(exc, TimeoutError) and timeout is not None:
                    exc = TimeoutError(f"node {node_id!r} timed out after {timeout} s")
                again = (
                    retry is not None
                    and attempt < retry.max_attempts
                    and isinstance(exc, retry.retry_on)
                )
                self.emit(
                    NodeFailed(
                        node=node_id,
                        superstep=st.superstep,
                        error=f"{type(exc).__name__}: {exc}",
                        attempt=attempt,
                        will_retry=again,
                    )
                )
                if again:
                    assert retry is not None
                    await backoff_sleep(retry.delay(attempt))
                    continue
                if retry is not None and retry.on_exhausted == "skip":
                    self.emit(NodeSkipped(node=node_id, superstep=st.superstep, error=str(exc)))
                    return _Outcome(delivery=delivery, node=node_id, skipped=True)
                if retry is not None and retry.on_exhausted == "fallback" and retry.fallback:
                    if depth >= len(wf.nodes):
                        raise _NodeFailure(node_id, exc) from exc
                    fallback = Delivery(
                        target=retry.fallback, message=delivery.message, source=delivery.source
                    )
                    return await self._invoke(fallback, depth=depth + 1)
                raise _NodeFailure(node_id, exc) from exc
            self.emit(NodeCompleted(node=node_id, superstep=st.superstep, result=result))
            return _Outcome(
                delivery=delivery,
                node=node_id,
                effects=None if ctx is None else ctx._effects,
                result=result,
            )

    # -- committing a superstep -----------------------------------------------------------

    def _commit(self, outcome: _Outcome) -> None:
        st, wf = self.state, self.wf
        if outcome.skipped:
            return
        node_id = outcome.node
        if wf.has_compensation(node_id):
            st.compensations.append((node_id, outcome.delivery.message))
        effects = outcome.effects
        if effects is not None:
            self._commit_effects(node_id, effects)
        if outcome.result is not None:
            self.router.route(st, node_id, outcome.result, None)

    def _commit_effects(self, node_id: str, effects: InvocationEffects) -> None:
        st, wf = self.state, self.wf
        st.shared.update(effects.state)
        for data in effects.outputs:
            self.router.output(st, node_id, data)
        for request in effects.requests:
            if not wf.accepts_responses(node_id):
                raise WorkflowRunError(
                    f"node {node_id!r} asked for input but has no handler for InputResponse: "
                    "add one to receive the answer",
                    node=node_id,
                )
            st.requests[request.request_id] = request
            self.emit(
                InputRequested(
                    request_id=request.request_id,
                    node=node_id,
                    data=request.data,
                    response_type=request.response_type,
                )
            )
        for sent in effects.sent:
            self.router.route(st, node_id, sent.message, sent.target)

    # -- checkpoints and compensation ------------------------------------------------------

    async def _checkpoint(self, status: Status) -> None:
        st = self.state
        try:
            checkpoint = to_checkpoint(self.wf, st, status)
        except CheckpointError as exc:
            raise WorkflowRunError(
                f"superstep {st.superstep} cannot be checkpointed: {exc}",
                checkpoint_id=st.checkpoint_id,
            ) from exc
        await self.store.save(checkpoint)
        st.checkpoint_id = checkpoint.id

    async def _release_unspent_answers(self) -> None:
        """A run that fails before it checkpoints anything past the answered checkpoint
        gives its answers back: the error names that checkpoint as the one to resume
        from, so answering it again must work. Once a later checkpoint exists, the
        answers are spent and stay claimed (best effort: a store error is not raised
        over the run's own)."""
        st = self.state
        if st.claimed is None or st.checkpoint_id != st.claimed[0]:
            return
        with contextlib.suppress(Exception):
            await self.store.release(*st.claimed)
        st.claimed = None

    async def _mark_compensated(self) -> None:
        """Record that the run was undone, so no checkpoint of it resumes (best effort:
        the failure being reported matters more)."""
        try:
            await self._checkpoint("compensated")
        except Exception as exc:
            log.error("could not record the compensation of run %r: %s", self.state.run_id, exc)

    async def _compensate(self) -> None:
        """Undo finished nodes, last finished first; a failing compensation is reported
        and the others still run."""
        for node_id, message in reversed(self.state.compensations):
            fn = self.wf.compensation(node_id)
            error: str | None = None
            try:
                result = fn(message)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                log.error("compensation of node %r failed: %s", node_id, exc)
                error = f"{type(exc).__name__}: {exc}"
            self.emit(NodeCompensated(node=node_id, error=error))
        self.state.compensations.clear()


async def _all_or_cancel(coros: list[Any]) -> list[list[_Outcome]]:
    """Run the node groups of a superstep together; the first failure cancels the rest."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        results: list[list[_Outcome]] = await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return results


def _accepts(node: Executor) -> str:
    return " | ".join(type_name(t) for t in node.input_types) or "nothing"
