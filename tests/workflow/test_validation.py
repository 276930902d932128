"""Build-time checks: every problem of a graph is found before it runs, and named."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest

from raf.workflow import (
    Executor,
    RetryPolicy,
    UnreachableNodeWarning,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowValidationError,
    executor,
    handler,
)


@dataclass(kw_only=True, slots=True)
class Order:
    """A message type of the tests."""

    item: str


@executor
def text_source(text: str) -> str:
    return text


@executor
def count(text: str) -> int:
    return len(text)


@executor
def takes_int(n: int) -> int:
    return n


@executor
def takes_order(order: Order) -> str:
    return order.item


@executor
def join(parts: list[str]) -> str:
    return "".join(parts)


@executor
def sink(text: str) -> None:
    return None


class Untyped(Executor):
    @handler
    async def run(self, message, ctx: WorkflowContext[str]) -> None:
        return None


def test_a_type_mismatch_on_an_edge_names_both_nodes_and_types() -> None:
    builder = WorkflowBuilder("bad", start=text_source).add_edge(text_source, takes_order)
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    message = str(info.value)
    assert "edge:text_source->takes_order" in message
    assert "sends str" in message and "accepts Order" in message


def test_matching_types_build_and_int_goes_into_an_int_port() -> None:
    workflow = WorkflowBuilder("ok", start=text_source).add_chain([text_source, count, takes_int])
    assert workflow.build().start == "text_source"


def test_unknown_node_gets_a_did_you_mean() -> None:
    builder = WorkflowBuilder("bad", start=text_source).add_edge(text_source, "coutn")
    builder.add_executor(count)
    with pytest.raises(
        WorkflowValidationError, match=r"unknown node 'coutn' \(did you mean 'count'"
    ):
        builder.build()


def test_no_start_node_is_an_error() -> None:
    with pytest.raises(WorkflowValidationError, match="no start node"):
        WorkflowBuilder("bad").add_edge(text_source, count).build()


def test_a_cycle_without_a_loop_edge_is_refused_with_its_path() -> None:
    @executor(id="a")
    def a(text: str) -> str:
        return text

    @executor(id="b")
    def b(text: str) -> str:
        return text

    builder = WorkflowBuilder("cyc", start=a).add_edge(a, b).add_edge(b, a)
    with pytest.raises(WorkflowValidationError, match=r"cycle a -> b -> a is not closed"):
        builder.build()
    # The same cycle closed by a loop-back edge builds.
    WorkflowBuilder("loop", start=a).add_edge(a, b).add_loop(b, a, max_iterations=2).build()


def test_unreachable_nodes_are_warned_about_not_refused() -> None:
    builder = WorkflowBuilder("w", start=text_source).add_edge(text_source, count)
    builder.add_executor(sink)
    with pytest.warns(UnreachableNodeWarning, match="'sink' is unreachable"):
        builder.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WorkflowBuilder("w2", start=text_source).add_edge(text_source, count).build()


def test_a_fan_in_target_must_take_a_list() -> None:
    @executor(id="other")
    def other(text: str) -> str:
        return text

    builder = (
        WorkflowBuilder("f", start=text_source)
        .add_fan_out(text_source, [count, other])
        .add_fan_in([count, other], takes_int)
    )
    with pytest.raises(WorkflowValidationError, match="fan-in delivers a list"):
        builder.build()


def test_a_fan_in_checks_each_source_against_the_list_items() -> None:
    builder = (
        WorkflowBuilder("f", start=text_source)
        .add_fan_out(text_source, [count, takes_order])
        .add_fan_in([count], join)
    )
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    assert "node 'count' sends int" in str(info.value)
    assert "takes_order" in str(info.value)  # the str -> Order edge is reported too


def test_a_node_that_sends_nothing_cannot_have_an_outgoing_edge() -> None:
    builder = WorkflowBuilder("s", start=sink).add_edge(sink, count)
    with pytest.raises(WorkflowValidationError, match="'sink' sends nothing"):
        builder.build()


def test_a_handler_without_a_message_annotation_is_refused() -> None:
    with pytest.raises(WorkflowValidationError, match="must annotate its message parameter"):
        WorkflowBuilder("u", start=Untyped()).build()


def test_two_nodes_with_one_id_are_refused() -> None:
    @executor(id="count")
    def another(text: str) -> int:
        return 0

    builder = WorkflowBuilder("d", start=count)
    with pytest.raises(WorkflowValidationError, match="two different nodes have the id 'count'"):
        builder.add_edge(count, another)


def test_fallback_must_exist_and_accept_the_same_messages() -> None:
    builder = (
        WorkflowBuilder("fb", start=text_source)
        .add_executor(takes_int)
        .with_retry(text_source, RetryPolicy(on_exhausted="fallback", fallback="takes_int"))
    )
    with pytest.raises(WorkflowValidationError, match="fallback 'takes_int' accepts int"):
        builder.build()
    missing = WorkflowBuilder("fb2", start=text_source).with_retry(
        text_source, RetryPolicy(on_exhausted="fallback")
    )
    with pytest.raises(WorkflowValidationError, match="needs a fallback node"):
        missing.build()


def test_all_problems_are_listed_at_once() -> None:
    builder = (
        WorkflowBuilder("many", start=text_source)
        .add_edge(text_source, takes_order)
        .add_edge(text_source, "nowhere")
        .add_loop(text_source, text_source, max_iterations=0)
    )
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    text = str(info.value)
    assert "3 problem(s)" in text
    assert "nowhere" in text and "max_iterations" in text and "type mismatch" in text


class Forgetful(Executor):
    def __init__(self) -> None:
        self.id = "forgetful"

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        return None


def test_an_executor_that_skips_super_init_is_refused_clearly() -> None:
    with pytest.raises(WorkflowValidationError, match=r"must call super\(\).__init__"):
        WorkflowBuilder("f", start=Forgetful())


def test_a_cycle_is_reported_beside_a_type_mismatch() -> None:
    @executor(id="a")
    def a(text: str) -> str:
        return text

    @executor(id="b")
    def b(text: str) -> str:
        return text

    builder = (
        WorkflowBuilder("both", start=a).add_edge(a, b).add_edge(b, a).add_edge(b, takes_order)
    )
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    assert "type mismatch" in str(info.value) and "cycle a -> b -> a" in str(info.value)
