"""One run of a workflow in supersteps (bulk-synchronous): the nodes with messages run
in parallel (bounded), their effects are committed in a fixed order, messages are routed
along the edges for the next superstep, and a checkpoint is written."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from raf.core.messages import new_id
from raf.workflow.checkpoints import Checkpoint, CheckpointStore, Status
from raf.workflow.codec import decode, encode
from raf.workflow.context import (
    InputRequest,
    InputResponse,
    InvocationEffects,
    Sent,
    WorkflowContext,
)
from raf.workflow.edges import Edge, FanInEdge, FanOutEdge, LoopEdge, SwitchEdge
from raf.workflow.errors import (
    CheckpointError,
    GraphChangedError,
    WorkflowError,
    WorkflowRunError,
    WorkflowTimeoutError,
)
from raf.workflow.events import (
    InputRequested,
    LoopLimitReached,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeInvoked,
    NodeSkipped,
    OutputEvent,
    SuperstepCompleted,
    SuperstepStarted,
    WorkflowCompleted,
    WorkflowEvent,
    WorkflowFailed,
    WorkflowPaused,
    WorkflowStarted,
)
from raf.workflow.executor import Executor, call_handler
from raf.workflow.typeinfo import type_name

if TYPE_CHECKING:
    from raf.workflow.workflow import Workflow

log = logging.getLogger("raf.workflow")

Emit = Callable[[WorkflowEvent], None]
backoff_sleep = asyncio.sleep
"""How the runner waits between attempts (replaceable in tests)."""
RunStatus = Literal["completed", "paused"]


@dataclass(kw_only=True, slots=True)
class Delivery:
    """A message waiting for a node in the next superstep."""

    target: str
    message: Any
    source: str | None = None


@dataclass(kw_only=True, slots=True)
class _Outcome:
    delivery: Delivery
    node: str
    effects: InvocationEffects | None = None
    """None when the node was skipped."""
    result: Any = None


class _NodeFailure(Exception):
    def __init__(self, node: str, error: BaseException) -> None:
        self.node = node
        self.error = error
        super().__init__(str(error))


@dataclass(kw_only=True, slots=True)
class RunState:
    """The state a checkpoint holds, live."""

    run_id: str
    superstep: int = 0
    pending: list[Delivery] = field(default_factory=list)
    fan_in: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    loop_counts: dict[str, int] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)
    requests: dict[str, InputRequest] = field(default_factory=dict)
    outputs: list[Any] = field(default_factory=list)
    compensations: list[tuple[str, Any]] = field(default_factory=list)
    checkpoint_id: str | None = None


class WorkflowRunner:
    """Runs (or resumes) one run of a built workflow, emitting events as it goes."""

    def __init__(self, workflow: Workflow, store: CheckpointStore, emit: Emit) -> None:
        self.wf = workflow
        self.store = store
        self.emit = emit
        self.state = RunState(run_id="")
        self._semaphore = asyncio.Semaphore(workflow.max_concurrency)

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

    async def resume(self, checkpoint_id: str, responses: Mapping[str, Any]) -> None:
        """Take the run back from a checkpoint and queue the answers to its requests;
        nothing is written when the checkpoint or an answer is refused."""
        cp = await self.store.load(checkpoint_id)
        wf = self.wf
        if cp.fingerprint != wf.fingerprint:
            raise GraphChangedError(
                f"checkpoint {checkpoint_id!r} was written by a different graph than "
                f"workflow {wf.name!r}: {_graph_diff(cp.graph, wf.graph_summary)}; "
                "resume it with the graph that wrote it"
            )
        if cp.status == "completed":
            raise CheckpointError(f"run {cp.run_id!r} already completed at {checkpoint_id!r}")
        types = wf.types
        requests = {r["request_id"]: _request_from(r, types) for r in cp.requests}
        unknown = [rid for rid in responses if rid not in requests]
        if unknown:
            waiting = ", ".join(requests) or "none"
            raise WorkflowError(
                f"no pending request {', '.join(map(repr, unknown))} in checkpoint "
                f"{checkpoint_id!r}; pending: {waiting}"
            )
        if cp.status == "paused" and not responses:
            raise WorkflowError(
                f"run {cp.run_id!r} waits for input ({', '.join(requests)}); "
                "pass responses={request_id: answer}"
            )
        answers = {rid: wf.check_answer(requests[rid], value) for rid, value in responses.items()}
        state = RunState(
            run_id=cp.run_id,
            superstep=cp.superstep,
            pending=[
                Delivery(
                    target=d["target"], source=d.get("source"), message=decode(d["message"], types)
                )
                for d in cp.pending
            ],
            fan_in={k: {s: decode(v, types) for s, v in b.items()} for k, b in cp.fan_in.items()},
            loop_counts=dict(cp.loop_counts),
            shared=decode(cp.shared_state, types),
            requests=requests,
            outputs=decode(cp.outputs, types),
            compensations=[(c["node"], decode(c["message"], types)) for c in cp.compensations],
            checkpoint_id=cp.id,
        )
        for node_id, snapshot in cp.node_states.items():
            if node_id in wf.nodes:
                wf.nodes[node_id].restore_state(decode(snapshot, types))
        for rid, value in answers.items():
            request = state.requests.pop(rid)
            state.pending.append(
                Delivery(
                    target=request.node,
                    message=InputResponse(request_id=rid, data=request.data, response=value),
                )
            )
        self.state = state

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
            error = self._as_run_error(exc, deadline)
            if isinstance(exc, asyncio.CancelledError):
                raise
            await self._compensate()
            self.emit(
                WorkflowFailed(
                    run_id=st.run_id,
                    error=str(error),
                    node=error.node,
                    checkpoint_id=st.checkpoint_id,
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
            ctx: WorkflowContext[Any] = WorkflowContext(
                node_id=node_id,
                run_id=st.run_id,
                superstep=st.superstep,
                shared_state=st.shared,
                emit=self.emit,
                register_type=wf.register_response_type,
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
                    return _Outcome(delivery=delivery, node=node_id)
                if retry is not None and retry.on_exhausted == "fallback" and retry.fallback:
                    if depth >= len(wf.nodes):
                        raise _NodeFailure(node_id, exc) from exc
                    fallback = Delivery(
                        target=retry.fallback, message=delivery.message, source=delivery.source
                    )
                    return await self._invoke(fallback, depth=depth + 1)
                raise _NodeFailure(node_id, exc) from exc
            if result is not None:
                ctx._effects.sent.append(Sent(message=result))
            self.emit(NodeCompleted(node=node_id, superstep=st.superstep, result=result))
            return _Outcome(delivery=delivery, node=node_id, effects=ctx._effects, result=result)

    # -- committing a superstep -----------------------------------------------------------

    def _commit(self, outcome: _Outcome) -> None:
        st, wf = self.state, self.wf
        effects = outcome.effects
        if effects is None:
            return
        node_id = outcome.node
        st.shared.update(effects.state)
        if wf.has_compensation(node_id):
            st.compensations.append((node_id, outcome.delivery.message))
        for data in effects.outputs:
            self._output(node_id, data)
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
            self._route(node_id, sent.message, sent.target)

    def _output(self, node_id: str, data: Any) -> None:
        self.state.outputs.append(data)
        self.emit(OutputEvent(node=node_id, data=data))

    def _route(self, source: str, message: Any, only: str | None) -> None:
        """Send a committed message along the source's edges."""
        wf, st = self.wf, self.state
        edges = wf.outgoing.get(source, ())
        if not edges:
            if only is not None:
                raise WorkflowRunError(
                    f"node {source!r} sent a message to {only!r} but has no edge to it",
                    node=source,
                )
            self._output(source, message)
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
                self._fan_in(edge, source, message)
                continue
            accepting = [
                t
                for t in targets
                if (only is None or t == only) and wf.nodes[t].find_handler(message) is not None
            ]
            if not accepting:
                continue
            handled = True
            for target in self._choose(edge, message, accepting):
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

    def _choose(self, edge: Any, message: Any, accepting: list[str]) -> list[str]:
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
                count = self.state.loop_counts.get(edge.key, 0) + 1
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
                self.state.loop_counts[edge.key] = count
                return [edge.target]
        except WorkflowRunError:
            raise
        except Exception as exc:
            raise WorkflowRunError(
                f"the condition of {edge.key} failed: {type(exc).__name__}: {exc}",
                node=edge.source,
            ) from exc
        raise AssertionError(f"unknown edge {edge!r}")

    def _fan_in(self, edge: FanInEdge, source: str, message: Any) -> None:
        buffers = self.state.fan_in.setdefault(edge.key, {})
        waiting = buffers.get(source)
        if waiting is None:
            buffers[source] = [message]
        else:
            waiting.append(message)
        if len(buffers) == len(edge.sources):
            joined = [m for s in edge.sources for m in buffers[s]]
            del self.state.fan_in[edge.key]
            self.state.pending.append(Delivery(target=edge.target, message=joined, source=source))

    # -- checkpoints and compensation ------------------------------------------------------

    async def _checkpoint(self, status: Status) -> None:
        st, wf = self.state, self.wf
        try:
            checkpoint = Checkpoint(
                id=new_id("cp"),
                run_id=st.run_id,
                workflow=wf.name,
                fingerprint=wf.fingerprint,
                superstep=st.superstep,
                status=status,
                graph=wf.graph_summary,
                pending=[
                    {"target": d.target, "source": d.source, "message": encode(d.message)}
                    for d in st.pending
                ],
                fan_in={k: {s: encode(v) for s, v in b.items()} for k, b in st.fan_in.items()},
                loop_counts=dict(st.loop_counts),
                node_states={
                    node_id: encode(state)
                    for node_id, node in wf.nodes.items()
                    if (state := node.snapshot_state()) is not None
                },
                shared_state=encode(st.shared),
                requests=[
                    {
                        "request_id": r.request_id,
                        "node": r.node,
                        "data": encode(r.data),
                        "response_type": r.response_type,
                    }
                    for r in st.requests.values()
                ],
                outputs=encode(st.outputs),
                compensations=[{"node": n, "message": encode(m)} for n, m in st.compensations],
                parent_id=st.checkpoint_id,
                created_at=time.time(),
            )
        except CheckpointError as exc:
            raise WorkflowRunError(
                f"superstep {st.superstep} cannot be checkpointed: {exc}",
                checkpoint_id=st.checkpoint_id,
            ) from exc
        await self.store.save(checkpoint)
        st.checkpoint_id = checkpoint.id

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
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    failed = next((t for t in tasks if t.done() and t.exception() is not None), None)
    if failed is not None:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        error = failed.exception()
        assert error is not None
        raise error
    return [t.result() for t in tasks]


