"""The action kinds and shapes of Microsoft Agent Framework's Python engine for
declarative workflows, beyond those its samples use: `Foreach` with `source`,
`itemName` and `indexName`; `AppendValue`; `EmitEvent`; `CancelDialog`; `Confirmation`
and `WaitForInput`, which pause the run for an answer."""

from __future__ import annotations

import pytest

from raf.decl.workflow import DeclWorkflowBuilder
from raf.workflow import WorkflowRunResult
from tests.decl.workflow.helpers import DATA, variables

ACTIONS = DATA / "actions"


async def _answer(kind: str, message: str, answer: object) -> tuple[WorkflowRunResult, object]:
    workflow = DeclWorkflowBuilder().from_file(ACTIONS / f"{kind}.yaml").build()
    paused = await workflow.run(message)
    assert paused.status == "paused"
    (request,) = paused.requests
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: answer}
    )
    return done, request.data


async def test_foreach_with_items_source() -> None:
    doc = (
        "kind: Workflow\nactions:\n  - kind: Foreach\n    itemsSource: =[1, 2]\n    actions:\n"
        '      - {kind: SendActivity, activity: "{Local.item}"}\n'
    )
    result = await DeclWorkflowBuilder().from_yaml_str(doc).build().run("")
    assert result.outputs == ["1", "2"]


async def test_foreach_with_source_item_name_and_index_name() -> None:
    doc = """
kind: Workflow
actions:
  - kind: Foreach
    id: each
    source: =Split(System.LastMessage.Text, " ")
    itemName: word
    indexName: at
    actions:
      - {kind: SendActivity, id: say, activity: "{Local.at}={Local.word.Value}"}
"""
    result = await DeclWorkflowBuilder().from_yaml_str(doc).build().run("a b")
    assert result.outputs == ["0=a", "1=b"]


def test_foreach_needs_items_or_source_located() -> None:
    from raf.core.errors import ValidationProblems

    doc = "kind: Workflow\nactions:\n  - kind: Foreach\n    id: each\n    actions: []\n"
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    (problem,) = caught.value.problems
    assert problem.line == 3
    assert "Foreach needs 'items' (or 'source', 'itemsSource')" in problem.message


async def test_append_value_adds_a_row_and_makes_the_table_when_blank() -> None:
    workflow = DeclWorkflowBuilder().from_file(ACTIONS / "AppendValue.yaml").build()
    result = await workflow.run("Lima")
    assert result.outputs == ["Oslo, Lima / Rome"]
    assert variables(workflow)["Local"]["visited"] == ["Oslo", "Lima"]


async def test_emit_event_is_an_output_record_in_both_forms() -> None:
    workflow = DeclWorkflowBuilder().from_file(ACTIONS / "EmitEvent.yaml").build()
    result = await workflow.run("tea")
    assert result.outputs == [
        {"eventName": "order_received", "eventValue": {"item": "tea", "count": 2}},
        {"eventName": "order_checked", "eventValue": 3},
        "done",
    ]


async def test_cancel_dialog_ends_the_workflow() -> None:
    doc = """
kind: Workflow
actions:
  - {kind: SendActivity, id: first, activity: one}
  - {kind: CancelDialog, id: stop}
  - {kind: SendActivity, id: never, activity: two}
"""
    result = await DeclWorkflowBuilder().from_yaml_str(doc).build().run("")
    assert result.status == "completed"
    assert result.outputs == ["one"]


@pytest.mark.parametrize(
    ("answer", "said"),
    [("yes", "Sent."), ("Y", "Sent."), ("ok", "Sent."), (True, "Sent."), ("no", "Kept.")],
)
async def test_confirmation_asks_and_keeps_a_boolean(answer: object, said: str) -> None:
    done, asked = await _answer("Confirmation", "tea", answer)
    assert asked == "Send the order for tea?"
    assert done.outputs == [said]


