"""The examples of Microsoft Agent Framework's actions reference (and documents of its
advanced patterns, in tests/data/workflows/maf-patterns) for declarative
workflows, each run as written there (with the inputs the example reads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf.decl.workflow import DeclWorkflowBuilder
from raf.workflow import WorkflowRunResult
from tests.decl.workflow.helpers import variables


async def _run(actions: str, inputs: Any = "") -> tuple[Any, WorkflowRunResult]:
    # the reference's examples are the Python engine's, whose actions may go without an id
    doc = "name: reference\nactions:\n"
    doc += "".join(f"  {line}\n" for line in actions.strip("\n").splitlines())
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).build()
    return workflow, await workflow.run(inputs)


async def test_set_multiple_variables_as_a_map() -> None:
    workflow, _ = await _run(
        """
- kind: SetMultipleVariables
  id: initialize_vars
  displayName: Initialize variables
  variables:
    Local.counter: 0
    Local.status: pending
    Local.message: =Concat("Processing order ", Workflow.Inputs.orderId)
""",
        {"orderId": "A7"},
    )
    local = variables(workflow)["Local"]
    assert (local["counter"], local["status"]) == (0, "pending")
    assert local["message"] == "Processing order A7"


async def test_append_value_to_a_list_and_to_a_text() -> None:
    workflow, _ = await _run(
        """
- {kind: SetVariable, variable: Local.items, value: "=[\\"a\\"]"}
- {kind: SetVariable, variable: Local.log, value: "start"}
- kind: AppendValue
  id: add_item
  variable: Local.items
  value: =Workflow.Inputs.newItem
- kind: AppendValue
  variable: Local.log
  value: =" then " & Workflow.Inputs.newItem
""",
        {"newItem": "b"},
    )
    local = variables(workflow)["Local"]
    assert local["items"] == ["a", "b"]
    assert local["log"] == "start then b"  # a text is concatenated


async def test_foreach_reads_its_item_and_index_by_bare_name() -> None:
    _, result = await _run(
        """
- kind: Foreach
  id: process_items
  displayName: Process each item
  source: =Workflow.Inputs.items
  itemName: item
  indexName: index
  actions:
    - kind: If
      condition: =item = "stop"
      then:
        - kind: BreakLoop
    - kind: SendActivity
      activity:
        text: =Concat("Processing item ", index, ": ", item)
""",
        {"items": ["pen", "cup", "stop", "hat"]},
    )
    assert result.outputs == ["Processing item 0: pen", "Processing item 1: cup"]


def test_a_bare_name_outside_its_loop_is_still_an_error() -> None:
    from raf.core.errors import ValidationProblems

    doc = (
        "kind: Workflow\nactions:\n  - kind: Foreach\n    source: =[1]\n    actions: []\n"
        "  - {kind: SendActivity, activity: =item}\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    (problem,) = caught.value.problems
    assert problem.line == 6 and "unknown variable scope 'item'" in problem.message


async def test_repeat_until_counts_to_five() -> None:
    _, result = await _run(
        """
- kind: SetVariable
  variable: Local.counter
  value: 0
- kind: RepeatUntil
  id: count_loop
  displayName: Count to 5
  condition: =Local.counter >= 5
  actions:
    - kind: SetVariable
      variable: Local.counter
      value: =Local.counter + 1
    - kind: SendActivity
      activity:
        text: '=Concat("Counter: ", Local.counter)'
"""
    )
    assert result.outputs == [f"Counter: {n}" for n in range(1, 6)]


async def test_repeat_until_runs_once_before_it_checks_and_obeys_loop_controls() -> None:
    _, result = await _run(
        """
- {kind: SetVariable, variable: Local.n, value: 0}
- kind: RepeatUntil
  condition: =true
  actions:
    - {kind: SendActivity, activity: once}
