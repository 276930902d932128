"""Bad workflow documents: each problem located (file, line, column, key path) with a
suggestion where one fits, found at validate time; what only a run can know fails the
run clearly and leaves its last checkpoint usable."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core.errors import Problem, ValidationProblems
from raf.decl.workflow import DeclWorkflowBuilder, Limits, load_workflow_file
from raf.workflow import InMemoryCheckpointStore, WorkflowRunError

HEAD = "kind: workflow\nname: bad\ntrigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"


def problems(tmp_path: Path, actions: str, head: str = HEAD) -> list[Problem]:
    path = tmp_path / "flow.yaml"
    path.write_text(head + actions, encoding="utf-8")
    with pytest.raises(ValidationProblems) as info:
        load_workflow_file(path)
    for problem in info.value.problems:
        assert problem.file == str(path)
    return info.value.problems


def test_unknown_goto_target_is_located_with_a_suggestion(tmp_path: Path) -> None:
    (found,) = problems(
        tmp_path,
        "    - {kind: SendActivity, id: greet, activity: hi}\n"
        "    - kind: GotoAction\n"
        "      id: back\n"
        "      actionId: greeet\n",
    )
    assert (found.line, found.column) == (10, 17)
    assert found.key_path == "trigger.actions[1].actionId"
    assert "target 'greeet' is no action id (did you mean 'greet'?)" in found.message


def test_expression_that_does_not_parse_is_located(tmp_path: Path) -> None:
    (found,) = problems(
        tmp_path,
        "    - kind: SetVariable\n      variable: Local.x\n      value: =Concat(Local.a, \n",
    )
    assert (found.line, found.column) == (9, 14)
    assert found.key_path == "trigger.actions[0].value"
    assert "does not parse" in found.message and "the end" in found.message


def test_unknown_action_kind_suggests_the_right_one(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, "    - kind: SendActivty\n      activity: hi\n")
    assert found.key_path == "trigger.actions[0].kind"
    assert "did you mean 'SendActivity'?" in found.message
    assert found.line == 7


def test_unknown_key_function_and_scope_are_all_reported_at_once(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "    - kind: SetVariable\n      variabel: Local.x\n      value: =Concatt(Locl.a)\n",
    )
    messages = " | ".join(p.message for p in found)
    assert "no key 'variabel' (did you mean 'variable'?)" in messages
    assert "needs 'variable'" in messages
    assert "unknown variable scope 'Locl'" in messages and "'Local'" in messages


def test_unknown_function_suggests_one(tmp_path: Path) -> None:
    (found,) = problems(tmp_path, '    - kind: SendActivity\n      activity: =Concatt("a")\n')
    assert "unknown function 'Concatt'" in found.message
    assert "did you mean 'concat'?" in found.message


def test_foreach_over_a_non_list_is_known_at_validate_time(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "    - kind: Foreach\n"
        '      items: ="abc"\n'
        "      actions: []\n"
        "    - kind: Foreach\n"
        "      items: 12\n"
        "      actions: []\n",
    )
    assert [p.key_path for p in found] == [
        "trigger.actions[0].items",
        "trigger.actions[1].items",
    ]
    assert all("must be a list" in p.message for p in found)


def test_loop_controls_outside_a_loop_and_bad_targets(tmp_path: Path) -> None:
    actions = (
        "    - kind: BreakLoop\n      id: b\n"
        "    - kind: SetVariable\n"
        "      id: s\n"
        "      variable: System.Thing\n"
        "      value: 1\n"
    )
    maf = "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"
    messages = [p.message for p in problems(tmp_path, actions, head=maf)]
    assert "BreakLoop is only allowed inside a Foreach" in messages[0]
    assert "cannot set 'System.Thing'" in messages[1]
    # kind: workflow is also the original framework's, which ignores a BreakLoop outside a
    # loop: raf warns and drops it
    (found,) = problems(tmp_path, actions)
    assert "cannot set 'System.Thing'" in found.message
    (tmp_path / "flow.yaml").write_text(HEAD + actions.replace("System.", "Local."), "utf-8")
    (warning,) = load_workflow_file(tmp_path / "flow.yaml").warnings
    assert "BreakLoop outside a Foreach does nothing" in warning.message
    assert (warning.key_path, warning.line) == ("trigger.actions[0]", 7)


def test_unknown_top_level_key_and_trigger_kind(tmp_path: Path) -> None:
    head = (
        "kind: workflow\nname: bad\ntriger: {}\ntrigger:\n  kind: OnConversationStrat\n  actions:\n"
    )
    found = problems(tmp_path, "    - {kind: EndWorkflow}\n", head=head)
    assert "'triger' is not allowed here (did you mean 'trigger'?)" in found[0].message
    # the original framework starts a workflow whatever its trigger's kind: a warning
    head = head.replace("triger: {}\n", "")
    (tmp_path / "flow.yaml").write_text(head + "    - {kind: EndWorkflow}\n", encoding="utf-8")
    (warning,) = load_workflow_file(tmp_path / "flow.yaml").warnings
    assert "did you mean 'OnConversationStart'?" in warning.message
    assert (warning.key_path, warning.line) == ("trigger.kind", 4)


def test_agent_nobody_provides_is_a_build_error(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        HEAD + "    - kind: InvokeAgent\n      agent: {name: writter}\n", encoding="utf-8"
    )
    builder = DeclWorkflowBuilder().from_file(path).with_agent("writer", object())
    with pytest.raises(ValidationProblems) as info:
        builder.build()
    (found,) = info.value.problems
    assert found.key_path == "trigger.actions[0].agent"
    assert "no agent 'writter' (did you mean 'writer'?)" in found.message


def test_graph_json_problems_are_located(tmp_path: Path) -> None:
    path = tmp_path / "graph.json"
    path.write_text(
        '{"start_node_id": "a",\n "nodes": [{"id": "a", "type": "agent", "agent": "w"}],\n'
        ' "edges": [{"type": "fan-out", "source": "a", "targets": ["b"]}]}\n',
        encoding="utf-8",
    )
    with pytest.raises(ValidationProblems) as info:
        DeclWorkflowBuilder().from_file(path).build()
    found = info.value.problems
    assert found[0].line == 3
    assert "unknown edge type 'fan-out' (did you mean 'fan_out'?)" in found[0].message
    # the agent is a warning when loading (a program may still give it with with_agent)
    assert any("no agent 'w'" in p.message for p in getattr(info.value, "warnings", []))


async def test_foreach_over_a_non_list_at_run_time_keeps_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        HEAD + "    - kind: Question\n      variable: Local.items\n      question: {text: items?}\n"
        "    - kind: Foreach\n      items: =Local.items\n      actions:\n"
        "        - {kind: SendActivity, activity: '{Local.item}'}\n",
        encoding="utf-8",
    )
    store = InMemoryCheckpointStore()
    workflow = DeclWorkflowBuilder().from_file(path).with_checkpoint_store(store).build()
    paused = await workflow.run("")
    request = paused.requests[0].request_id
    with pytest.raises(WorkflowRunError) as info:
        await workflow.run(checkpoint_id=paused.checkpoint_id, responses={request: "not a list"})
    message = str(info.value)
    assert "Foreach items must be a list, got text" in message
    assert "trigger.actions[1]" in message
    assert info.value.checkpoint_id == paused.checkpoint_id
    again = await workflow.run(checkpoint_id=paused.checkpoint_id, responses={request: ""})
    assert again.status == "completed"


async def test_endless_goto_stops_at_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        HEAD + "    - {kind: SendActivity, id: top, activity: tick}\n"
        "    - {kind: GotoAction, id: spin, actionId: top, maxIterations: 5}\n",
        encoding="utf-8",
    )
    workflow = DeclWorkflowBuilder().from_file(path).build()
    with pytest.raises(WorkflowRunError, match="jumped to 'top' more than 5 times"):
        await workflow.run("")


async def test_step_cap_bounds_every_run(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        HEAD + "    - kind: Foreach\n      items: =Sequence(50)\n      actions:\n"
        "        - {kind: SetVariable, variable: Local.x, value: =Local.item}\n",
        encoding="utf-8",
    )
    workflow = DeclWorkflowBuilder().from_file(path).with_limits(Limits(max_steps=40)).build()
    with pytest.raises(WorkflowRunError, match="ran more than 40 actions"):
        await workflow.run("")
    limited = DeclWorkflowBuilder().from_file(path).with_limits(Limits(max_loop_items=10)).build()
    with pytest.raises(WorkflowRunError, match="Foreach over 50 items; the limit is 10"):
        await limited.run("")


def test_an_agent_the_document_does_not_declare_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        HEAD.replace("trigger:", "agents:\n  writer: {instructions: Write.}\ntrigger:")
        + "    - {kind: InvokeAgent, agent: writr}\n",
        encoding="utf-8",
    )
    loaded = load_workflow_file(path)
    (warning,) = loaded.warnings
    assert warning.line == 9
    assert "no agent 'writr' (did you mean 'writer'?)" in warning.message
