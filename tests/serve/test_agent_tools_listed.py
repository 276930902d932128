"""`/agents` and `/agents/{name}` list every tool the agent's model is offered, the
ones its workspace context brings included (a document's file tools live there)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from raf.decl import DeclAgentBuilder
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient

FILER = """
name: filer
instructions: You read and write files.
contexts:
  - kind: workspace
    name: project
    config: {root: ., policy: approve}
tools:
  - kind: file
    name: read_file
  - kind: file
    name: write_file
"""


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.chdir(tmp_path)
    agent = DeclAgentBuilder().from_yaml_str(FILER).with_chat_client(ScriptedChatClient([])).build()
    with serve_in_thread(create_app(AgentHost([agent]), a2a=False)) as served:
        yield served


def test_workspace_tools_are_listed(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        listed = client.get("/agents").json()["agents"][0]
        assert listed["tools"] == ["read_file", "write_file"]
        assert client.get("/agents/filer").json()["tools"] == ["read_file", "write_file"]
