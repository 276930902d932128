"""pydantic-ai on the overhead scenario (run in its own virtualenv by
`benchmarks/overhead.py`): a FunctionModel that only converts the scripted dict replies."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

from pydantic_ai import Agent, AgentRunResultEvent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from benchmarks import overhead_scenario as scenario


def model(script: scenario.Script) -> FunctionModel:
    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = script.next()
        parts: list[Any] = [
            ToolCallPart(tool_name=c["name"], args=c["arguments"], tool_call_id=c["id"])
            for c in reply["tool_calls"]
        ]
        if reply["content"]:
            parts.append(TextPart(content=reply["content"]))
        return ModelResponse(parts=parts)

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        reply = script.next()
        for index, call in enumerate(reply["tool_calls"]):
            yield {
                index: DeltaToolCall(
                    name=call["name"],
                    json_args=scenario.ARGUMENTS_JSON[call["id"]],
                    tool_call_id=call["id"],
                )
            }
        if reply["content"]:
            yield reply["content"]

    return FunctionModel(respond, stream_function=stream)


async def main() -> None:
    batch_seconds, batches = float(sys.argv[1]), int(sys.argv[2])
    sync_script, async_script = scenario.Script(), scenario.Script()
    sync_agent = Agent(
        model(sync_script),
        instructions=scenario.INSTRUCTIONS,
        tools=[Tool(fn, name=name) for name, fn in scenario.SYNC_TOOLS.items()],
    )
    async_agent = Agent(
        model(async_script),
        instructions=scenario.INSTRUCTIONS,
        tools=[Tool(fn, name=name) for name, fn in scenario.ASYNC_TOOLS.items()],
    )

    async def run_sync_tools() -> str:
        text: str = (await sync_agent.run(scenario.QUESTION)).output
        return text

    async def run_async_tools() -> str:
        text: str = (await async_agent.run(scenario.QUESTION)).output
        return text

    async def run_stream() -> str:
        # Every event of the whole run (model deltas, tool calls and results), as raf's
        # run_stream gives them.
        final = ""
        async with async_agent.run_stream_events(scenario.QUESTION) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    final = event.result.output
        return final

    results = await scenario.measure(
        {"sync tools": run_sync_tools, "async tools": run_async_tools, "stream": run_stream},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[sync_script, async_script, scenario.FLOOR_SCRIPT],
    )
    scenario.emit("pydantic-ai-slim", version("pydantic-ai-slim"), results)


if __name__ == "__main__":
    asyncio.run(main())
