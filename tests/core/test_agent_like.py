"""`AgentLike`, the one shape of everything that runs like an agent: agents,
orchestrations and workflows as agents all have it (checked by mypy here and at run time)."""

from __future__ import annotations

from raf import Agent, AgentBuilder
from raf.core.agent_like import AgentLike
from raf.orchestrations import SequentialOrchestration
from raf.orchestrations.agent import OrchestrationAgent
from raf.testing import ScriptedChatClient
from raf.workflow import WorkflowBuilder
from raf.workflow.as_agent import WorkflowAgent


def _agent(name: str, *answers: str) -> Agent:
    return AgentBuilder(name).with_chat_client(ScriptedChatClient(list(answers))).build()


async def test_agents_orchestrations_and_workflows_are_agent_like_and_answer_alike() -> None:
    plain: AgentLike = _agent("plain", "from the agent")
    orchestration = SequentialOrchestration([_agent("writer", "from the orchestration")])
    orchestrated: AgentLike = orchestration.as_agent()
    workflow: AgentLike = (
        WorkflowBuilder("flow", start=_agent("inner", "from the workflow")).build().as_agent()
    )
    assert isinstance(orchestrated, OrchestrationAgent)
    assert isinstance(workflow, WorkflowAgent)
    for agent, text in (
        (plain, "from the agent"),
        (orchestrated, "from the orchestration"),
        (workflow, "from the workflow"),
    ):
        assert isinstance(agent, AgentLike)
        assert isinstance(agent.name, str) and isinstance(agent.description, str)
        session = agent.create_session()
        response = await agent.run("go", session=session)
        assert text in response.text
        assert response.session_id == session.id


def test_something_without_a_run_is_not_agent_like() -> None:
    class NameOnly:
        name = "x"
        description = ""

    assert not isinstance(NameOnly(), AgentLike)


async def test_run_sync_and_load_session_say_the_same_for_agents_and_orchestrations() -> None:
    import warnings

    import pytest

    from raf.core.errors import RafError

    writer = _agent("writer", "done")
    team = SequentialOrchestration([_agent("a", "x")], name="team").as_agent()
    for agent in (writer, team):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no coroutine is made and left unawaited
            with pytest.raises(RafError, match="cannot be used inside a running event loop"):
                agent.run_sync("hi")
        with pytest.raises(RafError, match=f"agent '{agent.name}' has no session store"):
            await agent.load_session("s1")


def test_run_sync_runs_an_orchestration_from_a_script() -> None:
    team = SequentialOrchestration([_agent("a", "first"), _agent("b", "second")], name="team")
    assert team.as_agent().run_sync("go").text == "second"
