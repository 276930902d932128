"""A run that needs no typed output never loads pydantic: plainly typed tools are checked
without it, and the output-type machinery loads it only when an output type is made."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RUN_WITH_PLAIN_TOOLS = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentBuilder, ChatMessage, ChatResponse, FinishReason
    from raf import FunctionCallContent, Role

    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

    class Model:
        def __init__(self):
            self.turn = 0
        async def get_response(self, messages, options):
            self.turn += 1
            if self.turn == 1:
                call = FunctionCallContent(call_id="c1", name="add", arguments={"a": 2, "b": 3})
                return ChatResponse(messages=[ChatMessage(role=Role.ASSISTANT, contents=[call])],
                                    finish_reason=FinishReason.TOOL_CALLS)
            return ChatResponse(messages=[ChatMessage(role=Role.ASSISTANT, contents="5")],
                                finish_reason=FinishReason.STOP)
        async def get_streaming_response(self, messages, options):
            raise NotImplementedError
            yield

    agent = AgentBuilder().with_chat_client(Model()).with_tool(add).build()
    response = asyncio.run(agent.run("2 + 3?"))
    assert response.text == "5" and response.to_dict()
    print("pydantic" in sys.modules)
    """
)


def test_a_run_with_plain_tools_does_not_import_pydantic() -> None:
    out = subprocess.run(
        [sys.executable, "-c", RUN_WITH_PLAIN_TOOLS],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "False", out.stderr
