"""The research pipeline in Python: a planner, three researchers working at the same
time, a writer, and a human who approves the report before it is published.

    python pipeline.py "the history of tide prediction"              # asks before publishing
    python pipeline.py "tides" --model scripted:replies.json --approve yes

Runs on $RAF_MODEL, else raf's embedded model; `build_pipeline(client)` takes any chat
client. Without a terminal to ask, the report is not published unless --approve says so.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from raf import AgentBuilder, AgentResponse, RafError
from raf.core.chat_client import ChatClient
from raf.testing import SCRIPTED_PREFIX, ScriptFileClient
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


def model(spec: str | None) -> ChatClient:
    """`scripted:FILE.json` replays a script of replies; any other model string (or none:
    $RAF_MODEL, else the embedded local model) names a real model."""
    if spec and spec.startswith(SCRIPTED_PREFIX):
        return ScriptFileClient(Path(spec.removeprefix(SCRIPTED_PREFIX)))
    from raf.clients.models import resolve_model

    return resolve_model(spec)


async def decide(question: str, approve: str) -> bool:
    """The human's answer: asked at the terminal, or given by --approve."""
    print(question)
    if approve != "ask":
        print(f"publish? {approve} (--approve)")
        return approve == "yes"
    if not sys.stdin.isatty():
        print("publish? no terminal to ask: not published (pass --approve yes to publish)")
        return False
    said = await asyncio.to_thread(input, "publish? [y/N] ")
    return said.strip().lower() == "y"


async def main(topic: str, spec: str | None, approve: str) -> None:
    workflow = build_pipeline(model(spec))
    result = await workflow.run(topic)
    while result.status == "paused":
        answers = {}
        for request in result.requests:
            answers[request.request_id] = await decide(str(request.data), approve)
        result = await workflow.run(checkpoint_id=result.checkpoint_id, responses=answers)
    print(result.output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Research a topic and publish a report.")
    parser.add_argument("topic", nargs="*", help="default: the history of tide prediction")
    parser.add_argument("--model", help="a model string, or scripted:FILE.json")
    parser.add_argument("--approve", choices=("ask", "yes", "no"), default="ask")
    args = parser.parse_args()
    try:
        asyncio.run(
            main(" ".join(args.topic) or "the history of tide prediction", args.model, args.approve)
        )
    except RafError as exc:  # a clear line, as the raf program prints, not a traceback
        print(f"pipeline.py: error: {exc}", file=sys.stderr)
        sys.exit(1)
