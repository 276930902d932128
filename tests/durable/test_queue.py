"""Runs wait in their agent's queue: no more run at once than the agent's limit."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from raf import Agent, tool
from raf.core.contents import FunctionResultContent
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.durable import DurableRuntime, sqlite_url
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient, call, reply


async def test_an_agents_runs_never_exceed_its_concurrency_limit(tmp_path: Path) -> None:
    running = 0
    most = 0

    @tool
    async def work() -> str:
        """Work a while."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.3)
        running -= 1
        return "worked"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        if any(isinstance(c, FunctionResultContent) for m in messages for c in m.contents):
            return "done"
        return reply("", call("work", call_id="w"))

    agent = Agent(name="busy", chat_client=FunctionChatClient(model), tools=[work])
    free = Agent(name="free", chat_client=FunctionChatClient(model), tools=[work])
    runtime = DurableRuntime(
        [agent, free],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
        concurrency={"busy": 2},
    )
    await runtime.launch()
    try:
        ids = [
            await runtime.start("busy", [ChatMessage.user("go")], session_id=f"s{i}")
            for i in range(5)
        ]
        outcomes = await asyncio.gather(*(runtime.outcome(i, max_wait=60) for i in ids))
        assert [o.response.text for o in outcomes] == ["done"] * 5
        assert most == 2  # two at once, never three

        most = 0
        ids = [
            await runtime.start("free", [ChatMessage.user("go")], session_id=f"f{i}")
            for i in range(5)
        ]
        await asyncio.gather(*(runtime.outcome(i, max_wait=60) for i in ids))
        assert most > 2  # the other agent has no limit
    finally:
        runtime.shutdown()
