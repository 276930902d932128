"""Pinned messages and facts: every strategy keeps them word for word, counts them against
the budget first, and keeps them in their place; a 300-turn conversation shows it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import pytest

from raf.agent.builder import AgentBuilder
from raf.context.compression import (
    AnyCompressionStrategy,
    CompressionPipeline,
    CompressionProvider,
    CompressionSettingError,
    ObservationMaskingStrategy,
    SlidingWindowStrategy,
    SummarizationStrategy,
    TokenBudgetStrategy,
    apply_strategy,
    apply_strategy_sync,
    dangling,
)
from raf.context.compression.provider import PINNED_HEADER
from raf.core.messages import ChatMessage, Role
from raf.core.tokens import EstimatingCounter, TokenCounter, count_messages_tokens
from raf.testing import FunctionChatClient

from .compression_helpers import (
    FACT,
    SUMMARY,
    TOOL_FACT,
    conversation_model,
    converse,
    history,
    lookup,
    seen_text,
    summariser,
    tool_group,
)

COUNTER = EstimatingCounter()

STRATEGIES: dict[str, Callable[[], AnyCompressionStrategy]] = {
    "sliding_window": lambda: SlidingWindowStrategy(keep_last=20),
    "token_budget": TokenBudgetStrategy,
    "observation_masking": lambda: ObservationMaskingStrategy(keep_last=3),
    "summarization": lambda: SummarizationStrategy(summariser(), keep_recent=10),
    "pipeline": lambda: CompressionPipeline(
        [
            ObservationMaskingStrategy(keep_last=3),
            SummarizationStrategy(summariser(), keep_recent=10),
            TokenBudgetStrategy(),
        ]
    ),
}


def tokens(messages: Sequence[ChatMessage]) -> int:
    return count_messages_tokens(messages, COUNTER)


def pinned_history(turns: int = 12) -> list[ChatMessage]:
    """A history whose second user message and fourth tool group are pinned."""
    messages = history(turns, result_size=400)
    messages[5].pinned = True  # the user message of turn 1
    messages[14].pinned = True  # the call of turn 3: its result (15) goes with it
    return messages


# -- the 300-turn conversation ----------------------------------------------------------


@pytest.mark.parametrize("budget", [2_000, 300])
@pytest.mark.parametrize("kind", list(STRATEGIES))
async def test_a_pinned_fact_is_there_word_for_word_after_300_turns(kind: str, budget: int) -> None:
    """The user's fact of turn 1 and the tool's of turn 2, pinned, reach the model in the
    last of 300 turns word for word; unpinned, every strategy loses them (the masking
    strategy drops no user message, so only the tool's)."""
    seen: dict[bool, str] = {}
    for pin in (True, False):
        model = conversation_model()
        provider = CompressionProvider(STRATEGIES[kind](), budget, counter=COUNTER)
        agent = (
            AgentBuilder()
            .with_chat_client(model)
            .with_tools([lookup])
            .with_context_provider(provider)
            .build()
        )
        session = await converse(agent, 300, pin=pin)
        assert len(session.messages) > 600  # the stored session keeps every turn
        last = model.requests[-1].messages
        assert last[-1].text == "question 299: please tell me about topic 299"
        seen[pin] = seen_text(last)
        if pin:
            assert [m.text for m in session.pinned][:1] == [FACT]
            assert dangling(last) == (set(), set())
    assert FACT in seen[True] and TOOL_FACT in seen[True]
    assert TOOL_FACT not in seen[False]
    if kind != "observation_masking":
        assert FACT not in seen[False]


# -- the rule, strategy by strategy -----------------------------------------------------


@pytest.mark.parametrize("kind", list(STRATEGIES))
async def test_every_strategy_keeps_pinned_messages_in_their_place(kind: str) -> None:
    messages = pinned_history()
    budget = 1_200
    out = await apply_strategy(STRATEGIES[kind](), messages, budget, COUNTER)
    for message in (messages[5], messages[14], messages[15]):
        assert sum(1 for m in out if m is message) == 1, message.text  # the very object
    assert [m for m in out if m.pinned] == [m for m in messages if m.pinned]
    assert dangling(out) == (set(), set())
    # in order: each pinned message stands after the system message, and the call of
    # turn 3 is followed at once by its result
    call_at = out.index(messages[14])
    assert out[call_at + 1] is messages[15]
    assert out.index(messages[5]) < call_at
    assert out[0].role is Role.SYSTEM


@pytest.mark.parametrize("kind", ["sliding_window", "token_budget", "observation_masking"])
def test_the_loop_free_strategies_keep_pins_when_called_directly(kind: str) -> None:
    strategy = STRATEGIES[kind]()
    messages = pinned_history()
    out = strategy.compress_sync(messages, 1_200, COUNTER)  # type: ignore[union-attr]
    assert messages[5] in out and messages[14] in out and messages[15] in out
    assert out == apply_strategy_sync(strategy, messages, 1_200, COUNTER)


def test_a_pinned_message_stays_where_it_stood_among_what_is_kept() -> None:
    messages = history(8, result_size=50)  # turn i is messages 1 + 4i .. 4 + 4i
    messages[1].pinned = True  # turn 0's question: long out of the window
    messages[25].pinned = True  # turn 6's question: inside it
    out = SlidingWindowStrategy(keep_last=8).compress_sync(messages, 10**6, COUNTER)
    # the window holds 8 unpinned messages (turn 5's answer on); the pins go in order
    assert out == [messages[0], messages[1], *messages[24:]]


async def test_a_summary_never_holds_what_was_pinned_and_the_summariser_never_sees_it() -> None:
    asked: list[str] = []

    def summarise(messages: Sequence[ChatMessage], options: object) -> str:
        asked.append(messages[-1].text)
        return SUMMARY

    messages = history(10, result_size=200)
    messages[5] = ChatMessage.user(FACT, pinned=True)
    strategy = SummarizationStrategy(FunctionChatClient(summarise), keep_recent=4)
    out = await strategy.compress(messages, 500, COUNTER)
    assert strategy.summaries_made == 1 and FACT not in asked[0]
    assert [m.text.split("\n")[-1] for m in out[1:3]] == [SUMMARY, FACT]
    assert out[2] is messages[5]


async def test_pinned_content_is_counted_against_the_budget_first() -> None:
    """The rest is compressed into what the pinned content leaves: the whole stays within
    the budget."""
    messages = history(20, result_size=300)
    pinned = ChatMessage.user("Remember: " + "the code word is heron. " * 40, pinned=True)
    messages.insert(1, pinned)
    budget = 1_000
    assert tokens([pinned]) > 200
    for kind in ("token_budget", "pipeline"):
        out = await apply_strategy(STRATEGIES[kind](), messages, budget, COUNTER)
        assert pinned in out
        assert tokens(out) <= budget, kind


async def test_pinned_content_over_the_budget_is_all_kept_and_the_rest_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = history(6, result_size=100)
    pins = [ChatMessage.user(f"Fact {i}: " + "word " * 60, pinned=True) for i in range(3)]
    messages[2:2] = pins
    budget = tokens(pins) - 10
    for kind in STRATEGIES:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="raf.context.compression"):
            out = await apply_strategy(STRATEGIES[kind](), messages, budget, COUNTER)
        assert out == [messages[0], *pins], kind  # the system message and the pins
        assert "pinned messages alone take" in caplog.text


