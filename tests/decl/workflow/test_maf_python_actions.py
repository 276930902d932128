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
    assert "Foreach needs 'items' (or 'source')" in problem.message


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
