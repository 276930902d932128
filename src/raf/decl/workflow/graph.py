"""The older workflow-graph JSON: `nodes` (agents, functions, or a human `approval`),
`edges` of type direct (with an optional `=` condition on the message), fan_out and
fan_in, a `start_node_id` and `output_node_ids`, compiled onto the graph engine.

    {"start_node_id": "plan", "output_node_ids": ["write"],
     "nodes": [{"id": "plan", "type": "agent", "agent": "planner"}, ...],
     "edges": [{"type": "fan_out", "source": "plan", "targets": ["a", "b"]}, ...]}
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping
from typing import Any

from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponse
from raf.decl.powerfx.expressions import Expression, ExpressionError
from raf.decl.powerfx.functions import FUNCTIONS
from raf.decl.powerfx.values import text, truthy
from raf.decl.workflow.program import Issue, KeyPath, WorkflowDefinitionError, hint
from raf.stores.checkpoints import CheckpointStore
from raf.workflow.builder import WorkflowBuilder
from raf.workflow.context import InputResponse, WorkflowContext
from raf.workflow.executor import Executor, handler
from raf.workflow.workflow import Workflow

NODE_TYPES = ("agent", "function", "approval", "script")
EDGE_TYPES = ("direct", "fan_out", "fan_in")
_NODE_KEYS = (
    "id",
    "type",
    "agent",
    "function",
    "name",
    "description",
    "config",
    "prompt",
    "rejected",
    "agent_ref",
    "function_ref",
    "is_output",
    "ports",
    "script",
    "code",
    "language",
)
_SCRIPT_LANGUAGES = ("expression", "powerfx", "power_fx", "raf")
"""Script nodes run raf's expression language; a body in any other is refused."""
_EDGE_KEYS = ("type", "source", "target", "sources", "targets", "condition", "id")


def as_text(message: Any) -> str:
    """What a graph node passes on, as text: fan-in lists are joined by blank lines."""
    if isinstance(message, AgentResponse | ChatMessage):
        return message.text
    if isinstance(message, list):
        return "\n\n".join(as_text(m) for m in message)
    return text(message)


class GraphNode(Executor):
    """A node of the graph JSON: an agent or a function given the incoming text."""

    def __init__(
        self,
        node_id: str,
        *,
        agent: Any = None,
        function: Callable[..., Any] | None = None,
        is_output: bool = False,
        sends: bool = True,
    ) -> None:
        super().__init__(node_id)
        self.agent = agent
        self.function = function
        self.is_output = is_output
        self.sends = sends

    @handler
    async def on_message(self, message: Any, ctx: WorkflowContext[str]) -> None:
        """Answer the incoming text, then send on and/or make it an output."""
        said = as_text(message)
        if self.agent is not None:
            response = await self.agent.run([ChatMessage.user(said)], self.agent.create_session())
            result = response.text
        else:
            assert self.function is not None
            value = self.function(said)
            if inspect.isawaitable(value):
                value = await value
            result = as_text(value)
        if self.is_output:
            await ctx.yield_output(result)
        if self.sends:
            await ctx.send_message(result)