- kind: RepeatUntil
  condition: =Local.n >= 4
  actions:
    - {kind: SetVariable, variable: Local.n, value: =Local.n + 1}
    - kind: If
      condition: =Local.n = 2
      then: [{kind: ContinueLoop}]
    - kind: If
      condition: =Local.n = 3
      then: [{kind: BreakLoop}]
    - {kind: SendActivity, activity: "{Local.n}"}
"""
    )
    assert result.outputs == ["once", "1"]


async def test_emit_event_with_event_type_and_data() -> None:
    _, result = await _run(
        """
- kind: EmitEvent
  id: emit_status
  displayName: Emit status event
  eventType: order_status_changed
  data:
    orderId: =Workflow.Inputs.orderId
    status: shipped
""",
        {"orderId": "A7"},
    )
    assert result.outputs == [
        {"eventName": "order_status_changed", "eventValue": {"orderId": "A7", "status": "shipped"}}
    ]


async def _answered(actions: str, answer: object) -> tuple[Any, WorkflowRunResult, object]:
    workflow, paused = await _run(actions)
    (request,) = paused.requests
    done = await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: answer}
    )
    return workflow, done, request.data


async def test_confirmation_with_question_and_variable() -> None:
    workflow, _, asked = await _answered(
        """
- kind: Confirmation
  id: confirm_delete
  displayName: Confirm deletion
  question:
    text: "Are you sure you want to delete this item?"
  variable: Local.confirmed
""",
        "yes",
    )
    assert asked == "Are you sure you want to delete this item?"
    assert variables(workflow)["Local"]["confirmed"] is True


async def test_request_external_input_with_prompt_text() -> None:
    workflow, _, asked = await _answered(
        """
- kind: RequestExternalInput
  id: request_approval
  displayName: Request manager approval
  prompt:
    text: "Please provide approval for this request."
  variable: Local.approvalResult
  default: "pending"
""",
        "",
    )
    assert asked == "Please provide approval for this request."
    assert variables(workflow)["Local"]["approvalResult"] == "pending"


async def test_wait_for_input_with_variable() -> None:
    workflow, _, _ = await _answered(
        """
- kind: WaitForInput
  id: wait_for_response
  variable: Local.externalResponse
""",
        "done",
    )
    assert variables(workflow)["Local"]["externalResponse"] == "done"


async def test_create_conversation_and_end() -> None:
    workflow, result = await _run(
        """
- kind: CreateConversation
  id: create_new_conv
  conversationId: Local.NewConversationId
- kind: EndConversation
  id: end_chat
- {kind: SendActivity, activity: never}
"""
    )
    assert result.outputs == []
    assert str(variables(workflow)["Local"]["NewConversationId"]).startswith("conv")


async def test_the_agent_scope_holds_the_last_agent_s_answer() -> None:
    from raf import AgentBuilder
    from raf.testing import ScriptedChatClient

    doc = """
kind: Workflow
actions:
  - kind: InvokeAzureAgent
    id: call_assistant
    agent:
      name: MyAgent
    output:
      responseObject: Local.AgentResult
      autoSend: false
  - kind: SendActivity
    activity:
      text: =Agent.name & " said " & Agent.text & " (" & Local.AgentResult.text & ")"
  - kind: SendActivity
    activity:
      text: =Last(Agent.messages).Text
