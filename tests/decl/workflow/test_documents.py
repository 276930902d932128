"""The original framework's two workflow documents, Microsoft Agent Framework's forms,
and the older graph JSON, each run end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.core.errors import ValidationProblems
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


async def test_a_fresh_workflow_object_resumes_a_checkpoint_and_a_changed_one_refuses(
    tmp_path: Path,
) -> None:
    import pytest

    from raf.workflow import GraphChangedError, SqliteCheckpointStore

    text = (
        "kind: workflow\nname: quiz\ntrigger:\n  kind: OnConversationStart\n  actions:\n"
        "    - kind: Foreach\n      id: rounds\n      items: =Sequence(12)\n      actions:\n"
        "        - {kind: Question, id: ask, variable: Local.answer, question: 'Q{Local.item}?'}\n"
        "        - kind: SetVariable\n          id: add\n          variable: Local.total\n"
        "          value: =Local.total + Value(Local.answer)\n"
        "    - {kind: SendActivity, id: total, activity: 'total {Local.total}'}\n"
    )
    path = tmp_path / "quiz.yaml"
    path.write_text(text, encoding="utf-8")
    store = SqliteCheckpointStore(tmp_path / "cp.sqlite")

    def fresh() -> Any:
        return DeclWorkflowBuilder().from_file(path).with_checkpoint_store(store).build()

    result = await fresh().run("go")
    asked: list[str] = []
    while result.status == "paused":
        (request,) = result.requests
        asked.append(str(request.data))
        result = await fresh().run(
            checkpoint_id=result.checkpoint_id, responses={request.request_id: "2"}
        )
    assert asked == [f"Q{i}?" for i in range(1, 13)]
    assert result.outputs[-1] == "total 24"
    path.write_text(text.replace("id: add", "id: plus"), encoding="utf-8")
    with pytest.raises(GraphChangedError):
        await fresh().run(checkpoint_id=result.checkpoint_id)


async def test_graph_edge_conditions_read_the_message() -> None:
    document = {
        "start_node_id": "triage",
        "output_node_ids": ["urgent", "later"],
        "nodes": [
            {"id": "triage", "type": "function", "function": "triage"},
            {"id": "urgent", "type": "function", "function": "page"},
            {"id": "later", "type": "function", "function": "queue"},
        ],
        "edges": [
            {"source": "triage", "target": "urgent", "condition": '=Contains(Message, "fire")'},
            {"source": "triage", "target": "later", "condition": '=Not(Contains(Message, "fire"))'},
        ],
    }

    def build() -> Any:
        return (
            DeclWorkflowBuilder()
            .from_dict(document)
            .with_function(lambda text: text.lower(), name="triage")
            .with_function(lambda text: f"paging: {text}", name="page")
            .with_function(lambda text: f"queued: {text}", name="queue")
            .build()
        )

    assert (await build().run("FIRE in hall")).outputs == ["paging: fire in hall"]
    assert (await build().run("Printer jam")).outputs == ["queued: printer jam"]


async def test_declared_inputs_read_text_json_and_defaults() -> None:
    _, from_text = await run("maf_conditional.yaml", "70")
    assert from_text.outputs == ["Group: senior; next year 71"]
    _, from_json = await run("maf_conditional.yaml", '{"age": "30"}')
    assert from_json.outputs == ["Group: adult; next year 31"]
    workflow = (
        DeclWorkflowBuilder()
        .from_yaml_str(
            "name: d\ninputs:\n  n: {type: integer, default: 5}\n  who: {type: string}\n"
            "actions:\n  - {kind: SendActivity, activity: '=inputs.n * 2'}\n"
        )
        .build()
    )
    assert (await workflow.run("hello")).outputs == ["10"]


async def test_original_graph_json_refs_inline_agents_script_nodes_and_is_output() -> None:
    document = {
        "start_node_id": "clean",
        "nodes": [
            {"id": "clean", "type": "function", "function_ref": "strip"},
            {"id": "shout", "type": "script", "script": '=Upper(Message) & "!"'},
            {
                "id": "writer",
                "type": "agent",
                "agent": {"instructions": "Repeat what you are told."},
                "ports": {"in": ["text"], "out": ["text"]},
                "is_output": True,
            },
        ],
        "edges": [
            {"source": "clean", "target": "shout"},
            {"source": "shout", "target": "writer"},
        ],
    }
    model = ScriptedChatClient(["HELLO!"])
    workflow = (
        DeclWorkflowBuilder()
        .from_dict(document)
        .with_function(lambda text: text.strip(), name="strip")
        .with_chat_client(model)
        .build()
    )
    result = await workflow.run("  hello ")
    assert result.outputs == ["HELLO!"]
    assert model.requests[0].messages[-1].text == "HELLO!"  # the script node's value


def test_a_script_node_raf_cannot_run_is_a_located_error_naming_it() -> None:
    document: dict[str, Any] = {
        "start_node_id": "s",
        "nodes": [{"id": "s", "type": "script", "language": "python", "script": "print(1)"}],
        "edges": [],
    }
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_dict(document).build()
    assert "script node 's' is written in 'python'" in str(caught.value)
    document["nodes"][0] = {"id": "s", "type": "script", "script": "import os"}
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_dict(document).build()
    assert "script node 's': its body is not an expression raf can run" in str(caught.value)
