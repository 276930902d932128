"""The OpenAI Agents SDK on the overhead scenario (run in its own virtualenv by
`benchmarks/overhead.py`): a Model that only converts the scripted dict replies into
Responses API items. Tracing is turned off: it would export to OpenAI's servers."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from importlib.metadata import version
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from benchmarks import overhead_scenario as scenario


def output(reply: dict[str, Any]) -> list[Any]:
    items: list[Any] = [
        ResponseFunctionToolCall(
            type="function_call",
            call_id=c["id"],
            name=c["name"],
            arguments=scenario.ARGUMENTS_JSON[c["id"]],
        )
        for c in reply["tool_calls"]
    ]
    if reply["content"]:
        items.append(
            ResponseOutputMessage(
                id="m",
                type="message",
                role="assistant",
                status="completed",
                content=[
                    ResponseOutputText(type="output_text", text=reply["content"], annotations=[])
                ],
            )
        )
    return items


class ScriptedModel(Model):
    """A model whose replies come from the script and cost nothing."""

    def __init__(self) -> None:
        self.script = scenario.Script()

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=output(self.script.next()), usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        reply = self.script.next()
        if reply["content"]:
            yield ResponseTextDeltaEvent.model_construct(
                type="response.output_text.delta",
                delta=reply["content"],
                item_id="m",
                output_index=0,
                content_index=0,
                sequence_number=0,
                logprobs=[],
            )
        yield ResponseCompletedEvent.model_construct(
            type="response.completed",
            sequence_number=1,
            response=Response.model_construct(id="r", output=output(reply), usage=None),
        )


async def main() -> None:
    batch_seconds, batches = float(sys.argv[1]), int(sys.argv[2])
    set_tracing_disabled(True)
    sync_model, async_model = ScriptedModel(), ScriptedModel()
    sync_agent = Agent(
        name="calculator",
        instructions=scenario.INSTRUCTIONS,
        model=sync_model,
        model_settings=ModelSettings(),
        tools=[function_tool(fn, name_override=name) for name, fn in scenario.SYNC_TOOLS.items()],
    )
    async_agent = Agent(
        name="calculator",
        instructions=scenario.INSTRUCTIONS,
        model=async_model,
        model_settings=ModelSettings(),
        tools=[function_tool(fn, name_override=name) for name, fn in scenario.ASYNC_TOOLS.items()],
    )

    async def run_sync_tools() -> str:
        text: str = (await Runner.run(sync_agent, scenario.QUESTION)).final_output
        return text

    async def run_async_tools() -> str:
        text: str = (await Runner.run(async_agent, scenario.QUESTION)).final_output
        return text

    async def run_stream() -> str:
        result = Runner.run_streamed(async_agent, scenario.QUESTION)
        async for _event in result.stream_events():
            pass
        text: str = result.final_output
        return text

    results = await scenario.measure(
        {"sync tools": run_sync_tools, "async tools": run_async_tools, "stream": run_stream},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[sync_model.script, async_model.script, scenario.FLOOR_SCRIPT],
    )
    scenario.emit("openai-agents", version("openai-agents"), results)


if __name__ == "__main__":
    asyncio.run(main())
