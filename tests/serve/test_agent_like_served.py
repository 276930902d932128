"""A server hosts anything `AgentLike`: an agent, an orchestration and a workflow run as
agents are each served, listed and run over HTTP the same way (the host's and the
runtime's agents are typed `AgentLike`, so mypy checks the annotations below too)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from raf import Agent, AgentBuilder
from raf.core.agent_like import AgentLike, EquippedAgent, own_tools
from raf.orchestrations import SequentialOrchestration
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient
from raf.workflow import WorkflowBuilder


def _agent(name: str, *answers: str) -> Agent:
    return AgentBuilder(name).with_chat_client(ScriptedChatClient(list(answers))).build()


def _agents() -> list[AgentLike]:
    plain: AgentLike = _agent("plain", "from the agent", "again from the agent")
    team: AgentLike = SequentialOrchestration(
        [_agent("writer", "from the team", "again from the team")], name="team"
    ).as_agent()
    flow: AgentLike = (
        WorkflowBuilder("flow", start=_agent("inner", "from the flow", "again from the flow"))
        .build()
        .as_agent()
    )
    return [plain, team, flow]


def test_the_host_keeps_each_agent_as_agent_like() -> None:
    host = AgentHost(_agents())
    assert sorted(host.agents) == ["flow", "plain", "team"]
    for name in host.agents:
        hosted: AgentLike = host.agent(name)
        assert isinstance(hosted, AgentLike)
    assert isinstance(host.agent("plain"), EquippedAgent)
    assert not isinstance(host.agent("team"), EquippedAgent)
    assert own_tools(host.agent("team")) == ()


@pytest.fixture
def url() -> Iterator[str]:
    with serve_in_thread(create_app(AgentHost(_agents()), a2a=False)) as served:
        yield served


def test_each_kind_is_listed_and_answers_over_http_in_one_session(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        listed = {a["name"]: a for a in client.get("/agents").json()["agents"]}
        assert sorted(listed) == ["flow", "plain", "team"]
        assert listed["team"]["tools"] == [] and listed["team"]["providers"] == []
        assert "max_tool_rounds" in listed["plain"] and "max_tool_rounds" not in listed["team"]
        for name, text in (("plain", "agent"), ("team", "team"), ("flow", "flow")):
            session = client.post(f"/agents/{name}/sessions").json()["id"]
            first = client.post(f"/agents/{name}/sessions/{session}/runs", json={"messages": "go"})
            assert first.status_code == 200, first.text
            assert first.json()["text"] == f"from the {text}"
            second = client.post(
                f"/agents/{name}/sessions/{session}/runs", json={"messages": "again"}
            )
            assert second.json()["text"] == f"again from the {text}"
