"""One process of the shared-folder test: an agent whose curator adds facts to user.md.

Run as `python memory_process.py DIR TAG JOBS`. The curator reads the page, waits a
little (so processes overlap), then writes it back with one more fact: without the
folder's locks, facts of other processes would be lost.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from raf.agent.builder import AgentBuilder
from raf.context.memory import SuperBrainContextProvider
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.testing import FunctionChatClient, ScriptedChatClient, call, reply


def curator(tag: str) -> FunctionChatClient:
    count = [0]

    async def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        last = messages[-1]
        if last.role is Role.USER:
            return reply("", call("read_file", path="references/user.md"))
        result = last.function_results[0]
        if result.name == "read_file":
            await asyncio.sleep(0.05)
            count[0] += 1
            text = str(result.result).rstrip("\n") + f"\n- fact {tag}-{count[0]}\n"
            return reply("", call("write_file", path="references/user.md", content=text))
        return "done"

    return FunctionChatClient(answer)


async def main(directory: str, tag: str, jobs: int) -> None:
    memory = SuperBrainContextProvider(
        directory, consolidation_interval=1, memory_client=curator(tag)
    )
    model = ScriptedChatClient(["ok"] * jobs)
    agent = AgentBuilder().with_chat_client(model).with_context_provider(memory).build()
    session = agent.create_session()
    for i in range(jobs):
        await agent.run(f"Remember that fact {tag}-{i + 1} is important to me.", session=session)
        await memory.drain(30)
    await memory.aclose(timeout_s=30)
    if memory.worker.failed:
        raise SystemExit(f"{memory.worker.failed} consolidation(s) failed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
