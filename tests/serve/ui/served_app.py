"""The agents and workflow the browser tests open with `raf ui`: models that answer from
the conversation (so tests do not depend on each other's order), a tool that needs
approval, a memory folder, a skill, and a workflow that asks a person."""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf import AgentBuilder, tool
from raf.context.memory.provider import SuperBrainContextProvider
from raf.context.skills.provider import AgentSkillsProvider
from raf.core.contents import DataContent, ReasoningContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.testing import FunctionChatClient, call, reply
from raf.workflow import Executor, InputResponse, WorkflowBuilder, WorkflowContext, handler

HOME = Path(os.environ["RAF_UI_TEST_HOME"])
INJECTED = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


@tool(
    name="write_note",
    description="Write a note (a person approves each one).",
    approval_required=True,
)
def write_note(text: str) -> str:
    with (HOME / "notes.txt").open("a", encoding="utf-8") as handle:
        handle.write(text + "\n")
    return f"noted {text}"


@tool(name="lookup", description="Look a word up.")
def lookup(word: str) -> str:
    if word == "missing":
        raise ValueError("no such word")
    return f"{word}: a word {INJECTED}"


DOT = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)
"""A 1x1 PNG, as base64."""


@tool(name="snapshot", description="Take a picture of the screen.")
def snapshot() -> DataContent:
    return DataContent(uri=f"data:image/png;base64,{DOT}", media_type="image/png")


def received(message: ChatMessage) -> str:
    """What files the model got with a message: type and size of each (or its link)."""
    seen = []
    for content in message.contents:
        if isinstance(content, DataContent):
            head, _, body = content.uri.partition(",")
            size = f"{len(base64.b64decode(body))} bytes" if head.endswith(";base64") else "link"
            seen.append(f"{content.media_type} ({size})")
    return ", ".join(seen)


def answer(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
    """Answer from the conversation: a tool result is reported, a request picks a tool."""
    last = messages[-1]
    if last.role is Role.TOOL:
        result = last.contents[0]
        error = getattr(result, "error", None)
        if error is not None:
            return f"The tool failed: {error}"
        value = getattr(result, "result", "")
        if isinstance(value, DataContent):
            return f"Done: the tool showed me {value.media_type}"
        return f"Done: {value}"
    text = last.text
    if received(last):
        return f"Received {received(last)} with: {text}"
    if text == "snapshot":
        return reply("", call("snapshot", {}, call_id=f"snap-{len(messages)}"))
    if text.startswith("note "):
        return reply("", call("write_note", {"text": text[5:]}, call_id=f"note-{len(messages)}"))
    if text.startswith("define "):
        return reply("", call("lookup", {"word": text[7:]}, call_id=f"look-{len(messages)}"))
    if text == "think":
        thought = ReasoningContent(text="first I weigh <b>both</b> options")
        return ChatMessage(role=Role.ASSISTANT, contents=[thought, TextContent(text="Both.")])
    if text == "inject":
        return f"Here it is: {INJECTED}"
    return f"You said: {text}"


(HOME / "skills" / "greeting").mkdir(parents=True, exist_ok=True)
(HOME / "skills" / "greeting" / "SKILL.md").write_text(
    "---\nname: greeting\ndescription: How to greet people warmly.\n---\n\nSay hello by name.\n",
    encoding="utf-8",
)

clerk = (
    AgentBuilder()
    .with_name("clerk")
    .with_description("Writes notes (approved by a person) and looks words up.")
    .with_instructions("You keep notes for the user.")
    .with_chat_client(FunctionChatClient(answer, chunk_size=3))
    .with_tools([write_note, lookup, snapshot])
    .with_context_provider(SuperBrainContextProvider(HOME / "memory", consolidation_interval=0))
    .with_context_provider(AgentSkillsProvider(HOME / "skills"))
    .build()
)


class Draft(Executor):
    """Turns the input into a draft."""

    @handler
    async def draft(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"draft of {text}")


class Review(Executor):
    """Asks a person whether to publish the draft."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"question": f"publish {text}?"}, str)

    @handler
    async def answered(self, answer: InputResponse[str], ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"{answer.data['question']} -> {answer.response}")


class Publish(Executor):
    """Outputs what was decided."""

    @handler
    async def publish(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.yield_output(f"published: {text}")


draft, review, publish = Draft("draft"), Review("review"), Publish("publish")
review_flow = (
    WorkflowBuilder("review", start=draft, description="Draft, ask a person, publish.")
    .add_chain([draft, review, publish])
    .build()
)