async def test_wait_for_input_says_its_prompt_and_keeps_the_answer() -> None:
    workflow = DeclWorkflowBuilder().from_file(ACTIONS / "WaitForInput.yaml").build()
    paused = await workflow.run("")
    assert paused.outputs == ["Which city?"]
    (request,) = paused.requests
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: "Lima"}
    )
    assert done.outputs[-1] == "Going to Lima."
    assert variables(workflow)["Local"]["input"] == "Lima"


def test_emit_event_without_a_name_is_located() -> None:
    from raf.core.errors import ValidationProblems

    doc = "kind: Workflow\nactions:\n  - kind: EmitEvent\n    id: e\n    event: {data: 1}\n"
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    (problem,) = caught.value.problems
    assert problem.line == 3 and "EmitEvent needs 'eventName'" in problem.message


SPELLINGS = """
kind: Workflow
actions:
  - kind: SetTextVariable
    id: greet
    variable: Local.greeting
    text: Hello {System.LastMessage.Text}
  - kind: SetVariable
    id: nested_path
    variable:
      path: Local.n
    value: =3
  - kind: SetValue
    id: value_by_variable
    variable: Local.m
    value: =Local.n * 2
  - kind: SetMultipleVariables
    id: several
    assignments:
      - {path: Local.a, value: 1}
      - {variable: {path: Local.b}, value: 2}
  - kind: If
    id: check
    condition: =Local.n > 2
    actions:
      - {kind: SendActivity, id: big, activity: {text: "=Local.m + Local.a + Local.b"}}
  - kind: GotoAction
    id: jump
    target: final
  - kind: SendActivity
    id: skipped
    activity: never
  - kind: SendActivity
    id: final
    activity: =Local.greeting
  - kind: ResetVariable
    id: forget
    path: Local.greeting
"""


async def test_the_other_field_spellings_of_the_python_engine() -> None:
    workflow = DeclWorkflowBuilder().from_yaml_str(SPELLINGS).build()
    result = await workflow.run("Ada")
    assert result.outputs == ["9", "Hello Ada"]
    local = variables(workflow)["Local"]
    assert local.get("greeting") is None and (local["a"], local["b"]) == (1, 2)


ASKING = """
kind: Workflow
actions:
  - kind: Question
    id: ask
    text: Your name?
    property: Local.name
  - kind: RequestExternalInput
    id: approve
    message: =$"Approve {Local.name}?"
    output:
      property: Local.approval
  - kind: InvokeAzureAgent
    id: helper
    agentName: Helper
  - kind: SendActivity
    id: say
    activity: "{Local.name}: {Local.approval}"
"""


async def test_questions_and_agents_spelt_the_python_engine_s_way() -> None:
    from raf import AgentBuilder
    from raf.testing import ScriptedChatClient

    model = ScriptedChatClient(["Hi there."])
    workflow = (
        DeclWorkflowBuilder()
        .from_yaml_str(ASKING)
        .with_agent("Helper", AgentBuilder("Helper").with_chat_client(model).build())
        .build()
    )
    result = await workflow.run("")
    asked = []
    for answer in ("Lin", "yes"):
        (request,) = result.requests
        asked.append(request.data)
        result = await workflow.run(
            checkpoint_id=result.checkpoint_id, responses={request.request_id: answer}
        )
    assert asked == ["Your name?", "Approve Lin?"]
    assert result.outputs == ["Hi there.", "Lin: yes"]
    assert len(model.requests) == 1


