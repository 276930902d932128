"""The research pipeline in Python: a planner, three researchers working at the same
time, a writer, and a human who approves the report before it is published.

    python pipeline.py "the history of tide prediction"

Runs on raf's default model; `build_pipeline(client)` takes any chat client.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from raf import AgentBuilder, AgentResponse
from raf.core.chat_client import ChatClient
from raf.workflow import Executor as Node
from raf.workflow import (
    InputResponse,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    executor,
    handler,
)

RESEARCHERS = {
    "history": "You research the history of a topic. Answer in three sentences.",
    "science": "You research the science behind a topic. Answer in three sentences.",
    "practice": "You research how a topic is used today. Answer in three sentences.",
}


@executor
def gather(findings: list[AgentResponse]) -> str:
    """The researchers' findings, one paragraph each, for the writer."""
    return "Write a short report from these findings:\n\n" + "\n\n".join(f.text for f in findings)


class Review(Node):
    """A human approves the writer's report; only an approved report is published."""

    def __init__(self) -> None:
        super().__init__("review")
        self.drafts: dict[str, str] = {}
        self.published: list[str] = []

    @handler
    async def ask(self, draft: AgentResponse, ctx: WorkflowContext[Any]) -> None:
        request_id = await ctx.request_input(f"Publish this report?\n\n{draft.text}", bool)
        self.drafts[request_id] = draft.text

    @handler
    async def decide(self, answer: InputResponse[bool], ctx: WorkflowContext[Any]) -> None:
        draft = self.drafts.pop(answer.request_id, "")
        if answer.response:
            self.published.append(draft)
            await ctx.yield_output(f"Published:\n\n{draft}")
        else:
            await ctx.yield_output("The report was not published.")

    def snapshot_state(self) -> Any:
        return {"drafts": self.drafts}

    def restore_state(self, state: Any) -> None:
        self.drafts = dict((state or {}).get("drafts") or {})


def build_pipeline(client: ChatClient) -> Workflow:
    """planner → (history, science, practice at once) → gather → writer → review."""

    def agent(name: str, instructions: str) -> Any:
        return AgentBuilder(name).with_instructions(instructions).with_chat_client(client).build()

    planner = agent("planner", "Plan the research: name the questions worth answering.")
    researchers = [agent(name, text) for name, text in RESEARCHERS.items()]
    writer = agent("writer", "Write a clear, short report from the findings you are given.")
    return (
        WorkflowBuilder("research-pipeline", start=planner)
        .add_fan_out(planner, researchers)
        .add_fan_in(researchers, gather)
        .add_chain([gather, writer, Review()])
        .build()
    )


async def main(topic: str) -> None:
    from raf.clients.models import resolve_model

    workflow = build_pipeline(resolve_model())
    result = await workflow.run(topic)
    while result.status == "paused":
        answers = {}
        for request in result.requests:
            print(request.data)
            said = await asyncio.to_thread(input, "publish? [y/N] ")
            answers[request.request_id] = said.strip().lower() == "y"
        result = await workflow.run(checkpoint_id=result.checkpoint_id, responses=answers)
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "the history of tide prediction"))
