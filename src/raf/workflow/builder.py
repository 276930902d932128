"""Build a workflow: add nodes and edges, set policies, then `build()` checks the graph.

    workflow = (
        WorkflowBuilder("review", start=draft)
        .add_edge(draft, review)
        .add_loop(review, draft, condition=needs_work, max_iterations=3)
        .add_edge(review, publish, condition=approved)
        .with_retry(publish, RetryPolicy(max_attempts=3))
        .build()
    )

A node is an `Executor`, a function (wrapped in `FunctionExecutor`), an `Agent` or a
workflow (wrapped in `AgentExecutor`; a workflow runs as its `as_agent()`), or the id
of a node added before.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, Literal

from raf.stores.checkpoints import CheckpointStore, SqliteCheckpointStore
from raf.workflow.edges import (
    Case,
    Condition,
    Edge,
    EdgeGroup,
    FanInEdge,
    FanOutEdge,
    LoopEdge,
    NodePolicy,
    RetryPolicy,
    Selector,
    SwitchEdge,
)
from raf.workflow.errors import WorkflowValidationError
from raf.workflow.executor import Executor, FunctionExecutor
from raf.workflow.validation import validate_graph
from raf.workflow.workflow import Workflow

NodeLike = Executor | Callable[..., Any] | str | Any
"""An executor, a function, an `Agent`, a `Workflow` (run as an agent), or the id of a
node already added."""


class WorkflowBuilder:
    """Collects nodes, edges and policies; `build()` validates and returns a `Workflow`."""

    def __init__(
        self, name: str = "workflow", *, start: NodeLike | None = None, description: str = ""
    ) -> None:
        self.name = name
        self.description = description
        self._nodes: dict[str, Executor] = {}
        self._by_object: dict[int, str] = {}
        self._edges: list[EdgeGroup] = []
        self._policies: dict[str, NodePolicy] = {}
        self._start: str | None = None
        self._max_concurrency = 8
        self._max_supersteps = 100
        self._timeout: float | None = None
        self._store: CheckpointStore | None = None
        if start is not None:
            self.set_start(start)

    # -- nodes -----------------------------------------------------------------------------

    def add_executor(self, node: NodeLike) -> WorkflowBuilder:
        """Add a node (edges add theirs too; this is for nodes reached otherwise)."""
        self._node_id(node)
        return self

    def set_start(self, node: NodeLike) -> WorkflowBuilder:
        """The node that receives the run's input."""
        self._start = self._node_id(node)
        return self

    def _node_id(self, node: NodeLike) -> str:
        if isinstance(node, str):
            return node
        known = self._by_object.get(id(node))
        if known is not None:
            return known
        executor = _as_executor(node)
        existing = self._nodes.get(executor.id)
        if existing is not None and existing is not executor:
            raise WorkflowValidationError(
                f"two different nodes have the id {executor.id!r}: give one another id"
            )
        self._nodes[executor.id] = executor
        self._by_object[id(node)] = executor.id
        return executor.id

    # -- edges -----------------------------------------------------------------------------

    def add_edge(
        self, source: NodeLike, target: NodeLike, *, condition: Condition | None = None
    ) -> WorkflowBuilder:
        """A direct edge; with `condition`, only the messages it accepts pass."""
        self._edges.append(
            Edge(source=self._node_id(source), target=self._node_id(target), condition=condition)
        )
        return self

    def add_chain(self, nodes: Sequence[NodeLike]) -> WorkflowBuilder:
        """Direct edges between consecutive nodes."""
        ids = [self._node_id(n) for n in nodes]
        for source, target in itertools.pairwise(ids):
            self._edges.append(Edge(source=source, target=target))
        return self

    def add_fan_out(
        self, source: NodeLike, targets: Sequence[NodeLike], *, selector: Selector | None = None
    ) -> WorkflowBuilder:
        """Every message of `source` to each target (or to those `selector` picks)."""
        self._edges.append(
            FanOutEdge(
                source=self._node_id(source),
                targets=[self._node_id(t) for t in targets],
                selector=selector,
            )
        )
        return self

    def add_fan_in(self, sources: Sequence[NodeLike], target: NodeLike) -> WorkflowBuilder:
        """A barrier: `target` gets the list of the sources' messages once all have sent."""
        self._edges.append(
            FanInEdge(sources=[self._node_id(s) for s in sources], target=self._node_id(target))
        )
        return self

    def add_switch(
        self,
        source: NodeLike,
        cases: Sequence[Case | tuple[Condition, NodeLike]],
        *,
        default: NodeLike | None = None,
    ) -> WorkflowBuilder:
        """Each message to the first case whose condition accepts it, else to `default`."""
        built = [
            c if isinstance(c, Case) else Case(condition=c[0], target=self._node_id(c[1]))
            for c in cases
        ]
        for case in built:
            self._node_id(case.target)
        self._edges.append(
            SwitchEdge(
                source=self._node_id(source),
                cases=built,
                default=None if default is None else self._node_id(default),
            )
        )
        return self

    def add_loop(
        self,
        source: NodeLike,
        target: NodeLike,
        *,
        condition: Condition | None = None,
        max_iterations: int = 10,
        on_limit: Literal["fail", "stop"] = "fail",
    ) -> WorkflowBuilder:
        """An edge back to an earlier node, taken at most `max_iterations` times a run."""
        self._edges.append(
            LoopEdge(
                source=self._node_id(source),
                target=self._node_id(target),
                condition=condition,
                max_iterations=max_iterations,
                on_limit=on_limit,
            )
        )
        return self

    # -- policies --------------------------------------------------------------------------

    def _policy(self, node: NodeLike) -> NodePolicy:
        return self._policies.setdefault(self._node_id(node), NodePolicy())

    def with_retry(self, node: NodeLike, policy: RetryPolicy) -> WorkflowBuilder:
        """Retry a failing node with backoff; `policy.on_exhausted` says what follows."""
        if policy.fallback is not None:
            self._node_id(policy.fallback)
        self._policy(node).retry = policy
        return self

    def with_timeout(self, node: NodeLike, seconds: float) -> WorkflowBuilder:
        """Fail an attempt of `node` that runs longer than `seconds` (it may be retried)."""
        self._policy(node).timeout = seconds
        return self

    def with_compensation(self, node: NodeLike, fn: Callable[[Any], Any]) -> WorkflowBuilder:
        """`fn(message)` undoes what `node` did with `message` if the run later fails;
        compensations run in reverse order of completion."""
        self._policy(node).compensate = fn
        return self

    def with_run_timeout(self, seconds: float) -> WorkflowBuilder:
        """Fail a run that takes longer than `seconds` (its last checkpoint stays)."""
        self._timeout = seconds
        return self

    def with_max_concurrency(self, n: int) -> WorkflowBuilder:
        """At most `n` nodes run at once within a superstep."""
        if n < 1:
            raise WorkflowValidationError("max_concurrency must be at least 1")
        self._max_concurrency = n
        return self

    def with_max_supersteps(self, n: int) -> WorkflowBuilder:
        """Fail a run that has not finished after `n` supersteps."""
        if n < 1:
            raise WorkflowValidationError("max_supersteps must be at least 1")
        self._max_supersteps = n
        return self

    def with_checkpoint_store(self, store: CheckpointStore | None = None) -> WorkflowBuilder:
        """Where checkpoints go; with no argument, the default SQLite file
        (`.raf/checkpoints.sqlite`, or `$RAF_CHECKPOINTS`). Without this call they are
        kept in memory."""
        self._store = store if store is not None else SqliteCheckpointStore()
        return self

    def build(self) -> Workflow:
        """Check the graph and return the workflow; every problem is listed at once."""
        validate_graph(
            name=self.name,
            start=self._start,
            nodes=self._nodes,
            edges=self._edges,
            policies=self._policies,
        )
        assert self._start is not None
        return Workflow(
            name=self.name,
            description=self.description,
            start=self._start,
            nodes=dict(self._nodes),
            edges=list(self._edges),
            policies=dict(self._policies),
            max_concurrency=self._max_concurrency,
            max_supersteps=self._max_supersteps,
            timeout=self._timeout,
            checkpoint_store=self._store,
        )


def _as_executor(node: Any) -> Executor:
    if isinstance(node, Executor):
        if not hasattr(node, "_by_type"):
            raise WorkflowValidationError(
                f"{type(node).__name__}.__init__ must call super().__init__(id) to be a node"
            )
        return node
    from raf.agent.agent import Agent
    from raf.workflow.agent_executor import AgentExecutor
    from raf.workflow.as_agent import WorkflowAgent

    if isinstance(node, Agent | WorkflowAgent):
        return AgentExecutor(node)
    if isinstance(node, Workflow):
        return AgentExecutor(node.as_agent())
    if callable(node):
        return FunctionExecutor(node)
    raise WorkflowValidationError(
        "a node must be an Executor, a function, an Agent, a Workflow or a node id, "
        f"not {type(node).__name__}"
    )