async def test_a_strategy_of_your_own_keeps_pins_through_apply_strategy() -> None:
    class KeepTheLast:
        def compress(
            self, messages: Sequence[ChatMessage], budget: int, counter: TokenCounter
        ) -> list[ChatMessage]:
            return list(messages)[-1:]

    messages = pinned_history()
    out = await apply_strategy(KeepTheLast(), messages, 10**6, COUNTER)
    assert out == [messages[5], messages[14], messages[15], messages[-1]]
    assert apply_strategy_sync(KeepTheLast(), messages, 10**6, COUNTER) == out


async def test_nothing_pinned_leaves_the_strategies_as_they_were() -> None:
    messages = history(8, result_size=300)
    strategies = [SlidingWindowStrategy(4), TokenBudgetStrategy(), ObservationMaskingStrategy()]
    for strategy in strategies:
        unpinned = strategy._shorten(messages, 900, COUNTER)
        assert await apply_strategy(strategy, messages, 900, COUNTER) == unpinned


# -- the provider: compact, and the agent's own pinned facts ---------------------------


async def test_compact_keeps_the_pinned_messages_in_the_session() -> None:
    provider = CompressionProvider(TokenBudgetStrategy(), 400, counter=COUNTER)
    agent = AgentBuilder().with_chat_client(conversation_model()).with_tools([lookup]).build()
    session = await converse(agent, 30)
    before = session.pinned
    assert len(before) == 2
    note = await provider.compact(session)
    assert note.startswith("compacted")
    assert session.pinned == before and all(any(m is p for m in session.messages) for p in before)
    assert dangling(session.messages) == (set(), set())


async def test_the_providers_pinned_facts_go_first_in_every_run() -> None:
    model = conversation_model()
    facts = ["The customer is Ada Lovelace.", "Never quote prices in dollars."]
    provider = CompressionProvider(SlidingWindowStrategy(keep_last=4), 300, pinned=facts)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tools([lookup])
        .with_context_provider(provider)
        .build()
    )
    await converse(agent, 40, pin=False)
    for request in (model.requests[0], model.requests[-1]):
        first = next(m for m in request.messages if m.role is not Role.SYSTEM)
        assert first.text == f"{PINNED_HEADER}\n- {facts[0]}\n- {facts[1]}"


@pytest.mark.parametrize("bad", ["one string", [""], ["  "], [3]])
def test_pinned_facts_must_be_a_list_of_text(bad: object) -> None:
    with pytest.raises(CompressionSettingError, match="pinned"):
        CompressionProvider(TokenBudgetStrategy(), 100, pinned=bad)  # type: ignore[arg-type]


def test_the_tool_group_of_a_pinned_result_is_pinned_whole() -> None:
    messages = [ChatMessage.system("s"), *tool_group(1, [30, 30]), ChatMessage.user("later")]
    messages[2].pinned = True  # the first result only
    out = TokenBudgetStrategy().compress_sync(messages, 1, COUNTER)
    assert out == messages[:4]  # the call and both results, never apart
