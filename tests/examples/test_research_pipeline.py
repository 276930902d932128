"""The research pipeline example, in Python and as YAML, on scripted models: who ran in
which superstep, what each agent was given, and the human approval before publishing."""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse
from raf.decl.workflow import DeclWorkflowBuilder, load_workflow_file
from raf.testing import ScriptedChatClient
from raf.workflow import NodeInvoked, Workflow, WorkflowRunResult

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "research-pipeline"
REPLIES = {
    "Plan the research": "1. When? 2. How? 3. Where used?",
    "history of a topic": "History: tide tables since 1700s.",
    "science behind": "Science: the moon's pull.",
    "used today": "Practice: harbour schedules.",
    "Write a clear": "REPORT: tides, explained.",
}


class ByRole:
    """One scripted model per agent, chosen by the agent's instructions, so concurrent
    agents each get their own replies whatever order they call in."""

    def __init__(self) -> None:
        self.models = {key: ScriptedChatClient([reply]) for key, reply in REPLIES.items()}
        self.calls: list[str] = []

    def _pick(self, messages: Sequence[ChatMessage]) -> ScriptedChatClient:
        system = messages[0].text
        for key, model in self.models.items():
            if key in system:
                self.calls.append(key)
                return model
        raise AssertionError(f"no script for {system!r}")

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> ChatResponse:
        return await self._pick(messages).get_response(messages, options)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        async for update in self._pick(messages).get_streaming_response(messages, options):
            yield update

    def given(self, key: str) -> str:
        """The last message the agent with these instructions was given."""
        return self.models[key].requests[-1].messages[-1].text


def load_python_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("research_pipeline", EXAMPLE / "pipeline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_pipeline(model: ByRole) -> Workflow:
    built: Workflow = load_python_example().build_pipeline(model)
    return built


def yaml_pipeline(model: ByRole) -> Workflow:
    return (
        DeclWorkflowBuilder().from_file(EXAMPLE / "workflow.yaml").with_chat_client(model).build()
    )


def supersteps(result: WorkflowRunResult) -> dict[str, int]:
    return {e.node: e.superstep for e in result.events if isinstance(e, NodeInvoked)}


BUILDS = {"python": python_pipeline, "yaml": yaml_pipeline}


@pytest.mark.parametrize("form", sorted(BUILDS))
@pytest.mark.parametrize("approve", [True, False])
async def test_pipeline_researches_at_once_and_publishes_only_when_approved(
    form: str, approve: bool
) -> None:
    model = ByRole()
    workflow = BUILDS[form](model)
    paused = await workflow.run("tides")
    assert paused.status == "paused"
    steps = supersteps(paused)
    assert steps["planner"] < steps["history"] == steps["science"] == steps["practice"]
    assert steps["practice"] < steps["writer"]
    assert model.calls[0] == "Plan the research" and model.calls[-1] == "Write a clear"
    assert sorted(model.calls[1:4]) == sorted(
        ["history of a topic", "science behind", "used today"]
    )
    assert model.given("history of a topic") == "1. When? 2. How? 3. Where used?"
    brief = model.given("Write a clear")
    for finding in ("History: tide tables", "Science: the moon", "Practice: harbour"):
        assert finding in brief
    (request,) = paused.requests
    assert "Publish this report?" in str(request.data)
    assert "REPORT: tides, explained." in str(request.data)
    assert paused.outputs == []
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: approve}
    )
    assert done.status == "completed"
    if approve:
        assert "REPORT: tides, explained." in done.output
    else:
        assert done.output == "The report was not published."
    assert len(model.calls) == 5  # nothing ran twice on resume


def test_yaml_pipeline_validates() -> None:
    loaded = load_workflow_file(EXAMPLE / "workflow.yaml")
    assert loaded.form == "graph"
    assert set(loaded.agents) == {"planner", "history", "science", "practice", "writer"}
    assert "raf validate workflow.yaml" in (EXAMPLE / "README.md").read_text(encoding="utf-8")
