"""Checks a graph before it runs: nodes exist, types meet on every edge, cycles only
through loop-back edges, fallbacks fit; unreachable nodes are warned about."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, get_args, get_origin

from raf.workflow.edges import (
    EdgeGroup,
    FanInEdge,
    LoopEdge,
    NodePolicy,
    sources_of,
    targets_of,
)
from raf.workflow.errors import UnreachableNodeWarning, WorkflowValidationError
from raf.workflow.executor import Executor
from raf.workflow.typeinfo import ANY, any_compatible, flatten, names


def _unknown(node: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(node, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown node {node!r}{hint}; known nodes: {', '.join(sorted(known)) or 'none'}"


def _list_item_types(types: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """What a port typed `list[X]` holds; None when no declared type is a list."""
    items: list[Any] = []
    for tp in types:
        if tp is Any:
            return ANY
        if get_origin(tp) in (list, Sequence) or tp is list:
            args = get_args(tp)
            items.extend(flatten(args[0]) if args else ANY)
    return tuple(items) if items else None


def _check_types(edge: EdgeGroup, nodes: Mapping[str, Executor], problems: list[str]) -> None:
    if isinstance(edge, FanInEdge):
        target = nodes[edge.target]
        items = _list_item_types(target.input_types)
        if items is None:
            problems.append(
                f"{edge.key}: a fan-in delivers a list of messages, but node {edge.target!r} "
                f"accepts {names(target.input_types)}; give it a handler for list[...]"
            )
            return
        for source_id in edge.sources:
            outs = nodes[source_id].output_types
            if outs and outs != ANY and items != ANY and not any_compatible(outs, items):
                problems.append(
                    f"{edge.key}: node {source_id!r} sends {names(outs)}, but node "
                    f"{edge.target!r} takes a list of {names(items)}"
                )
        return
    outs = nodes[edge.source].output_types
    if not outs:
        problems.append(
            f"{edge.key}: node {edge.source!r} sends nothing (its handlers neither return a "
            "value nor declare WorkflowContext[T]) but has an outgoing edge"
        )
        return
    for target_id in targets_of(edge):
        ins = nodes[target_id].input_types
        if outs != ANY and not any_compatible(outs, ins):
            problems.append(
                f"{edge.key}: type mismatch: node {edge.source!r} sends {names(outs)}, "
                f"but node {target_id!r} accepts {names(ins)}"
            )


def _find_cycle(nodes: Sequence[str], edges: Sequence[EdgeGroup]) -> list[str] | None:
    """A cycle made of edges other than loop-back edges, as a path, or None."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for edge in edges:
        if isinstance(edge, LoopEdge):
            continue
        for s in sources_of(edge):
            succ[s].extend(targets_of(edge))
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in succ[n]:
            if state.get(m) == 1:
                return [*stack[stack.index(m) :], m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in nodes:
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def validate_graph(
    *,
    name: str,
    start: str | None,
    nodes: Mapping[str, Executor],
    edges: Sequence[EdgeGroup],
    policies: Mapping[str, NodePolicy],
) -> None:
    """Raise `WorkflowValidationError` listing every problem; warn of unreachable nodes."""
    problems: list[str] = []
    known = list(nodes)
    if start is None:
        problems.append("no start node: call set_start(node) or pass start= to the builder")
    elif start not in nodes:
        problems.append(f"start: {_unknown(start, known)}")
    for node in nodes.values():
        try:
            node.handlers()
        except WorkflowValidationError as exc:
            problems.append(str(exc))
            continue
        if not node.handlers():
            problems.append(f"node {node.id!r} has no handler: mark a method with @handler")
    resolved = not problems
    dangling = False
    for edge in edges:
        missing = [n for n in (*sources_of(edge), *targets_of(edge)) if n not in nodes]
        dangling = dangling or bool(missing)
        for n in missing:
            problems.append(f"{edge.key}: {_unknown(n, known)}")
        if isinstance(edge, LoopEdge) and edge.max_iterations < 1:
            problems.append(f"{edge.key}: max_iterations must be at least 1")
        if not missing and resolved:
            _check_types(edge, nodes, problems)
    for node_id, policy in policies.items():
        where = f"node {node_id!r}"
        if node_id not in nodes:
            problems.append(f"policy: {_unknown(node_id, known)}")
            continue
        if policy.timeout is not None and policy.timeout <= 0:
            problems.append(f"{where}: timeout must be positive")
        retry = policy.retry
        if retry is None:
            continue
        if retry.max_attempts < 1:
            problems.append(f"{where}: retry max_attempts must be at least 1")
        if retry.on_exhausted == "fallback":
            if retry.fallback is None:
                problems.append(f"{where}: on_exhausted='fallback' needs a fallback node")
            elif retry.fallback not in nodes:
                problems.append(f"{where}: fallback: {_unknown(retry.fallback, known)}")
            elif resolved:
                ins, fb = nodes[node_id].input_types, nodes[retry.fallback].input_types
                if not any_compatible(ins, fb):
                    problems.append(
                        f"{where}: fallback {retry.fallback!r} accepts {names(fb)}, "
                        f"not what {node_id!r} handles ({names(ins)})"
                    )
        elif retry.fallback is not None:
            problems.append(f"{where}: a fallback node is set but on_exhausted is not 'fallback'")
    if not dangling:
        cycle = _find_cycle(known, edges)
        if cycle:
            problems.append(
                f"cycle {' -> '.join(cycle)} is not closed by a loop-back edge: "
                "use add_loop(source, target, max_iterations=…) for the edge going back"
            )
    if problems:
        lines = "\n".join(f"  {p}" for p in problems)
        raise WorkflowValidationError(
            f"workflow {name!r} has {len(problems)} problem(s):\n{lines}", key_path=None
        )
    _warn_unreachable(name, start, nodes, edges, policies)


def _warn_unreachable(
    name: str,
    start: str | None,
    nodes: Mapping[str, Executor],
    edges: Sequence[EdgeGroup],
    policies: Mapping[str, NodePolicy],
) -> None:
    succ: dict[str, set[str]] = {n: set() for n in nodes}
    for edge in edges:
        for s in sources_of(edge):
            succ[s].update(targets_of(edge))
    for node_id, policy in policies.items():
        if policy.retry is not None and policy.retry.fallback is not None:
            succ[node_id].add(policy.retry.fallback)
    seen: set[str] = set()
    todo = [start] if start else []
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(succ[n] - seen)
    for n in nodes:
        if n not in seen:
            warnings.warn(
                f"workflow {name!r}: node {n!r} is unreachable from the start node "
                f"{start!r} and will never run",
                UnreachableNodeWarning,
                stacklevel=4,
            )
