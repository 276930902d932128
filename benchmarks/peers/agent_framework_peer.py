"""Microsoft Agent Framework on the overhead scenario (run in its own virtualenv by
`benchmarks/overhead.py`): a BaseChatClient that only converts the scripted dict replies,
with the framework's function-invocation layer, as its public clients are built."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from importlib.metadata import version
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)

from benchmarks import overhead_scenario as scenario


def contents(reply: dict[str, Any]) -> list[Any]:
    out: list[Any] = [
        Content.from_function_call(call_id=c["id"], name=c["name"], arguments=c["arguments"])
        for c in reply["tool_calls"]
    ]
    if reply["content"]:
        out.append(Content.from_text(reply["content"]))
    return out


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client whose replies come from the script and cost nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.script = scenario.Script()

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kw: Any
    ) -> Any:
        reply = self.script.next()
        if not stream:

            async def respond() -> ChatResponse:
                return ChatResponse(messages=[Message(role="assistant", contents=contents(reply))])

            return respond()

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            for item in contents(reply):
                yield ChatResponseUpdate(role="assistant", contents=[item])

        return self._build_response_stream(updates())


async def main() -> None:
    batch_seconds, batches = float(sys.argv[1]), int(sys.argv[2])
    sync_client, async_client = ScriptedClient(), ScriptedClient()
    sync_agent = Agent(
        client=sync_client,
        instructions=scenario.INSTRUCTIONS,
        tools=[tool(fn, name=name) for name, fn in scenario.SYNC_TOOLS.items()],
    )
    async_agent = Agent(
        client=async_client,
        instructions=scenario.INSTRUCTIONS,
        tools=[tool(fn, name=name) for name, fn in scenario.ASYNC_TOOLS.items()],
    )

    async def run_sync_tools() -> str:
        text: str = (await sync_agent.run(scenario.QUESTION)).text
        return text

    async def run_async_tools() -> str:
        text: str = (await async_agent.run(scenario.QUESTION)).text
        return text

    async def run_stream() -> str:
        text = []
        async for update in async_agent.run(scenario.QUESTION, stream=True):
            text.append(update.text or "")
        return "".join(text)

    results = await scenario.measure(
        {"sync tools": run_sync_tools, "async tools": run_async_tools, "stream": run_stream},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[sync_client.script, async_client.script, scenario.FLOOR_SCRIPT],
    )
    scenario.emit("agent-framework-core", version("agent-framework-core"), results)


if __name__ == "__main__":
    asyncio.run(main())
