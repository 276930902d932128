"""Compression strategies, the pipeline, summarisation, the provider and the compact tool."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from raf.agent.builder import AgentBuilder
from raf.context.compression import (
    CircuitBreaker,
    CompressionPipeline,
    CompressionProvider,
    ObservationMaskingStrategy,
    SlidingWindowStrategy,
    SummarizationStrategy,
    TokenBudgetStrategy,
    apply_strategy_sync,
    dangling,
    input_budget,
)
from raf.context.compression.summarize import SUMMARY_AUTHOR
from raf.core.context import ContextResult
from raf.core.errors import ConfigurationError, ModelError
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.sessions import AgentSession
from raf.core.tokens import EstimatingCounter, count_messages_tokens
from raf.testing import FunctionChatClient, ScriptedChatClient, call, reply

from .compression_helpers import history, tool_group

COUNTER = EstimatingCounter()


def tokens(messages: Sequence[ChatMessage]) -> int:
    return count_messages_tokens(messages, COUNTER)


def dicts(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


async def test_sliding_window_keeps_system_and_never_splits_a_group() -> None:
    messages = history(5)
    out = await SlidingWindowStrategy(keep_last=4).compress(messages, 10**6, COUNTER)
    assert out[0].role is Role.SYSTEM
    assert [m.text for m in out[1:]][::3] == [
        "question 4: please look at file 4",
        "answer 4: the file says something",
    ]
    # the last 2 messages would start inside a tool group: the group goes whole
    out = await SlidingWindowStrategy(keep_last=2).compress(messages, 10**6, COUNTER)
    assert [m.text for m in out] == [
        "You are a helpful assistant.",
        "answer 4: the file says something",
    ]
    assert dangling(out) == (set(), set())


async def test_token_budget_replaces_old_groups_by_a_note_first() -> None:
    messages = history(6, result_size=3_000)
    budget = tokens(messages) - 1_500
    out = await TokenBudgetStrategy().compress(messages, budget, COUNTER)
    assert tokens(out) <= budget
    notes = [m for m in out if m.text.startswith("[Earlier tool calls omitted")]
    assert len(notes) == 2 and "read_file" in notes[0].text  # two groups of ~860 tokens
    assert [r.call_id for m in out for r in m.function_results] == [f"c{i}_0" for i in range(2, 6)]
    assert [m.text for m in out if m.role is Role.USER] == [
        f"question {i}: please look at file {i}" for i in range(6)
    ]
    assert dangling(out) == (set(), set())


async def test_token_budget_then_drops_the_oldest_messages() -> None:
    messages = history(6, result_size=3_000)
    out = await TokenBudgetStrategy().compress(messages, 120, COUNTER)
    assert tokens(out) <= 120
    assert out[0].role is Role.SYSTEM
    assert out[-1].text == "answer 5: the file says something"
    assert "question 0" not in " ".join(m.text for m in out)
    only_system = await TokenBudgetStrategy().compress(messages, 1, COUNTER)
    assert [m.role for m in only_system] == [Role.SYSTEM]


async def test_observation_masking_keeps_the_last_k_results() -> None:
    messages = history(5, result_size=1_000)
    before = dicts(messages)
    out = await ObservationMaskingStrategy(keep_last=2).compress(messages, 0, COUNTER)
    assert dicts(messages) == before  # the input is not changed
    results = [r for m in out for r in m.function_results]
    assert [r.call_id for r in results] == [f"c{i}_0" for i in range(5)]
    masked = [r for r in results if "omitted to save space" in str(r.result)]
    assert [r.call_id for r in masked] == ["c0_0", "c1_0", "c2_0"]
    assert "read_file" in masked[0].result
    assert results[-1].result == "x" * 1_000 and results[-2].result == "x" * 1_000
    assert tokens(out) < tokens(messages)


class Recording:
    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls = 0

    async def compress(self, messages, budget, counter):
        self.calls += 1
        return await self.inner.compress(messages, budget, counter)


async def test_pipeline_stops_once_under_budget() -> None:
    messages = history(8, result_size=2_000)
    masking = Recording(ObservationMaskingStrategy(keep_last=1))
    budget_step = Recording(TokenBudgetStrategy())
    pipeline = CompressionPipeline([masking, budget_step])
    out = await pipeline.compress(messages, tokens(messages) - 500, COUNTER)
    assert masking.calls == 1 and budget_step.calls == 0
    out = await pipeline.compress(messages, 300, COUNTER)
    assert masking.calls == 2 and budget_step.calls == 1
    assert tokens(out) <= 300
    untouched = await pipeline.compress(messages, 10**6, COUNTER)
    assert masking.calls == 2 and dicts(untouched) == dicts(messages)


def summariser(
    log: list[list[ChatMessage]], text: str = "SUMMARY: the user read files 0-5.", check=None
):
    def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
        log.append(list(messages))
        if check is not None:
            check(messages, options)
        return text

    return FunctionChatClient(answer)


async def test_summarisation_saves_the_transcript_first_and_keeps_recent_verbatim(
    tmp_path: Path,
) -> None:
    transcripts = tmp_path / "transcripts"

    def check(messages: Sequence[ChatMessage], options: ChatOptions) -> None:
        saved = list(transcripts.glob("*.jsonl"))
        assert len(saved) == 1, "the transcript must exist before the model is asked"
        assert options.model_id == "cheap-model"

    requests: list[list[ChatMessage]] = []
    strategy = SummarizationStrategy(
        summariser(requests, check=check),
        threshold=0.5,
        keep_recent=4,
        transcript_dir=transcripts,
        model_id="cheap-model",
    )
    messages = history(6)
    budget = tokens(messages)
    below = await strategy.compress(messages[:5], budget, COUNTER)
    assert dicts(below) == dicts(messages[:5]) and requests == []
    out = await strategy.compress(messages, budget, COUNTER)
    assert len(requests) == 1
    assert out[0].role is Role.SYSTEM
    assert out[1].author_name == SUMMARY_AUTHOR and "SUMMARY: the user read files" in out[1].text
    assert dicts(out[2:]) == dicts(messages[-4:])
    assert dangling(out) == (set(), set())
    saved = next(transcripts.glob("*.jsonl")).read_text().splitlines()
    assert [json.loads(line) for line in saved] == dicts(messages)
    prompt = requests[0][1].text
    assert "question 0" in prompt and "answer 4" in prompt and "answer 5" not in prompt
    # the next turn reuses the summary instead of asking again
    longer = [*messages, ChatMessage.user("one more thing")]
    again = await strategy.compress(longer, budget, COUNTER)
    assert len(requests) == 1
    assert again[1].author_name == SUMMARY_AUTHOR and again[-1].text == "one more thing"


async def test_summarisation_is_incremental() -> None:
    requests: list[list[ChatMessage]] = []
    strategy = SummarizationStrategy(summariser(requests), threshold=1, keep_recent=2)
    messages = history(6)
    await strategy.compress(messages[: 1 + 4 * 4], 1000, COUNTER)
    await strategy.compress(messages, 1000, COUNTER)
    assert len(requests) == 2
    second_prompt = requests[1][1].text
    assert second_prompt.startswith("Previous summary:\nSUMMARY:")
    assert "question 0" not in second_prompt and "question 4" in second_prompt


async def test_circuit_breaker_stops_asking_a_failing_summariser() -> None:
    now = [0.0]
    breaker = CircuitBreaker(max_failures=3, cooldown=60, clock=lambda: now[0])
    model = ScriptedChatClient([ModelError("down")] * 4 + ["SUMMARY: back"])
    strategy = SummarizationStrategy(model, threshold=0.1, keep_recent=2, breaker=breaker)
    messages = history(4)
    for _ in range(5):
        out = await strategy.compress(messages, 1000, COUNTER)
        assert dicts(out) == dicts(messages)  # failures leave the history as it was
    assert len(model.requests) == 3 and breaker.is_open
    now[0] = 61.0
    await strategy.compress(messages, 1000, COUNTER)  # one trial after the cool-down fails
    assert len(model.requests) == 4 and not breaker.allow()
    now[0] = 130.0
    out = await strategy.compress(messages, 1000, COUNTER)
    assert len(model.requests) == 5 and not breaker.is_open
    assert out[1].author_name == SUMMARY_AUTHOR


async def test_a_failing_summariser_falls_through_to_the_token_budget() -> None:
    model = ScriptedChatClient([ModelError("down")])
    pipeline = CompressionPipeline(
        [SummarizationStrategy(model, threshold=0.5, keep_recent=2), TokenBudgetStrategy()]
    )
    out = await pipeline.compress(history(6), 400, COUNTER)
    assert tokens(out) <= 400 and len(model.requests) == 1


@dataclass
class Info:
    context_window: int
    max_output_tokens: int | None = None


def test_input_budget_from_model_metadata() -> None:
    assert input_budget(Info(8_000, 1_000), margin=500) == 6_500
    assert input_budget({"context_window": 128_000, "max_output_tokens": 16_000}) == 105_600
    assert input_budget(context_window=10_000) == 9_488
    with pytest.raises(ConfigurationError, match="unknown"):
        input_budget(Info(0))
    with pytest.raises(ConfigurationError, match="no room"):
        input_budget(Info(1_000, 900), margin=200)
    provider = CompressionProvider(TokenBudgetStrategy(), model_info=Info(8_000, 1_000), margin=500)
    assert provider.budget == 6_500


async def test_budget_from_the_models_metadata_module(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("raf.clients.models")
    module.model_info = lambda spec: Info(4_000, 500) if spec == "tiny-model" else None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "raf.clients.models", module)
    provider = CompressionProvider(TokenBudgetStrategy(), counter=COUNTER)
    options = AgentRunOptions(chat_options=ChatOptions(model_id="tiny-model"))
    assert provider.resolve_budget(None, options) == 4_000 - 500 - 512
    assert provider.resolve_budget(None, AgentRunOptions()) == 24_000


async def test_provider_compresses_the_history_and_replaces_messages() -> None:
    session = AgentSession(messages=history(20, system=False))
    provider = CompressionProvider(TokenBudgetStrategy(), budget=1_000, counter=COUNTER)
    request = [ChatMessage.user("and now?")]
    result = await provider.on_invoking(None, session, request, AgentRunOptions())
    assert isinstance(result, ContextResult) and result.replace_messages
    assert tokens(result.messages) + tokens(request) <= 1_000
    assert len(session.messages) == 80  # the stored history is kept whole
    state = session.get_provider_state("compression")
    assert state["last"]["messages_before"] == 80 and state["compressions"] == 1
    assert [t.name for t in result.tools] == ["compact"]
    assert provider.kind == "compression"


async def test_provider_in_an_agent_bounds_what_the_model_is_sent() -> None:
    model = ScriptedChatClient(["ok"] * 30)
    agent = (
        AgentBuilder()
        .with_instructions("Be brief.")
        .with_chat_client(model)
        .with_context_provider(
            CompressionProvider(TokenBudgetStrategy(), budget=600, counter=COUNTER)
        )
        .build()
    )
    session = agent.create_session()
    for i in range(30):
        await agent.run(f"message {i} " + "y" * 200, session=session)
    sent = [tokens([m for m in r.messages if m.role is not Role.SYSTEM]) for r in model.requests]
    assert max(sent) <= 600
    assert len(session.messages) == 60


async def test_the_model_may_call_compact(tmp_path: Path) -> None:
    requests: list[list[ChatMessage]] = []
    strategy = SummarizationStrategy(summariser(requests), keep_recent=2, transcript_dir=tmp_path)
    provider = CompressionProvider(strategy, budget=100_000, counter=COUNTER)
    model = ScriptedChatClient([reply("", call("compact", call_id="k1")), "Compacted."])
    agent = AgentBuilder().with_chat_client(model).with_context_provider(provider).build()
    session = AgentSession(messages=history(10, system=False))
    response = await agent.run("please compact", session=session)
    assert response.text == "Compacted."
    result = model.requests[1].messages[-1].function_results[0]
    assert result.as_text().startswith("compacted the history from 40 messages")
    assert len(requests) == 1 and list(tmp_path.glob("*.jsonl"))
    assert session.messages[0].author_name == SUMMARY_AUTHOR
    assert len(session.messages) == 1 + 1 + 4  # summary, last answer, this turn
    assert dangling(session.messages) == (set(), set())
    nothing = await provider.compact(AgentSession())
    assert nothing.startswith("nothing to compact")


def test_one_message_tool_results_stay_with_their_call() -> None:
    from raf.context.compression import split_units

    messages = [ChatMessage.user("hi"), *tool_group(1, [10, 10, 10], one_message=True)]
    units = split_units(messages)
    assert [len(u.messages) for u in units] == [1, 2]


async def test_budget_from_raf_model_table() -> None:
    provider = CompressionProvider(TokenBudgetStrategy(), counter=COUNTER)
    options = AgentRunOptions(chat_options=ChatOptions(model_id="openai:gpt-4o"))
    assert provider.resolve_budget(None, options) == 128_000 - 16_384 - 6_400
    model = ScriptedChatClient(["ok"])
    model.model = "claude-sonnet-4"  # type: ignore[attr-defined]
    agent = AgentBuilder().with_chat_client(model).build()
    assert provider.resolve_budget(agent, AgentRunOptions()) == 200_000 - 64_000 - 10_000


class KeepLastTwo:
    """A strategy written as the protocol is written: a plain `compress`, no `await`."""

    def compress(self, messages, budget, counter):
        return [m for m in messages if m.role is Role.SYSTEM] + [
            m for m in messages if m.role is not Role.SYSTEM
        ][-2:]


async def test_sync_strategies_are_callable_without_an_event_loop_too() -> None:
    messages = history(8, result_size=2_000)
    for strategy in (
        SlidingWindowStrategy(keep_last=3),
        TokenBudgetStrategy(),
        ObservationMaskingStrategy(keep_last=1),
        CompressionPipeline([ObservationMaskingStrategy(keep_last=1), TokenBudgetStrategy()]),
    ):
        awaited = await strategy.compress(messages, 500, COUNTER)
        assert dicts(strategy.compress_sync(messages, 500, COUNTER)) == dicts(awaited)
        assert dicts(apply_strategy_sync(strategy, messages, 500, COUNTER)) == dicts(awaited)


async def test_a_plain_function_strategy_fits_pipeline_and_provider() -> None:
    messages = history(4, system=False)
    pipeline = CompressionPipeline([KeepLastTwo()])
    assert dicts(await pipeline.compress(messages, 1, COUNTER)) == dicts(messages[-2:])
    assert dicts(pipeline.compress_sync(messages, 1, COUNTER)) == dicts(messages[-2:])
    provider = CompressionProvider(KeepLastTwo(), budget=10_000, counter=COUNTER)
    session = AgentSession(messages=messages)
    result = await provider.on_invoking(None, session, [], AgentRunOptions())
    assert result.replace_messages and dicts(result.messages) == dicts(messages[-2:])


def test_compress_sync_refuses_a_strategy_that_needs_a_model() -> None:
    summarising = SummarizationStrategy(summariser([]), threshold=0.1, keep_recent=2)
    pipeline = CompressionPipeline([summarising, TokenBudgetStrategy()])
    with pytest.raises(ConfigurationError, match="compresses asynchronously"):
        pipeline.compress_sync(history(6), 100, COUNTER)
    small = history(1, system=False)
    assert dicts(pipeline.compress_sync(small, 10**6, COUNTER)) == dicts(small)


def test_bad_settings_are_configuration_errors() -> None:
    from raf.context.compression import CompressionSettingError

    cases = [
        lambda: SlidingWindowStrategy(keep_last=-1),
        lambda: SlidingWindowStrategy(keep_last="5"),  # type: ignore[arg-type]
        lambda: ObservationMaskingStrategy(keep_last=2.5),  # type: ignore[arg-type]
        lambda: SummarizationStrategy(summariser([]), threshold=0),
        lambda: SummarizationStrategy(summariser([]), threshold="0.8"),  # type: ignore[arg-type]
        lambda: SummarizationStrategy(summariser([]), keep_recent=-2),
        lambda: CompressionProvider(TokenBudgetStrategy(), 0),
        lambda: CompressionProvider(TokenBudgetStrategy(), "1000"),  # type: ignore[arg-type]
    ]
    for make in cases:
        with pytest.raises(CompressionSettingError) as info:
            make()
        assert isinstance(info.value, ConfigurationError) and isinstance(info.value, ValueError)
    assert CompressionProvider(TokenBudgetStrategy(), 1_000).budget == 1_000
