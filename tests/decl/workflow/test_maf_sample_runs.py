"""Microsoft Agent Framework's workflow samples run end to end with scripted agents."""

from __future__ import annotations

from pathlib import Path

from raf import AgentBuilder
from raf.decl.workflow import DeclWorkflowBuilder
from raf.testing import ScriptedChatClient

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "maf-samples"
DECLARATIVE = SAMPLES / "python" / "samples" / "03-workflows" / "declarative"


def _agent(name: str, replies: list[str]) -> tuple[str, object]:
    return name, AgentBuilder(name).with_chat_client(ScriptedChatClient(replies)).build()


async def test_student_teacher_runs_until_the_teacher_congratulates() -> None:
    builder = DeclWorkflowBuilder().from_file(DECLARATIVE / "student_teacher" / "workflow.yaml")
    for name, agent in (
        _agent("StudentAgent", ["2 + 2 = 5", "2 + 2 = 4"]),
        _agent("TeacherAgent", ["Not quite, try again.", "Congratulations! That is right."]),
    ):
        builder = builder.with_agent(name, agent)  # type: ignore[arg-type]
    workflow = builder.build()
    result = await workflow.run("What is 2 + 2?")
    said = " ".join(str(o) for o in result.outputs)
    assert said.count("[Student]") == 2  # a second try after "Not quite"
    assert "2 + 2 = 4" in said
    assert said.rstrip().endswith("GOLD STAR! The student has demonstrated understanding.")


async def test_conditional_workflow_routes_by_age() -> None:
    workflow = (
        DeclWorkflowBuilder()
        .from_file(DECLARATIVE / "conditional_workflow" / "workflow.yaml")
        .build()
    )
    young = await workflow.run({"age": 10})
    old = await workflow.run({"age": 70})
    assert young.outputs != old.outputs
