"""The editorial team of team.yaml, built in Python: a writer and a critic in a group chat
that the editor-in-chief coordinates.

    python team.py "tide pools"                                  # RAF_MODEL, else local
    python team.py "tide pools" --model scripted:replies.json    # no model, no key
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from raf import AgentBuilder, ChatClient, RafError
from raf.orchestrations import GroupChatOrchestration, OrchestrationAgent
from raf.testing import SCRIPTED_PREFIX, ScriptFileClient


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


def model(spec: str | None) -> ChatClient:
    """`scripted:FILE.json` replays a script of replies; any other model string (or none:
    $RAF_MODEL, else the embedded local model) names a real model."""
    if spec and spec.startswith(SCRIPTED_PREFIX):
        return ScriptFileClient(Path(spec.removeprefix(SCRIPTED_PREFIX)))
    from raf.clients.models import resolve_model

    return resolve_model(spec)


async def main(topic: str, spec: str | None) -> None:
    team = build(model(spec))
    message = ""
    async for update in team.run_stream(f"Write a short piece about {topic}."):
        if update.text and update.message_id != message:
            if message:
                print("\n")  # each answer in a paragraph of its own
            message = update.message_id
        print(update.text, end="", flush=True)
    print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The editorial team writes a short piece.")
    parser.add_argument("topic", nargs="*", help="what to write about (default: tide pools)")
    parser.add_argument("--model", help="a model string, or scripted:FILE.json")
    args = parser.parse_args()
    try:
        asyncio.run(main(" ".join(args.topic) or "tide pools", args.model))
    except RafError as exc:  # a clear line, as the raf program prints, not a traceback
        print(f"team.py: error: {exc}", file=sys.stderr)
        sys.exit(1)
