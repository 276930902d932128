"""Agents built from documents on scripted models, hosted by one real server per module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from raf.agent.agent import Agent
from raf.core.function_tool import tool
from raf.core.sessions import SessionStore
from raf.decl import DeclAgentBuilder
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.testing import ScriptedChatClient

HELPER = """
name: helper
description: Answers questions.
instructions: You answer briefly.
"""

CLERK = """
name: clerk
description: Keeps notes, each one approved by a person.
instructions: You write notes.
tools:
  - kind: function
    name: write_note
    approvalRequired: true
"""

SLOW = """
name: slow
description: Takes its time.
instructions: You think for a long time.
"""

TOKEN_A = "token-a-0123456789abcdef"
TOKEN_B = "token-b-0123456789abcdef"


@dataclass
class Served:
    """A running server and the scripted models behind its agents."""

    url: str
    host: AgentHost
    helper: ScriptedChatClient
    clerk: ScriptedChatClient
    slow: ScriptedChatClient
    notes: list[str] = field(default_factory=list)

    def client(
        self, token: str | None = None, headers: dict[str, str] | None = None
    ) -> httpx.Client:
        sent = {"authorization": f"Bearer {token}"} if token else {}
        sent.update(headers or {})
        return httpx.Client(base_url=self.url, headers=sent, timeout=30)


def build_agents() -> tuple[list[Agent], dict[str, ScriptedChatClient], list[str]]:
    """The three test agents, from documents, with their scripted models."""
    notes: list[str] = []

    @tool(name="write_note", description="Write a note.")
    def write_note(text: str) -> str:
        notes.append(text)
        return f"noted: {text}"

    models = {
        "helper": ScriptedChatClient([]),
        "clerk": ScriptedChatClient([]),
        "slow": ScriptedChatClient([], delay=30.0),
    }
    agents = [
        DeclAgentBuilder().from_yaml_str(HELPER).with_chat_client(models["helper"]).build(),
        DeclAgentBuilder()
        .from_yaml_str(CLERK)
        .register_factory("write_note", lambda context: write_note)
        .with_chat_client(models["clerk"])
        .build(),
        DeclAgentBuilder().from_yaml_str(SLOW).with_chat_client(models["slow"]).build(),
    ]
    return agents, models, notes


def start(
    security: ServeSecurity | None = None, store: SessionStore | None = None, **options: Any
) -> Iterator[Served]:
    agents, models, notes = build_agents()
    host = AgentHost(agents, store=store)
    app = create_app(host, security, **options)
    with serve_in_thread(app) as url:
        yield Served(url, host, models["helper"], models["clerk"], models["slow"], notes)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """An open server on loopback (no tokens)."""
    yield from start(a2a=False)


@pytest.fixture(scope="module")
def guarded() -> Iterator[Served]:
    """A server that wants one of two bearer tokens and caps bodies at 4 KiB."""
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B], max_body_bytes=4096)
    yield from start(security, a2a=False)
