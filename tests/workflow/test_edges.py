"""Each edge kind routes messages as it says: direct with conditions, fan-out, fan-in
(a barrier across supersteps), switch/case, loop-back with its limit, and by type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import pytest

from raf.workflow import (
    Case,
    Executor,
    FunctionExecutor,
    LoopLimitReached,
    SuperstepStarted,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunError,
    executor,
    handler,
)


def node(name: str, fn: object = None) -> FunctionExecutor:
    """A str -> str node that appends its name."""

    def run(text: str) -> str:
        return f"{text}>{name}"

    return FunctionExecutor(run, id=name)


def steps(events: Sequence[object]) -> list[list[str]]:
    return [e.nodes for e in events if isinstance(e, SuperstepStarted)]


async def test_direct_edges_run_one_node_per_superstep() -> None:
    a, b, c = node("a"), node("b"), node("c")
    result = await WorkflowBuilder("chain", start=a).add_chain([a, b, c]).build().run("x")
    assert result.outputs == ["x>a>b>c"]
    assert steps(result.events) == [["a"], ["b"], ["c"]]


async def test_a_condition_lets_only_accepted_messages_pass() -> None:
    a, short, long = node("a"), node("short"), node("long")
    workflow = (
        WorkflowBuilder("cond", start=a)
        .add_edge(a, short, condition=lambda m: len(m) < 5)
        .add_edge(a, long, condition=lambda m: len(m) >= 5)
        .build()
    )
    assert (await workflow.run("x")).outputs == ["x>a>short"]
    assert (await workflow.run("xxxxx")).outputs == ["xxxxx>a>long"]


async def test_fan_out_reaches_every_target_in_one_superstep() -> None:
    a, b, c, d = node("a"), node("b"), node("c"), node("d")
    result = await WorkflowBuilder("fan", start=a).add_fan_out(a, [b, c, d]).build().run("x")
    assert sorted(result.outputs) == ["x>a>b", "x>a>c", "x>a>d"]
    assert steps(result.events) == [["a"], ["b", "c", "d"]]


async def test_fan_out_selector_picks_targets() -> None:
    a, b, c = node("a"), node("b"), node("c")
    workflow = (
        WorkflowBuilder("sel", start=a)
        .add_fan_out(a, [b, c], selector=lambda m, targets: [t for t in targets if t == "c"])
        .build()
    )
    assert (await workflow.run("x")).outputs == ["x>a>c"]


async def test_fan_in_waits_for_every_source_even_across_supersteps() -> None:
    a, fast, slow1, slow2 = node("a"), node("fast"), node("slow1"), node("slow2")

    @executor
    def gather(parts: list[str]) -> str:
        return " + ".join(parts)

    workflow = (
        WorkflowBuilder("barrier", start=a)
        .add_fan_out(a, [fast, slow1])
        .add_edge(slow1, slow2)
        .add_fan_in([fast, slow2], gather)
        .build()
    )
    result = await workflow.run("x")
    # `fast` is done in superstep 2, `slow2` in 3: the barrier holds until then.
    assert steps(result.events) == [["a"], ["fast", "slow1"], ["slow2"], ["gather"]]
    assert result.outputs == ["x>a>fast + x>a>slow1>slow2"]


async def test_switch_takes_the_first_matching_case_else_the_default() -> None:
    a, neg, small, other = node("a"), node("neg"), node("small"), node("other")

    @executor(id="num")
    def num(text: str) -> int:
        return int(text)

    @executor(id="neg")
    def negative(n: int) -> str:
        return f"{n} neg"

    @executor(id="small")
    def is_small(n: int) -> str:
        return f"{n} small"

    @executor(id="other")
    def big(n: int) -> str:
        return f"{n} other"

    workflow = (
        WorkflowBuilder("switch", start=num)
        .add_switch(
            num,
            [Case(condition=lambda n: n < 0, target="neg"), (lambda n: n < 10, is_small)],
            default=big,
        )
        .add_executor(negative)
        .build()
    )
    del a, neg, small, other
    assert (await workflow.run("-3")).outputs == ["-3 neg"]
    assert (await workflow.run("-3")).outputs == ["-3 neg"]  # first match wins over `small`
    assert (await workflow.run("4")).outputs == ["4 small"]
    assert (await workflow.run("40")).outputs == ["40 other"]


class Counter(Executor):
    """Adds one and sends the number on."""

    @handler
    async def run(self, n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)


@executor
def check(n: int) -> int:
    return n


async def test_loop_back_repeats_until_the_condition_stops_it() -> None:
    counter = Counter()

    @executor
    def done(n: int) -> str:
        return f"done at {n}"

    workflow = (
        WorkflowBuilder("loop", start=counter)
        .add_edge(counter, check)
        .add_loop(check, counter, condition=lambda n: n < 3, max_iterations=5)
        .add_edge(check, done, condition=lambda n: n >= 3)
        .build()
    )
    result = await workflow.run(0)
    # check(1) and check(2) loop back; check(3) leaves the loop.
    assert result.outputs == ["done at 3"]
    assert steps(result.events) == [["counter"], ["check"]] * 3 + [["done"]]


async def test_a_loop_that_hits_its_limit_fails_the_run() -> None:
    counter = Counter()
    workflow = (
        WorkflowBuilder("loop", start=counter)
        .add_edge(counter, check)
        .add_loop(check, counter, max_iterations=2)
        .build()
    )
    with pytest.raises(WorkflowRunError, match=r"loop:check->counter reached its limit of 2"):
        await workflow.run(0)


async def test_a_loop_with_on_limit_stop_drops_the_message_and_says_so() -> None:
    counter = Counter()
    workflow = (
        WorkflowBuilder("loop", start=counter)
        .add_edge(counter, check)
        .add_loop(check, counter, max_iterations=2, on_limit="stop")
        .build()
    )
    result = await workflow.run(0)
    assert result.status == "completed" and result.outputs == []
    assert [e.limit for e in result.events if isinstance(e, LoopLimitReached)] == [2]
    assert steps(result.events) == [["counter"], ["check"]] * 3


class Splitter(Executor):
    """Sends text and numbers: each goes only where it is handled."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str | int]) -> None:
        await ctx.send_message(text)
        await ctx.send_message(len(text))


