"""Invariants of every strategy over random histories (hypothesis): no dangling call or
result, system messages survive, the input is untouched, and the budget holds if it can."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raf.context.compression import (
    CompressionPipeline,
    CompressionStrategy,
    ObservationMaskingStrategy,
    SlidingWindowStrategy,
    SummarizationStrategy,
    TokenBudgetStrategy,
    dangling,
)
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.tokens import EstimatingCounter, count_messages_tokens
from raf.testing import FunctionChatClient

from .compression_helpers import tool_group

COUNTER = EstimatingCounter()

item = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 400)),
    st.tuples(st.just("assistant"), st.integers(1, 400)),
    st.tuples(
        st.just("tools"), st.lists(st.integers(0, 3_000), min_size=1, max_size=3), st.booleans()
    ),
)


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    out = [
        ChatMessage.system(f"system {i} " + "s" * draw(st.integers(0, 200)))
        for i in range(draw(st.integers(0, 2)))
    ]
    specs: list[Any] = draw(st.lists(item, max_size=30))
    for index, spec in enumerate(specs):
        if spec[0] == "user":
            out.append(ChatMessage.user("u" * spec[1]))
        elif spec[0] == "assistant":
            out.append(ChatMessage.assistant("a" * spec[1]))
        else:
            out += tool_group(index, spec[1], one_message=spec[2])
    return out


def summarising() -> SummarizationStrategy:
    def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        return "summary of earlier turns"

    return SummarizationStrategy(FunctionChatClient(answer), threshold=0.5, keep_recent=4)


FACTORIES: dict[str, Callable[[], CompressionStrategy]] = {
    "window": lambda: SlidingWindowStrategy(keep_last=5),
    "budget": TokenBudgetStrategy,
    "masking": lambda: ObservationMaskingStrategy(keep_last=2),
    "summary": summarising,
    "pipeline": lambda: CompressionPipeline(
        [ObservationMaskingStrategy(keep_last=2), summarising(), TokenBudgetStrategy()]
    ),
}
BUDGETED = {"budget", "pipeline"}
MODEL_FREE = {"window", "budget", "masking"}


def check(name: str, messages: list[ChatMessage], budget: int) -> None:
    before = [m.to_dict() for m in messages]
    out = asyncio.run(FACTORIES[name]().compress(messages, budget, COUNTER))
    assert [m.to_dict() for m in messages] == before, "the input was changed"
    if name in MODEL_FREE:
        same = FACTORIES[name]().compress_sync(messages, budget, COUNTER)  # type: ignore[attr-defined]
        assert [m.to_dict() for m in same] == [m.to_dict() for m in out], "sync differs"
    assert dangling(out) == (set(), set()), "a call or a result lost its partner"
    system_in = [m.text for m in messages if m.role is Role.SYSTEM]
    assert [m.text for m in out if m.role is Role.SYSTEM] == system_in
    if name in BUDGETED:
        floor = count_messages_tokens([m for m in messages if m.role is Role.SYSTEM], COUNTER)
        if floor <= budget:
            assert count_messages_tokens(out, COUNTER) <= budget


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(histories(), st.integers(0, 6_000))
def test_sliding_window_invariants(messages: list[ChatMessage], budget: int) -> None:
    check("window", messages, budget)


@SETTINGS
@given(histories(), st.integers(0, 6_000))
def test_token_budget_invariants(messages: list[ChatMessage], budget: int) -> None:
    check("budget", messages, budget)


@SETTINGS
@given(histories(), st.integers(0, 6_000))
def test_observation_masking_invariants(messages: list[ChatMessage], budget: int) -> None:
    check("masking", messages, budget)


@SETTINGS
@given(histories(), st.integers(0, 6_000))
def test_summarisation_invariants(messages: list[ChatMessage], budget: int) -> None:
    check("summary", messages, budget)


@SETTINGS
@given(histories(), st.integers(0, 6_000))
def test_pipeline_invariants(messages: list[ChatMessage], budget: int) -> None:
    check("pipeline", messages, budget)