class ApprovalNode(Executor):
    """A human decision in the graph: the incoming text goes on only when approved;
    otherwise the run ends with the `rejected` text as its output. (The answer handler
    comes first: handlers are tried in order, and the message handler takes anything.)"""

    def __init__(
        self,
        node_id: str,
        *,
        prompt: str = "Approve?",
        rejected: str = "Not approved.",
        is_output: bool = False,
        sends: bool = True,
    ) -> None:
        super().__init__(node_id)
        self.prompt = prompt
        self.rejected = rejected
        self.is_output = is_output
        self.sends = sends
        self.pending: dict[str, str] = {}

    @handler
    async def on_answer(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        """Pass the text on when approved; end with the rejection otherwise."""
        said = self.pending.pop(answer.request_id, "")
        if answer.response is not True:
            await ctx.yield_output(self.rejected)
            return
        if self.is_output:
            await ctx.yield_output(said)
        if self.sends:
            await ctx.send_message(said)

    @handler
    async def on_message(self, message: Any, ctx: WorkflowContext[str]) -> None:
        """Ask whether the incoming text may go on."""
        said = as_text(message)
        request_id = await ctx.request_input(f"{self.prompt}\n\n{said}", bool)
        self.pending[request_id] = said

    def snapshot_state(self) -> Any:
        return dict(self.pending)

    def restore_state(self, state: Any) -> None:
        self.pending = dict(state or {})


def _condition(source: str) -> Callable[[Any], bool]:
    compiled = Expression.compile(source)

    def check(message: Any) -> bool:
        def resolve(parts: tuple[str, ...]) -> Any:
            return as_text(message) if parts == ("Message",) else None

        return truthy(compiled.evaluate(resolve, FUNCTIONS))

    return check


def _check_condition(raw: Any, path: KeyPath, issues: list[Issue]) -> Callable[[Any], bool] | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        issues.append(
            Issue(
                path=path, message='a condition is an expression such as =Contains(Message, "ok")'
            )
        )
        return None
    source = raw[1:] if raw.startswith("=") else raw
    try:
        compiled = Expression.compile(source)
    except ExpressionError as exc:
        issues.append(Issue(path=path, message=f"the expression does not parse: {exc}"))
        return None
    for parts, _ in compiled.names:
        if parts[0] != "Message":
            issues.append(
                Issue(
                    path=path,
                    message="an edge condition reads Message (the text on the edge), "
                    f"not {'.'.join(parts)!r}",
                )
            )
            return None
    for name, _ in compiled.calls:
        if name.lower() not in FUNCTIONS:
            issues.append(
                Issue(
                    path=path, message=f"unknown function {name!r}{hint(name.lower(), FUNCTIONS)}"
                )
            )
            return None
    return _condition(source)


def _script(
    node_id: str, node: Mapping[str, Any], where: KeyPath, issues: list[Issue]
) -> Callable[[Any], Any] | None:
    """A script node: its body is an expression of raf's language reading `Message` (the
    incoming text); its value is what the node passes on."""
    language = str(node.get("language", "expression")).lower()
    body = node.get("script", node.get("code"))
    key = "script" if "script" in node else "code"
    if language not in _SCRIPT_LANGUAGES:
        issues.append(
            Issue(
                path=(*where, "language"),
                message=f"script node {node_id!r} is written in {language!r}, which raf "
                "cannot run: write its body in raf's expression language (for example "
                '=Upper(Message) & "!"), or make it a function node (type: function, '
                "function_ref) and bind a Python function to it (with_function, or raf run "
                "--tools module:function)",
            )
        )
        return None
    if not isinstance(body, str) or not body.strip():
        issues.append(Issue(path=(*where, key), message=f"script node {node_id!r} has no body"))
        return None
    source = body.strip()[1:] if body.strip().startswith("=") else body.strip()
    try:
        compiled = Expression.compile(source)
    except ExpressionError as exc:
        issues.append(
            Issue(
                path=(*where, key),
                message=f"script node {node_id!r}: its body is not an expression raf can run: "
                f"{exc}",
            )
        )
        return None
    for name, offset in compiled.calls:
        if name.lower() not in FUNCTIONS:
            issues.append(
                Issue(
                    path=(*where, key),
                    message=f"script node {node_id!r}: unknown function {name!r} at character "
                    f"{offset + 1}",
                )
            )
            return None
    for parts, offset in compiled.names:
        if parts[0] != "Message":
            issues.append(
                Issue(
                    path=(*where, key),
                    message=f"script node {node_id!r} reads {'.'.join(parts)!r} at character "
                    f"{offset + 1}; a script node reads Message (the incoming text)",
                )
            )
            return None

    def run(message: Any) -> Any:
        def resolve(parts: tuple[str, ...]) -> Any:
            return as_text(message) if parts == ("Message",) else None

        return compiled.evaluate(resolve, FUNCTIONS)

    return run


def graph_names(data: Mapping[str, Any]) -> list[tuple[KeyPath, str, str]]:
    """What the graph's nodes name that a program supplies: `(path, "agent" or
    "function", name)` for each agent and function node (an inline agent names itself)."""
    out: list[tuple[KeyPath, str, str]] = []
    nodes = data.get("nodes")
    for i, node in enumerate(nodes if isinstance(nodes, list) else []):
        if not isinstance(node, Mapping) or not isinstance(node.get("id"), str):
            continue
        kind = node.get("type", "agent")
        if kind == "agent":
            # an inline agent takes precedence over a reference (an empty one names none)
            inline = isinstance(node.get("agent"), Mapping)
            ref = node.get("agent_ref") or node.get("agent") or node.get("name") or node["id"]
            out.append((("nodes", i, "agent"), "agent", node["id"] if inline else str(ref)))
        elif kind == "function":
            ref = node.get("function_ref", node.get("function", node["id"]))
            out.append((("nodes", i, "function"), "function", str(ref)))
    return out


def check_graph(
    data: Mapping[str, Any],
    *,
    agents: Collection[str] | None = None,
    functions: Collection[str] | None = None,
) -> list[Issue]:
    """Every issue of the graph JSON at once, by key path: its shape, node and edge
    types, ends that name no node, conditions and scripts; with `agents` or `functions`
    given, also the nodes that name an agent or function missing from them."""
    issues: list[Issue] = []
    nodes = data.get("nodes")
    edges = data.get("edges") or []
    if not isinstance(nodes, list) or not nodes:
        shown = "" if nodes is None else f", got {_shape(nodes)}"
        issues.append(Issue(path=("nodes",), message=f"a graph needs a list of nodes{shown}"))
        nodes = []
    if not isinstance(edges, list):
        issues.append(
            Issue(path=("edges",), message=f"expected a list of edges, got {_shape(edges)}")
        )
        edges = []
    raw_outputs = data.get("output_node_ids") or []
    if not isinstance(raw_outputs, list):
        issues.append(Issue(path=("output_node_ids",), message="expected a list of node ids"))
        raw_outputs = []
    ids: dict[str, None] = {}
    for i, node in enumerate(nodes):
        where: KeyPath = ("nodes", i)
        if not isinstance(node, Mapping) or not isinstance(node.get("id"), str):
            issues.append(Issue(path=where, message="a node is a mapping with an 'id'"))
            continue
        for key in node:
            if key not in _NODE_KEYS:
                issues.append(
                    Issue(
                        path=(*where, str(key)),
                        message=f"a node has no key {key!r}{hint(str(key), _NODE_KEYS)}",
                        key=True,
                    )
                )
        if node["id"] in ids:
            issues.append(
                Issue(path=(*where, "id"), message=f"two nodes have the id {node['id']!r}")
            )
        ids[node["id"]] = None
        kind = node.get("type", "agent")
        if kind not in NODE_TYPES:
            issues.append(
                Issue(
                    path=(*where, "type"),
                    message=f"unknown node type {kind!r}{hint(str(kind), NODE_TYPES)}",
                )
            )
        elif kind == "script":
            _script(node["id"], node, where, issues)
    for i, edge in enumerate(edges):
        where = ("edges", i)
        if not isinstance(edge, Mapping):
            issues.append(Issue(path=where, message="an edge is a mapping with a 'type'"))
            continue
        kind = edge.get("type", "direct")
        if kind not in EDGE_TYPES:
            issues.append(
                Issue(
                    path=(*where, "type"),
                    message=f"unknown edge type {kind!r}{hint(str(kind), EDGE_TYPES)}",
                )
            )
            continue
        for key in edge:
            if key not in _EDGE_KEYS:
                issues.append(
                    Issue(
                        path=(*where, str(key)),
                        message=f"an edge has no key {key!r}{hint(str(key), _EDGE_KEYS)}",
                        key=True,
                    )
                )
        for key in _ENDS[kind]:
            value = edge.get(key)
            if key in ("sources", "targets") and not isinstance(value, list):
                issues.append(
                    Issue(
                        path=(*where, key), message=f"a {kind} edge's {key} is a list of node ids"
                    )
                )
                continue
            for n in value if isinstance(value, list) else [value]:
                if not isinstance(n, str) or n not in ids:
                    issues.append(
                        Issue(path=(*where, key), message=f"no node {n!r}{hint(str(n), ids)}")
                    )
        _check_condition(edge.get("condition"), (*where, "condition"), issues)
    start = data.get("start_node_id")
    if start is None:
        issues.append(
            Issue(path=(), message="a graph needs start_node_id: the id of the node it starts at")
        )
    elif not isinstance(start, str) or start not in ids:
        issues.append(
            Issue(
                path=("start_node_id",),
                message=f"the start node {start!r} is no node{hint(str(start), ids)}",
            )
        )
    for i, out in enumerate(raw_outputs):
        if not isinstance(out, str) or out not in ids:
            issues.append(
                Issue(path=("output_node_ids", i), message=f"no node {out!r}{hint(str(out), ids)}")
            )
    for path, what, ref in graph_names(data):
        known = agents if what == "agent" else functions
        if known is not None and ref not in known:
            issues.append(Issue(path=path, message=f"no {what} {ref!r}{hint(ref, known)}"))
    return issues


_ENDS = {
    "direct": ("source", "target"),
    "fan_out": ("source", "targets"),
    "fan_in": ("sources", "target"),
}


def _shape(value: Any) -> str:
    """A value's kind as a document author says it: a mapping, a list, true, a number."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def build_graph_workflow(
    data: Mapping[str, Any],
    *,
    agents: Mapping[str, Any],
    functions: Mapping[str, Callable[..., Any]],
    name: str = "workflow",
    checkpoint_store: CheckpointStore | None = None,
) -> Workflow:
    """Check the graph JSON (every issue at once, by key path) and build its workflow."""
    issues = check_graph(data, agents=agents, functions=functions)
    if issues:
        raise WorkflowDefinitionError(issues)
    nodes: list[Mapping[str, Any]] = data["nodes"]
    edges: list[Mapping[str, Any]] = data.get("edges") or []
    outputs = list(data.get("output_node_ids") or [])
    outputs += [n["id"] for n in nodes if n.get("is_output") is True and n["id"] not in outputs]
    sources_with_edges: set[str] = set()
    for edge in edges:
        kind = edge.get("type", "direct")
        for n in edge.get("sources", []) if kind == "fan_in" else [edge.get("source")]:
            sources_with_edges.add(str(n))
    named = {path[1]: ref for path, _, ref in graph_names(data)}
    executors: dict[str, Executor] = {}
    for i, node in enumerate(nodes):
        node_id = node["id"]
        is_output, sends = node_id in outputs, node_id in sources_with_edges
        kind = node.get("type", "agent")
        if kind == "approval":
            executors[node_id] = ApprovalNode(
                node_id,
                prompt=str(node.get("prompt", "Approve?")),
                rejected=str(node.get("rejected", "Not approved.")),
                is_output=is_output,
                sends=sends,
            )
            continue
        agent = agents[named[i]] if kind == "agent" else None
        function = functions[named[i]] if kind == "function" else None
        if kind == "script":
            function = _script(node_id, node, ("nodes", i), [])
        executors[node_id] = GraphNode(
            node_id, agent=agent, function=function, is_output=is_output, sends=sends
        )
    conditions = [_check_condition(e.get("condition"), (), []) for e in edges]
    builder = WorkflowBuilder(
        str(data.get("name", name)),
        start=executors[str(data["start_node_id"])],
        description=str(data.get("description", "")),
    )
    for executor in executors.values():
        builder.add_executor(executor)
    for edge, condition in zip(edges, conditions, strict=True):
        kind = edge.get("type", "direct")
        if kind == "direct":
            builder.add_edge(edge["source"], edge["target"], condition=condition)
        elif kind == "fan_out":
            builder.add_fan_out(edge["source"], list(edge["targets"]))
        else:
            builder.add_fan_in(list(edge["sources"]), edge["target"])
    if checkpoint_store is not None:
        builder.with_checkpoint_store(checkpoint_store)
    return builder.build()