"""
    model = ScriptedChatClient(['{"text": "hi"}'])
    workflow = (
        DeclWorkflowBuilder()
        .from_yaml_str(doc)
        .with_agent("MyAgent", AgentBuilder("MyAgent").with_chat_client(model).build())
        .build()
    )
    result = await workflow.run("go")
    assert result.outputs == ['MyAgent said {"text": "hi"} (hi)', '{"text": "hi"}']


def test_the_agent_scope_cannot_be_set() -> None:
    from raf.core.errors import ValidationProblems

    doc = "kind: Workflow\nactions:\n  - {kind: SetVariable, variable: Agent.text, value: x}\n"
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(doc).build()
    assert "cannot set 'Agent.text'" in str(caught.value)


async def test_system_timestamp_is_when_the_run_began() -> None:
    from datetime import UTC, datetime, timedelta

    _, result = await _run("- {kind: SendActivity, activity: =System.Timestamp}")
    (stamp,) = result.outputs
    began = datetime.fromisoformat(stamp)
    assert abs(datetime.now(UTC) - began) < timedelta(minutes=5)


PATTERNS = Path(__file__).resolve().parents[2] / "data" / "workflows" / "maf-patterns"


async def _answer_all(name: str, inputs: Any, answers: list[Any]) -> tuple[Any, Any]:
    workflow = DeclWorkflowBuilder().from_file(PATTERNS / name).build()
    result = await workflow.run(inputs)
    replies = iter(answers)
    asked = []
    while result.status == "paused":
        (request,) = result.requests
        asked.append(request.data)
        result = await workflow.run(
            checkpoint_id=result.checkpoint_id, responses={request.request_id: next(replies)}
        )
    return workflow, (result, asked)


@pytest.mark.parametrize(
    ("rating", "asked_to_improve"), [("5", False), ("2", True)], ids=["happy", "unhappy"]
)
async def test_customer_survey(rating: str, asked_to_improve: bool) -> None:
    answers = ["Ada", rating, *(["faster"] if asked_to_improve else []), "none"]
    workflow, (result, asked) = await _answer_all("customer-survey.yaml", {}, answers)
    assert ("What could we improve?" in asked) is asked_to_improve
    assert result.outputs[-1] == "Thank you, Ada! Your feedback has been recorded."
    survey = variables(workflow)["Workflow"]["Outputs"]["survey"]
    assert survey == {
        "name": "Ada",
        "rating": rating,
        "feedback": "faster" if asked_to_improve else None,
        "comments": "none",
    }


@pytest.mark.parametrize(
    ("amount", "answers", "status"),
    [(1500, ["yes"], "approved"), (1500, ["no"], "denied"), (15, [], "auto_approved")],
)
async def test_approval_workflow(amount: int, answers: list[str], status: str) -> None:
    workflow, (result, asked) = await _answer_all(
        "approval-workflow.yaml", {"requestType": "travel", "amount": amount}, answers
    )
    assert result.outputs[0] == f"Processing travel request for ${amount}"
    if answers:
        assert asked == [f"Do you approve this travel request for ${amount}?"]
    assert variables(workflow)["Workflow"]["Outputs"]["status"] == status


async def test_search_workflow_breaks_when_found() -> None:
    items = [{"id": 1, "name": "pen"}, {"id": 2, "name": "cup"}, {"id": 3, "name": "hat"}]
    _, (result, _) = await _answer_all("search-workflow.yaml", {"items": items, "targetId": 2}, [])
    assert result.outputs == ["Checked item: pen", "Found: cup"]
    _, (missing, _) = await _answer_all("search-workflow.yaml", {"items": items, "targetId": 9}, [])
    assert missing.outputs[-1] == "Item not found"


async def test_an_unquoted_formula_with_a_colon_is_read_as_the_formula() -> None:
    doc = (
        "kind: Workflow\nactions:\n  - {kind: SetVariable, variable: Local.counter, value: 3}\n"
        "  - kind: SendActivity\n    activity:\n"
        '      text: =Concat("Counter: ", Local.counter)\n'
    )
    result = await DeclWorkflowBuilder().from_yaml_str(doc).build().run("")
    assert result.outputs == ["Counter: 3"]


async def test_a_repeat_until_that_never_holds_stops_at_the_action_limit() -> None:
    from raf.decl.workflow.runtime import Limits
    from raf.workflow.errors import WorkflowRunError

    doc = (
        "kind: Workflow\nactions:\n  - kind: RepeatUntil\n    id: forever\n"
        "    condition: =false\n    actions:\n      - {kind: SendActivity, activity: again}\n"
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).with_limits(Limits(max_steps=50)).build()
    with pytest.raises(WorkflowRunError, match="ran more than 50 actions"):
        await workflow.run("")


async def test_the_csharp_only_actions_as_the_reference_writes_them() -> None:
    workflow, result = await _run(
        """
