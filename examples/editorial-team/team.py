"""The editorial team of team.yaml, built in Python: a writer and a critic in a group chat
that the editor-in-chief coordinates. Run: python team.py "a topic"."""

from __future__ import annotations

import asyncio
import sys

from raf import AgentBuilder, ChatClient
from raf.workflow import GroupChatOrchestration, OrchestrationAgent


def build(client: ChatClient) -> OrchestrationAgent:
    """The team as one agent; every member talks to `client`."""
    writer = (
        AgentBuilder("writer")
        .with_description("Drafts and revises the piece")
        .with_instructions("You write short, clear pieces. Revise when the critic asks.")
        .with_chat_client(client)
        .build()
    )
    critic = (
        AgentBuilder("critic")
        .with_description("Reviews drafts; says APPROVED when a draft is good")
        .with_instructions(
            "You review drafts for clarity and accuracy. Name what to fix, or answer "
            '"APPROVED" with one line of praise when nothing needs fixing.'
        )
        .with_chat_client(client)
        .build()
    )
    chief = (
        AgentBuilder("editor-in-chief")
        .with_instructions(
            "You are the editor-in-chief. Let the writer draft first, then the critic "
            "review; send the work back to the writer until the critic approves it."
        )
        .with_chat_client(client)
        .build()
    )
    chat = GroupChatOrchestration(
        [writer, critic],
        name="editorial-team",
        selector=chief,
        max_rounds=6,
        termination_keywords=["APPROVED"],
    )
    return chat.as_agent()


async def main(topic: str) -> None:
    from raf.clients.models import resolve_model

    team = build(resolve_model())
    async for update in team.run_stream(f"Write a short piece about {topic}."):
        print(update.text, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "tide pools"))
