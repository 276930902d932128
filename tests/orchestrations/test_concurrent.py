"""Concurrent orchestration: everyone gets the task, the aggregator gets every answer."""

from __future__ import annotations

import asyncio

from raf.orchestrations import ConcurrentOrchestration, TurnResult
from raf.testing import FunctionChatClient

from .helpers import member, texts


async def test_every_member_answers_the_task_and_the_agent_aggregator_sees_all():
    a, ac = member("optimist", "it will work")
    b, bc = member("pessimist", "it will fail")
    judge, jc = member("judge", "balanced: maybe")
    result = await ConcurrentOrchestration([a, b], aggregator=judge).run("will it work?")
    assert texts(ac) == texts(bc) == [("user", None, "will it work?")]
    prompt = texts(jc)[-1][2]
    assert "[optimist]\nit will work" in prompt and "[pessimist]\nit will fail" in prompt
    assert result.speakers == ["optimist", "pessimist", "judge"]
    assert result.text == "balanced: maybe"


async def test_members_really_run_at_the_same_time():
    running = 0
    peak = 0

    async def slow(messages, options):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.02)
        running -= 1
        return "done"

    from raf import AgentBuilder

    members = [
        AgentBuilder(f"m{i}").with_chat_client(FunctionChatClient(slow)).build() for i in range(3)
    ]
    await ConcurrentOrchestration(members).run("go")
    assert peak == 3
    peak = 0
    await ConcurrentOrchestration(members, max_concurrency=1).run("go")
    assert peak == 1


async def test_default_aggregation_lists_answers_in_member_order():
    a, _ = member("a", "alpha")
    b, _ = member("b", "beta")
    result = await ConcurrentOrchestration([a, b], name="panel").run("q")
    assert result.speakers == ["a", "b", "panel"]
    assert result.text == "[a]\nalpha\n\n[b]\nbeta"


async def test_a_function_aggregator_gets_the_turns():
    a, _ = member("a", "3")
    b, _ = member("b", "4")

    def total(turns: list[TurnResult]) -> str:
        return str(sum(int(t.text) for t in turns))

    result = await ConcurrentOrchestration([a, b], aggregator=total).run("a number")
    assert result.text == "7"


async def test_as_agent_answers_with_the_aggregate():
    a, _ = member("a", "alpha")
    b, _ = member("b", "beta")
    response = await ConcurrentOrchestration([a, b], name="panel").as_agent().run("q")
    assert response.text == "[a]\nalpha\n\n[b]\nbeta"
    assert [m.author_name for m in response.messages] == ["a", "b", "panel"]
