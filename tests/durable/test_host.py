"""DurableAgentHost behind the HTTP app: cancel reaches the durable run, and the request
that started it gets a clear 409."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from raf import Agent, tool
from raf.agent.history import InMemoryHistoryProvider
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.durable import DurableRuntime, sqlite_url
from raf.serve import create_app, serve_in_thread
from raf.serve.durable_host import DurableAgentHost
from raf.serve.errors import ServeError
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient, call, reply


async def test_cancel_over_http_stops_the_durable_run(tmp_path: Path) -> None:
    entered = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait for ever."""
        entered.set()
        await asyncio.Event().wait()
        return "never"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
        return reply("", call("wait", call_id="w1"))

    agent = Agent(
        name="waiter",
        chat_client=FunctionChatClient(model),
        tools=[wait],
        context_providers=[InMemoryHistoryProvider()],
    )
    runtime = DurableRuntime(
        [agent],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
    )
    await runtime.launch()  # in this loop: the workflows run here
    try:
        host = DurableAgentHost(runtime)
        with serve_in_thread(create_app(host)) as url:
            client = httpx.Client(base_url=url, timeout=60)
            with client:
                created = await asyncio.to_thread(client.post, "/agents/waiter/sessions", json={})
                sid = created.json()["id"]
                run = asyncio.create_task(
                    asyncio.to_thread(
                        client.post, f"/agents/waiter/sessions/{sid}/runs", json={"messages": "go"}
                    )
                )
                await asyncio.wait_for(entered.wait(), 60)
                cancel = await asyncio.to_thread(
                    client.post, f"/agents/waiter/sessions/{sid}/cancel"
                )
                assert cancel.status_code == 202, cancel.text
                answered = await asyncio.wait_for(run, 60)
                assert answered.status_code == 409
                assert answered.json()["error"]["code"] == "run_cancelled"
                session = await asyncio.to_thread(client.get, f"/agents/waiter/sessions/{sid}")
                assert session.json()["messages"] == []  # nothing of the cancelled run kept
                assert session.json()["running"] is False
    finally:
        runtime.shutdown()


async def test_a_per_run_format_is_refused_naming_the_field_that_asked(tmp_path: Path) -> None:
    """Only the Responses API hands a run a format (`text.format`; a chat completion runs
    the agent itself), so the refusal names that field."""
    agent = Agent(name="plain", chat_client=FunctionChatClient(lambda m, o: reply("hi")))
    runtime = DurableRuntime(
        [agent],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
    )
    host = DurableAgentHost(runtime)
    json_mode = ChatOptions(response_format={"type": "json_object"})
    with pytest.raises(ServeError) as refused:
        await host.stream("plain", None, "", [ChatMessage.user("hi")], chat_options=json_mode)
    assert refused.value.status == 400 and refused.value.param == "text.format"
    assert "text.format" in refused.value.message