def test_a_misspelt_alternative_is_still_located_under_its_own_name() -> None:
    from raf.core.errors import ValidationProblems

    doc = (
        "kind: Workflow\nactions:\n  - kind: GotoAction\n    id: jump\n    target: nowhere\n"
        "  - {kind: SendActivity, id: here, activity: hi}\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    (problem,) = caught.value.problems
    assert problem.line == 5 and problem.key_path == "actions[0].target"
    assert "GotoAction target 'nowhere' is no action id" in problem.message


def test_both_spellings_at_once_is_an_error() -> None:
    from raf.core.errors import ValidationProblems

    doc = (
        "kind: Workflow\nactions:\n  - kind: GotoAction\n    id: jump\n    actionId: a\n"
        "    target: b\n  - {kind: SendActivity, id: a, activity: hi}\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    (problem,) = caught.value.problems
    assert problem.line == 6 and "'target' and 'actionId' say the same" in problem.message


async def test_agent_output_property_and_a_fenced_response_object() -> None:
    from raf import AgentBuilder
    from raf.testing import ScriptedChatClient

    doc = """
kind: Workflow
actions:
  - kind: InvokeAzureAgent
    id: ask
    agent: {name: Helper}
    output: {property: Local.answer, responseObject: Local.obj, autoSend: false}
  - {kind: SendActivity, id: say, activity: "{Local.obj.n} from {Len(Local.answer)} characters"}
"""
    reply = '```json\n{"n": 5}\n```'
    model = ScriptedChatClient([reply])
    workflow = (
        DeclWorkflowBuilder()
        .from_yaml_str(doc)
        .with_agent("Helper", AgentBuilder("Helper").with_chat_client(model).build())
        .build()
    )
    result = await workflow.run("go")
    assert result.outputs == [f"5 from {len(reply)} characters"]
    assert variables(workflow)["Local"]["answer"] == reply


async def test_repeat_until_document() -> None:
    workflow = DeclWorkflowBuilder().from_file(ACTIONS / "RepeatUntil.yaml").build()
    result = await workflow.run("ab")
    assert result.outputs == ["abab"]  # twice: "ab" is shorter than 3


async def test_question_property_beside_variable_keeps_that_field_of_a_record_answer() -> None:
    doc = (
        "kind: Workflow\nactions:\n  - kind: Question\n    id: ask\n    variable: Local.name\n"
        "    property: name\n    prompt: Who?\n"
        '  - {kind: SendActivity, activity: "hi {Local.name}"}\n'
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).build()
    paused = await workflow.run("")
    (request,) = paused.requests
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id,
        responses={request.request_id: {"name": "Ada", "age": 36}},
    )
    assert done.outputs == ["hi Ada"]


async def test_mcp_tool_connection_names_a_registered_server() -> None:
    import sys
    from pathlib import Path

    from raf.tools.mcp.client import McpClient

    doc = """
kind: Workflow
actions:
  - kind: InvokeMcpTool
    id: invoke_hosted_mcp
    serverUrl: https://mcp.example.invalid
    toolName: microsoft_docs_search
    connection:
      name: my-foundry-connection
    arguments: {query: tables}
    output:
      result: Local.ToolResult
  - {kind: SendActivity, activity: "=First(Local.ToolResult).content"}
"""
    server = Path(__file__).with_name("docs_mcp_server.py")
    client = McpClient({"name": "docs", "command": sys.executable, "args": [str(server)]})
    try:
        workflow = (
            DeclWorkflowBuilder()
            .from_yaml_str(doc)
            .with_mcp_server("my-foundry-connection", client)
            .build()
        )
        result = await workflow.run("")
    finally:
        await client.aclose()
    assert result.outputs == ["tables is documented here."]


@pytest.mark.parametrize(
    ("entity", "answer", "kept"),
    [
        ("NumberPrebuiltEntity", "42", 42),
        ("NumberPrebuiltEntity", "4.5", 4.5),
        ("NumberPrebuiltEntity", "1,200", 1200),
        ("BooleanPrebuiltEntity", "Yes", True),
        ("BooleanPrebuiltEntity", "no", False),
        ("StringPrebuiltEntity", "42", "42"),
    ],
)
async def test_question_entity_reads_numbers_and_booleans(
    entity: str, answer: str, kept: object
) -> None:
    doc = (
        "kind: Workflow\nactions:\n  - kind: Question\n    id: ask\n    variable: Local.v\n"
        f"    prompt: Value?\n    entity: {entity}\n"
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).build()
    paused = await workflow.run("")
    (request,) = paused.requests
    await workflow.run(checkpoint_id=paused.checkpoint_id, responses={request.request_id: answer})
    assert variables(workflow)["Local"]["v"] == kept
