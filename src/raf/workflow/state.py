"""The live state of a run, and its round trip through a checkpoint."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from raf.core.messages import new_id
from raf.stores.checkpoints import Checkpoint, CheckpointStore, Status
from raf.workflow.codec import decode, encode
from raf.workflow.context import InputRequest, InputResponse
from raf.workflow.errors import CheckpointError, GraphChangedError, WorkflowError

if TYPE_CHECKING:
    from raf.workflow.graph import WorkflowGraph


@dataclass(kw_only=True, slots=True)
class Delivery:
    """A message waiting for a node in the next superstep."""

    target: str
    message: Any
    source: str | None = None


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
    claimed: tuple[str, tuple[str, ...], str] | None = None
    """The answers this run took when it resumed: checkpoint, request ids, claimant."""


def to_checkpoint(wf: WorkflowGraph, st: RunState, status: Status) -> Checkpoint:
    """The run's state as a checkpoint (a `CheckpointError` names a value with no JSON
    form)."""
    return Checkpoint(
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
            for node_id, node in wf.stateful.items()
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


async def load_state(
    wf: WorkflowGraph,
    store: CheckpointStore,
    checkpoint_id: str,
    responses: Mapping[str, Any],
    *,
    claimant: str | None = None,
) -> RunState:
    """A run's state back from a checkpoint, with the answers to its requests queued;
    nothing is written when the checkpoint or an answer is refused. The answers are
    claimed in the store for `claimant` (by default this call alone) before any node
    runs, so one answer resumes the run once however many processes send it."""
    cp = await store.load(checkpoint_id)
    if cp.fingerprint != wf.fingerprint:
        raise GraphChangedError(
            f"checkpoint {checkpoint_id!r} was written by a different graph than "
            f"workflow {wf.name!r}: {graph_diff(cp.graph, wf.graph_summary)}; "
            "resume it with the graph that wrote it"
        )
    if cp.status == "completed":
        raise CheckpointError(f"run {cp.run_id!r} already completed at {checkpoint_id!r}")
    if any(i.status == "compensated" for i in await store.list(cp.run_id)):
        raise CheckpointError(
            f"run {cp.run_id!r} failed and its finished nodes were compensated (undone); "
            "it cannot resume: start a new run"
        )
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
    claimed = None
    if answers:
        claimed = (checkpoint_id, tuple(sorted(answers)), claimant or f"answer_{uuid.uuid4().hex}")
        await store.claim(*claimed)
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
        claimed=claimed,
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
    return state


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


def graph_diff(old: dict[str, Any], new: dict[str, Any]) -> str:
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
