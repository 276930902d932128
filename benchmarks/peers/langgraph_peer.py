"""LangGraph on the overhead scenario (run in its own virtualenv by
`benchmarks/overhead.py`): its prebuilt ReAct agent over a chat model that only converts
the scripted dict replies into LangChain messages."""

from __future__ import annotations

import asyncio
import sys
import warnings
from importlib.metadata import version
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool

from benchmarks import overhead_scenario as scenario

with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain's
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies come from the script and cost nothing."""

    script: Any

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        reply = self.script.next()
        message = AIMessage(
            content=reply["content"],
            tool_calls=[
                {"id": c["id"], "name": c["name"], "args": c["arguments"]}
                for c in reply["tool_calls"]
            ],
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def tools(functions: dict[str, Any], is_async: bool) -> list[StructuredTool]:
    if is_async:
        return [StructuredTool.from_function(coroutine=f, name=n) for n, f in functions.items()]
    return [StructuredTool.from_function(func=f, name=n) for n, f in functions.items()]


async def main() -> None:
    batch_seconds, batches = float(sys.argv[1]), int(sys.argv[2])
    sync_model = ScriptedChatModel(script=scenario.Script())
    async_model = ScriptedChatModel(script=scenario.Script())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync_agent = create_react_agent(
            sync_model, tools(scenario.SYNC_TOOLS, False), prompt=scenario.INSTRUCTIONS
        )
        async_agent = create_react_agent(
            async_model, tools(scenario.ASYNC_TOOLS, True), prompt=scenario.INSTRUCTIONS
        )
    request = {"messages": [("user", scenario.QUESTION)]}

    async def run_sync_tools() -> str:
        state = await sync_agent.ainvoke(request)
        text: str = state["messages"][-1].content
        return text

    async def run_async_tools() -> str:
        state = await async_agent.ainvoke(request)
        text: str = state["messages"][-1].content
        return text

    async def run_stream() -> str:
        # Message chunks as the model and the tools produce them.
        text = []
        async for chunk, _meta in async_agent.astream(request, stream_mode="messages"):
            if isinstance(chunk, AIMessage) or type(chunk).__name__ == "AIMessageChunk":
                text.append(chunk.content if isinstance(chunk.content, str) else "")
        return "".join(text)

    results = await scenario.measure(
        {"sync tools": run_sync_tools, "async tools": run_async_tools, "stream": run_stream},
        batch_seconds=batch_seconds,
        batches=batches,
        scripts=[sync_model.script, async_model.script, scenario.FLOOR_SCRIPT],
    )
    scenario.emit("langgraph", version("langgraph"), results)


if __name__ == "__main__":
    asyncio.run(main())
