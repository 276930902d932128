"""Agents built in code for `raf mcp serve --python tests.tools.mcp_agent_factory:...`."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

from raf.agent.agent import Agent
from raf.agent.builder import AgentBuilder
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.testing import FunctionChatClient, call, reply


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: what to shout
    """
    return text.upper()


@tool(approval_required=True)
def delete_everything(confirm: bool) -> str:
    """Delete everything (needs approval, so never exposed over MCP)."""
    return "deleted"


def _reply(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
    users = [m.text for m in messages if m.role is Role.USER]
    return f"turn {len(users)}: you said {users[-1]!r}"


def make_agent() -> Agent:
    return (
        AgentBuilder("echo-agent")
        .with_description("Repeats what you say and counts the turns.")
        .with_chat_client(FunctionChatClient(_reply))
        .with_tool(shout)
        .with_tool(delete_everything)
        .build()
    )


def _reply_or_delete(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
    last = messages[-1]
    if last.role is Role.USER and last.text == "delete it":
        return reply("", call("delete_everything", {"confirm": True}))
    if last.role is Role.TOOL:
        result = last.function_results[0]
        return f"not deleted: {result.error or result.result}"
    return _reply(messages, options)


def make_approval_agent() -> Agent:
    """Asks for an approval-needing tool when told 'delete it', else echoes."""
    return (
        AgentBuilder("asks-approval")
        .with_chat_client(FunctionChatClient(_reply_or_delete))
        .with_tool(delete_everything)
        .build()
    )


GATE_ENV = "RAF_TEST_GATE"
"""A file path: the gated agent, told 'wait', writes PATH.started and answers once PATH
exists (so a test holds a run in progress as long as it needs, without timing)."""


async def _reply_after_gate(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
    users = [m.text for m in messages if m.role is Role.USER]
    if users[-1] == "wait":
        gate = Path(os.environ[GATE_ENV])
        Path(f"{gate}.started").write_text("started", encoding="utf-8")
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    return _reply(messages, options)


def make_gated_agent() -> Agent:
    """Echoes, but a 'wait' holds its run until the gate file exists."""
    return AgentBuilder("gated").with_chat_client(FunctionChatClient(_reply_after_gate)).build()
