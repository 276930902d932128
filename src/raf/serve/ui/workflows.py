"""Workflows the UI runs: started, watched event by event, answered, resumed from checkpoints.

The UI runs a workflow the way the server's other surfaces do (`ServedWorkflow`): each run
on a workflow of its own, so runs do not wait on each other, and every checkpoint in the
served workflows' shared store, so a paused run is answered through any worker and only
once (the answer is claimed in the store before a run starts)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.serve.errors import ServeError, not_found
from raf.serve.requests import body_text
from raf.serve.tenancy import Tenant
from raf.serve.workflows import ServedWorkflow
from raf.stores.checkpoints import Checkpoint
from raf.workflow import CheckpointNotFoundError, Workflow, WorkflowError
from raf.workflow.edges import FanInEdge, FanOutEdge, LoopEdge, SwitchEdge
from raf.workflow.errors import AnswerClaimedError


@dataclass(kw_only=True, slots=True)
class WorkflowRun:
    """One run (or resumption) of a workflow started from the UI, with its events so far."""

    id: str
    workflow: str
    owner: str
    events: list[dict[str, Any]] = field(default_factory=list)
    status: str = "running"
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def summary(self) -> dict[str, Any]:
        pending: list[dict[str, Any]] = []
        checkpoint: str | None = None
        for event in self.events:
            if event["type"] == "InputRequested":
                pending.append(event)
            if event.get("checkpoint_id"):
                checkpoint = event["checkpoint_id"]
        return {
            "id": self.id,
            "workflow": self.workflow,
            "status": self.status,
            "events": len(self.events),
            "pending": pending if self.status == "paused" else [],
            "checkpoint_id": checkpoint,
        }


def graph_of(served: Workflow | ServedWorkflow) -> dict[str, Any]:
    """Nodes and plain source→target edges of a workflow, for drawing."""
    workflow = served.template if isinstance(served, ServedWorkflow) else served
    edges: list[dict[str, Any]] = []
    for edge in workflow.edges:
        if isinstance(edge, FanInEdge):
            edges.extend(
                {"source": s, "target": edge.target, "kind": "fan-in"} for s in edge.sources
            )
        elif isinstance(edge, FanOutEdge):
            edges.extend(
                {"source": edge.source, "target": t, "kind": "fan-out"} for t in edge.targets
            )
        elif isinstance(edge, SwitchEdge):
            targets = [c.target for c in edge.cases] + ([edge.default] if edge.default else [])
            edges.extend({"source": edge.source, "target": t, "kind": "switch"} for t in targets)
        elif isinstance(edge, LoopEdge):
            edges.append({"source": edge.source, "target": edge.target, "kind": "loop"})
        else:
            edges.append({"source": edge.source, "target": edge.target, "kind": "edge"})
    return {
        "name": workflow.name,
        "description": workflow.description,
        "start": workflow.start,
        "nodes": list(workflow.nodes),
        "edges": edges,
    }


def parse_value(text: Any) -> Any:
    """A value typed on the page: JSON when it parses (and holds only Unicode text: no
    surrogate escape without its pair), else the text itself."""
    if not isinstance(text, str):
        return text
    try:
        body_text(text.encode("utf-8", "surrogatepass"))
        return json.loads(text)
    except (ValueError, ServeError):
        return text


RUNS_KEPT = 200
"""Workflow runs whose events the UI keeps (the oldest finished ones are dropped)."""


def typed_answers(
    pending: Sequence[Mapping[str, Any]], responses: Mapping[str, Any]
) -> dict[str, Any]:
    """Answers to pending requests: text for a `str` request, JSON (or text) otherwise;
    a 409 for an answer to a request that is not pending."""
    asked = {p["request_id"]: p for p in pending}
    unknown = sorted(set(responses) - set(asked))
    if unknown:
        raise ServeError(
            409, "request_not_pending", f"no pending request {', '.join(unknown)} in this run"
        )
    return {
        request_id: value if asked[request_id].get("response_type") == "str" else parse_value(value)
        for request_id, value in responses.items()
    }


Hosted = Workflow | ServedWorkflow
"""A workflow the UI is given: served as it is, or a workflow object (its runs in turn)."""


def _served(workflow: Hosted) -> ServedWorkflow:
    return workflow if isinstance(workflow, ServedWorkflow) else ServedWorkflow(workflow)


class WorkflowHost:
    """Named workflows and the runs started from the UI (many at once)."""

    def __init__(self, workflows: Mapping[str, Hosted] | Sequence[Hosted] = ()) -> None:
        if isinstance(workflows, Mapping):
            self.workflows: dict[str, ServedWorkflow] = {
                name: _served(w) for name, w in workflows.items()
            }
        else:
            self.workflows = {w.name: _served(w) for w in workflows}
        self.runs: dict[str, WorkflowRun] = {}

    def _forget_old(self) -> None:
        """Keep the events of the last `RUNS_KEPT` runs; a running one is never dropped."""
        ended = [k for k, r in self.runs.items() if r.status != "running"]
        for key in ended[: max(0, len(self.runs) - RUNS_KEPT)]:
            del self.runs[key]

    def workflow(self, name: str) -> ServedWorkflow:
        found = self.workflows.get(name)
        if found is None:
            raise not_found("workflow", name)
        return found

    def run(self, run_id: str, owner: str) -> WorkflowRun:
        found = self.runs.get(run_id)
        if found is None:
            raise not_found("workflow run", run_id)
        Tenant(owner).check(found.owner, "workflow run", run_id)
        return found

    async def checkpoint(self, name: str, owner: str, checkpoint_id: str) -> Checkpoint:
        """The caller's stored checkpoint of workflow `name`: one its own runs wrote (their
        run ids carry the owner). Someone else's is a 404, as a missing one is."""
        workflow = self.workflow(name)
        try:
            checkpoint = await workflow.checkpoint_store.load(checkpoint_id)
        except CheckpointNotFoundError:
            raise not_found("checkpoint", checkpoint_id) from None
        except WorkflowError as exc:
            raise ServeError(400, "invalid_checkpoint", str(exc)) from None
        if checkpoint.workflow != name:
            raise not_found("checkpoint", checkpoint_id)
        Tenant(owner).check_key(checkpoint.run_id, "checkpoint", checkpoint_id)
        return checkpoint

    def start(
        self,
        name: str,
        owner: str,
        *,
        input: Any = None,
        checkpoint_id: str | None = None,
        responses: Mapping[str, Any] | None = None,
        claimant: str | None = None,
    ) -> WorkflowRun:
        """Start a run in the background; its events collect on the returned record
        (`claimant`: who already claimed the answers in `responses`)."""
        workflow = self.workflow(name)
        record = WorkflowRun(id=uuid.uuid4().hex[:16], workflow=name, owner=owner)
        self.runs[record.id] = record
        self._forget_old()
        # the engine's run id is kept in every checkpoint of the run: it carries the owner
        engine_run = Tenant(owner).key(f"run_{uuid.uuid4().hex}") if checkpoint_id is None else None

        async def drive() -> None:
            try:
                async for event in workflow.run_stream(
                    input,
                    checkpoint_id=checkpoint_id,
                    responses=responses,
                    run_id=engine_run,
                    claimant=claimant,
                ):
                    data = event.to_dict()
                    record.events.append(data)
                    if data["type"] == "WorkflowPaused":
                        record.status = "paused"
                    elif data["type"] == "WorkflowCompleted":
                        record.status = "completed"
                    record.changed.set()
            except Exception as exc:
                record.events.append({"type": "WorkflowFailed", "error": str(exc)})
                record.status = "failed"
            finally:
                if record.status == "running":
                    record.status = "failed"
                record.changed.set()

        record.task = asyncio.ensure_future(drive())
        return record

    async def answer(self, run_id: str, owner: str, responses: Mapping[str, Any]) -> WorkflowRun:
        """Answer a paused run's requests: a new run resumes from its checkpoint, once its
        answers are claimed in the store (a second answer, through any worker, is a 409)."""
        record = self.run(run_id, owner)
        summary = record.summary()
        if record.status != "paused" or not summary["checkpoint_id"]:
            raise ServeError(
                409,
                "not_paused",
                f"workflow run {run_id!r} is {record.status}, not waiting for input",
            )
        answered = await self.answer_checkpoint(
            record.workflow, owner, summary["checkpoint_id"], responses
        )
        record.status = "answered"
        return answered

    async def checkpoints(self, name: str, owner: str) -> list[dict[str, Any]]:
        """The caller's stored checkpoints of the workflow, newest first; a paused one
        with the requests it waits on."""
        workflow = self.workflow(name)
        tenant = Tenant(owner)
        out: list[dict[str, Any]] = []
        for info in await workflow.checkpoint_store.list():
            if info.workflow != name or not tenant.owns_key(info.run_id):
                continue
            entry: dict[str, Any] = {
                "id": info.id,
                "run_id": info.run_id,
                "superstep": info.superstep,
                "status": info.status,
                "created_at": info.created_at,
            }
            if info.status == "paused":
                entry["requests"] = list((await self.checkpoint(name, owner, info.id)).requests)
            out.append(entry)
        return out

    async def answer_checkpoint(
        self, name: str, owner: str, checkpoint_id: str, responses: Mapping[str, Any]
    ) -> WorkflowRun:
        """Answer the requests a stored paused checkpoint waits on (after a restart, say)."""
        pending = list((await self.checkpoint(name, owner, checkpoint_id)).requests)
        if not pending:
            raise ServeError(409, "not_paused", f"checkpoint {checkpoint_id!r} waits on no request")
        answers = typed_answers(pending, responses)
        # claimed here, before a run starts, so a second answer is a 409 and not a run that
        # fails later; the run then claims again with the same claimant, which holds
        store = self.workflow(name).checkpoint_store
        claimant = f"ui-{uuid.uuid4().hex}"
        try:
            await store.claim(checkpoint_id, list(answers), claimant)
        except AnswerClaimedError as exc:
            raise ServeError(409, "answer_claimed", str(exc)) from exc
        try:
            return self.start(
                name, owner, checkpoint_id=checkpoint_id, responses=answers, claimant=claimant
            )
        except ServeError:
            await store.release(checkpoint_id, list(answers), claimant)
            raise

    async def resume(self, name: str, owner: str, checkpoint_id: str) -> WorkflowRun:
        """Resume a stored checkpoint (one without pending requests)."""
        await self.checkpoint(name, owner, checkpoint_id)
        return self.start(name, owner, checkpoint_id=checkpoint_id)

    async def events(self, record: WorkflowRun, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The run's events from index `after`, as they come, until the run stops."""
        index = after
        while True:
            record.changed.clear()
            while index < len(record.events):
                yield record.events[index]
                index += 1
            if record.status != "running":
                return
            await record.changed.wait()

    async def aclose(self) -> None:
        """Stop runs still going (the server is shutting down)."""
        tasks = [r.task for r in self.runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