def _edge_targets(edge: Any) -> list[str]:
    if isinstance(edge, FanOutEdge | SwitchEdge):
        return list(edge.targets)
    return [edge.target]


def _all_targets(edges: Any) -> list[str]:
    return [t for e in edges for t in _edge_targets(e)]


def _accepts(node: Executor) -> str:
    return " | ".join(type_name(t) for t in node.input_types) or "nothing"


def _request_from(data: dict[str, Any], types: Mapping[str, type]) -> InputRequest:
    try:
        return InputRequest(
            request_id=data["request_id"],
            node=data["node"],
            data=decode(data.get("data"), types),
            response_type=data.get("response_type", "Any"),
        )
    except (KeyError, TypeError):
        raise CheckpointError("a pending request in the checkpoint is damaged") from None


def _graph_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What changed between two graph summaries, in words."""
    parts: list[str] = []
    old_nodes, new_nodes = old.get("nodes", {}), new.get("nodes", {})
    added = sorted(set(new_nodes) - set(old_nodes))
    removed = sorted(set(old_nodes) - set(new_nodes))
    changed = sorted(n for n in set(old_nodes) & set(new_nodes) if old_nodes[n] != new_nodes[n])
    if added:
        parts.append(f"nodes added: {', '.join(added)}")
    if removed:
        parts.append(f"nodes removed: {', '.join(removed)}")
    if changed:
        parts.append(f"nodes changed: {', '.join(changed)}")
    old_edges, new_edges = set(old.get("edges", [])), set(new.get("edges", []))
    if old_edges != new_edges:
        added_edges, removed_edges = sorted(new_edges - old_edges), sorted(old_edges - new_edges)
        parts.append(f"edges added: {added_edges}, removed: {removed_edges}")
    if old.get("start") != new.get("start"):
        parts.append(f"start changed from {old.get('start')!r} to {new.get('start')!r}")
    return "; ".join(parts) or "settings changed"