- {kind: SetVariable, variable: Local.rawResponse, value: '{"n": 2}'}
- kind: ParseValue
  id: parse_json
  displayName: Parse JSON response
  source: =Local.rawResponse
  variable: Local.parsedData
- kind: CreateConversation
  id: side
  conversationId: Local.SourceConversation
- kind: AddConversationMessage
  id: add_system_message
  conversationId: =Local.SourceConversation
  message:
    role: system
    content: =Concat("n is ", Local.parsedData.n)
- kind: AddConversationMessage
  conversationId: =Local.SourceConversation
  message: {role: user, content: second}
- kind: CopyConversationMessages
  id: copy_context
  sourceConversationId: =Local.SourceConversation
  targetConversationId: =System.ConversationId
  limit: 10
- kind: RetrieveConversationMessages
  id: get_history
  conversationId: =System.ConversationId
  limit: 20
  newestFirst: true
  variable: Local.conversationHistory
- kind: RetrieveConversationMessage
  id: get_message
  conversationId: =System.ConversationId
  messageId: =First(Local.conversationHistory).Id
  variable: Local.retrievedMessage
- kind: SendActivity
  activity:
    text: =First(Local.conversationHistory).Text & " / " & Local.retrievedMessage.Text
""",
        "hello",
    )
    assert variables(workflow)["Local"]["parsedData"] == {"n": 2}
    assert result.outputs == ["second / second"]  # newest first


async def test_edit_table_v2_update_and_delete_by_key() -> None:
    workflow, _ = await _run(
        """
- kind: SetVariable
  variable: Local.configTable
  value: '=Table({key: "a", value: 1}, {key: "b", value: 2})'
- kind: EditTableV2
  id: update_table
  table: Local.configTable
  operation: update
  key: key
  row:
    key: b
    value: =20
- kind: EditTableV2
  table: Local.configTable
  operation: delete
  key: key
  row: {key: a}
"""
    )
    assert variables(workflow)["Local"]["configTable"] == [{"key": "b", "value": 20}]


async def test_edit_table_v2_update_without_key_or_index_is_a_located_error() -> None:
    from raf.workflow.errors import WorkflowRunError

    with pytest.raises(WorkflowRunError, match=r"update_table.*update needs an index, or a key"):
        await _run(
            """
- {kind: SetVariable, variable: Local.t, value: "=Table({k: 1})"}
- {kind: EditTableV2, id: update_table, table: Local.t, operation: update, row: {k: 2}}
"""
        )


@pytest.mark.parametrize(
    ("teacher", "result", "turns"),
    [
        (["Not yet.", "Well done, congratulations!"], "success", 2),
        (["No."] * 4, "timeout", 4),
    ],
)
async def test_student_teacher_pattern(teacher: list[str], result: str, turns: int) -> None:
    from raf import AgentBuilder
    from raf.testing import ScriptedChatClient

    student = ScriptedChatClient([f"try {n}" for n in range(4)])
    builder = DeclWorkflowBuilder().from_file(PATTERNS / "student-teacher.yaml")
    for name, client in (("StudentAgent", student), ("TeacherAgent", ScriptedChatClient(teacher))):
        builder = builder.with_agent(name, AgentBuilder(name).with_chat_client(client).build())
    workflow = builder.build()
    done = await workflow.run({"problem": "2 + 2"})
    assert done.outputs[0] == "Starting session for: 2 + 2"
    assert len(student.requests) == turns
    assert variables(workflow)["Workflow"]["Outputs"]["result"] == result