async def test_messages_go_along_the_edges_whose_targets_handle_their_type() -> None:
    splitter = Splitter()

    @executor
    def on_text(text: str) -> str:
        return f"text {text}"

    @executor
    def on_number(n: int) -> str:
        return f"number {n}"

    workflow = (
        WorkflowBuilder("types", start=splitter)
        .add_edge(splitter, on_text)
        .add_edge(splitter, on_number)
        .build()
    )
    assert sorted((await workflow.run("abc")).outputs) == ["number 3", "text abc"]


class Targeted(Executor):
    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text, target="right")


async def test_send_message_to_a_named_target() -> None:
    left, right, source = node("left"), node("right"), Targeted()
    workflow = WorkflowBuilder("t", start=source).add_fan_out(source, [left, right]).build()
    assert (await workflow.run("x")).outputs == ["x>right"]


async def test_a_message_no_target_handles_is_a_clear_run_error() -> None:
    class Liar(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(42)  # type: ignore[arg-type]

    liar, b = Liar(), node("b")
    workflow = WorkflowBuilder("liar", start=liar).add_edge(liar, b).build()
    with pytest.raises(WorkflowRunError, match="type int that no node on its edges handles"):
        await workflow.run("x")


async def test_a_start_message_of_the_wrong_type_is_refused() -> None:
    workflow = WorkflowBuilder("w", start=node("a")).build()
    with pytest.raises(WorkflowRunError, match="start node 'a' accepts str, not int"):
        await workflow.run(3)


class Words(Executor):
    """Sends each word as its own message."""

    @handler
    async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
        for word in text.split():
            await ctx.send_message(word)


async def test_fan_in_takes_every_message_its_sources_sent_in_the_superstep() -> None:
    words = Words()
    up, low = node("up"), node("low")

    @executor
    def gather(parts: list[str]) -> str:
        return " ".join(parts)

    workflow = (
        WorkflowBuilder("many", start=words)
        .add_fan_out(words, [up, low])
        .add_fan_in([up, low], gather)
        .build()
    )
    result = await workflow.run("a b")
    assert result.outputs == ["a>up b>up a>low b>low"]


class Payload(TypedDict):
    """A TypedDict message: checked as a dict only."""

    name: str


@executor
def make_payload(text: str) -> Payload:
    return {"name": text}


@executor
def read_payload(payload: Payload) -> str:
    return payload["name"].title()


async def test_typed_dict_messages_flow_although_they_cannot_be_checked_exactly() -> None:
    workflow = (
        WorkflowBuilder("td", start=make_payload).add_edge(make_payload, read_payload).build()
    )
    assert (await workflow.run("ada")).outputs == ["Ada"]
