"""The original framework's two workflow documents, Microsoft Agent Framework's forms,
and the older graph JSON, each run end to end."""

from __future__ import annotations

from raf.decl.workflow import DeclWorkflowBuilder, is_workflow_file, load_workflow_file
from raf.testing import ScriptedChatClient
from raf.workflow import InMemoryCheckpointStore
from tests.decl.workflow.helpers import DATA, run, variables


async def test_greeting_workflow_says_hello_to_the_name_in_the_message() -> None:
    workflow, result = await run("workflow_basic.yaml", "Ada")
    assert result.status == "completed"
    assert result.outputs == ["Hello, Ada!"]
    assert variables(workflow)["Local"] == {"greeting": "Hello", "userName": "Ada"}
    assert workflow.name == "greeting-workflow"


async def test_greeting_workflow_answers_each_message_afresh() -> None:
    workflow, _ = await run("workflow_basic.yaml", "Ada")
    second = await workflow.run("Grace")
    assert second.outputs == ["Hello, Grace!"]


async def test_if_else_workflow_takes_each_branch() -> None:
    _, large = await run("workflow_with_if.yaml", "250")
    _, small = await run("workflow_with_if.yaml", "7")
    assert large.outputs == ["250 is large"]
    assert small.outputs == ["7 is small"]


async def test_agent_framework_python_form_reads_inputs() -> None:
    workflow, result = await run("maf_conditional.yaml", {"age": 70})
    assert result.outputs == ["Group: senior; next year 71"]
    assert variables(workflow)["Workflow"]["Outputs"] == {"group": "senior"}
    _, teen = await run("maf_conditional.yaml", {"age": 12})
    assert teen.outputs == ["Group: minor; next year 13"]


async def test_agent_framework_trigger_form_needs_no_name_and_loops_with_goto() -> None:
    workflow, result = await run("maf_trigger.yaml", "go")
    assert result.outputs == ["count 1", "count 2", "count 3", "done"]
    assert workflow.name == "count_to_three"


def test_documents_are_told_apart_from_agent_documents() -> None:
    assert is_workflow_file(DATA / "workflow_basic.yaml")
    assert is_workflow_file(DATA / "maf_conditional.yaml")
    assert is_workflow_file(DATA / "graph_pipeline.json")
    loaded = load_workflow_file(DATA / "workflow_with_if.yaml")
    assert loaded.actions_path == ("trigger", "actions")


async def test_graph_json_fans_out_to_two_agents_and_merges() -> None:
    model = ScriptedChatClient(["the draft", "style: fine", "facts: right"])
    seen: list[str] = []

    def merge_notes(text: str) -> str:
        seen.append(text)
        return "merged: " + text.replace("\n\n", " | ")

    store = InMemoryCheckpointStore()
    workflow = (
        DeclWorkflowBuilder()
        .from_file(DATA / "graph_pipeline.json")
        .with_chat_client(model)
        .with_function(merge_notes)
        .with_checkpoint_store(store)
        .build()
    )
    result = await workflow.run("write about tides")
    assert result.outputs == ["merged: style: fine | facts: right"]
    assert [r.messages[-1].text for r in model.requests] == [
        "write about tides",
        "the draft",
        "the draft",
    ]
    assert len(await store.list()) >= 3


def test_the_agent_loader_points_workflow_documents_to_their_builder() -> None:
    import pytest

    from raf.core.errors import ValidationProblems
    from raf.decl import load_file

    with pytest.raises(ValidationProblems, match="this is a workflow document, not an agent"):
        load_file(DATA / "workflow_basic.yaml")
