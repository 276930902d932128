"""Documents in the shapes of Microsoft Agent Framework's own declarative tests (formulas
written unquoted, the ids its reader requires, and the actions and Power Fx functions of
its test suite."""

from __future__ import annotations

import pytest

from raf.core.errors import ValidationProblems
from raf.decl.workflow import DeclWorkflowBuilder
from tests.decl.workflow.helpers import DATA, run, variables

TESTS = DATA / "maf-tests"


async def test_unquoted_formulas_are_read_as_formulas():
    _, result = await run("maf-tests/unquoted_formulas.yaml")
    assert result.outputs == ["3,4 and 7"]


def test_an_error_in_an_unquoted_formula_keeps_its_line_and_column():
    text = (TESTS / "unquoted_formulas.yaml").read_text().replace("={id: 7}", "={id: 7")
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text).build()
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (14, 14)
    assert problem.key_path == "trigger.actions[1].value"


def test_the_rest_of_the_file_stays_plain_yaml():
    # only `key: =formula` values are read tolerantly: another `: ` is still YAML's error
    text = (
        (TESTS / "unquoted_formulas.yaml")
        .read_text()
        .replace("id: show", "id: show\n      displayName: Show: rows")
    )
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text).build()
    (problem,) = caught.value.problems
    assert problem.line == 17 and problem.message.startswith("YAML syntax error")


@pytest.mark.parametrize(
    ("old", "new", "line", "path"),
    [
        ("  id: unquoted_formulas\n", "", 4, "trigger"),
        ("      id: set_record\n", "", 11, "trigger.actions[1]"),
    ],
)
def test_a_trigger_or_action_without_its_id_is_located(old, new, line, path):
    text = (TESTS / "unquoted_formulas.yaml").read_text().replace(old, new)
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text).build()
    (problem,) = caught.value.problems
    assert (problem.line, problem.key_path) == (line, path)
    assert "needs an 'id'" in problem.message


async def test_raf_spelling_and_nested_actions_may_go_without_ids():
    text = (
        "kind: workflow\nname: mine\ntrigger:\n  kind: OnConversationStart\n  actions:\n"
        "    - {kind: SendActivity, activity: hi}\n"
    )
    result = await DeclWorkflowBuilder().from_yaml_str(text).build().run("")
    assert result.outputs == ["hi"]


async def test_behaviour_functions_write_the_variables_they_name():
    workflow, _ = await run("maf-tests/behaviour_functions.yaml")
    local = variables(workflow)["Local"]
    assert (local["total"], local["count"]) == (10, 11)
    assert local["after_collect"] == 4
    assert local["after_remove"] == [{"id": 1}, {"id": 3}]
    assert local["patched"] == {"id": 3, "name": "three"}
    assert local["types"] == [True, True, False]
    assert local["record"] == "three"
    assert local["items"] == [] and local["cleared"] is None


@pytest.mark.parametrize(
    ("formula", "says"),
    [
        ("=Remove(Local.items, {id: 9})", "Remove: no row of Local.items is {'id': 9}"),
        ("=AsType(Local.items, Record)", "AsType: the value is a list, not Record"),
        ('=Set("x", 1)', "Set writes a variable: give it as Scope.name"),
        ("=Collect(Local.total, {id: 1})", "Collect: Local.total holds a number, not a table"),
    ],
)
async def test_a_behaviour_function_used_wrongly_names_the_action(formula, says):
    from raf.workflow.errors import WorkflowRunError

    text = (TESTS / "behaviour_functions.yaml").read_text()
    text = text.replace("=Clear(Local.items)", formula)
    with pytest.raises(WorkflowRunError) as caught:
        await DeclWorkflowBuilder().from_yaml_str(text).build().run("")
    assert says in str(caught.value) and "clear" in str(caught.value)


def test_an_unknown_type_name_is_located():
    text = (TESTS / "behaviour_functions.yaml").read_text().replace("Table)", "Tabel)")
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text).build()
    (problem,) = caught.value.problems
    assert problem.line == 26 and "unknown type 'Tabel'" in problem.message


async def _answer(workflow, paused, answer):
    (request,) = paused.requests
    return await workflow.run(
        checkpoint_id=paused.checkpoint_id, responses={request.request_id: answer}
    )


@pytest.mark.parametrize(
    ("answers", "age", "asked_again"),
    [(["42 years old"], 42, 0), (["old enough", "42"], 42, 1), (["old", "older"], 30, 1)],
)
async def test_a_question_asks_again_on_a_bad_answer_then_takes_its_default(
    answers, age, asked_again
):
    from raf.workflow import InMemoryCheckpointStore

    workflow = (
        DeclWorkflowBuilder()
        .from_file(TESTS / "question_entities.yaml")
        .with_checkpoint_store(InMemoryCheckpointStore())
        .build()
    )
    result = await workflow.run("")
    prompts = [result.requests[0].data]
    for answer in answers:
        result = await _answer(workflow, result, answer)
        prompts += [r.data for r in result.requests]
    outputs = result.outputs  # every output of the run so far
    assert variables(workflow)["Local"]["age"] == age
    assert prompts == ["How old are you?"] + ["Please say your age in years."] * asked_again
    # autoSend: true sends each question to the user as a message of the run
    said = ["How old are you?", *prompts[1:]]
    if age == 30:
        said.append("I will take 30.")
    assert outputs == [*said, f"Age {age}"]


@pytest.mark.parametrize(
    ("entity", "answer", "kept"),
    [
        ("NumberPrebuiltEntity", "-12.5", -12.5),
        ("BooleanPrebuiltEntity", "y", True),
        ("DatePrebuiltEntity", "2026-03-01", "2026-03-01"),
        ("DateTimePrebuiltEntity", "2026-03-01T10:30:00", "2026-03-01T10:30:00"),
        ("EmailPrebuiltEntity", "ada@example.com", "ada@example.com"),
        ("URLPrebuiltEntity", "https://example.com/a", "https://example.com/a"),
        ("MoneyPrebuiltEntity", "$1,250.50", 1250.5),
        ("AgePrebuiltEntity", "7 yrs", 7),
        ("StringPrebuiltEntity", "42", "42"),
        ({"kind": "NumberPrebuiltEntity"}, "8", 8),
    ],
)
async def test_each_prebuilt_entity_reads_its_answer(entity, answer, kept):
    import json

    doc = (
        "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"
        "    - kind: Question\n      id: ask\n      variable: Local.v\n      prompt: Value?\n"
        f"      entity: {json.dumps(entity)}\n      repeatCount: 0\n"
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).build()
    await _answer(workflow, await workflow.run(""), answer)
    assert variables(workflow)["Local"]["v"] == kept


@pytest.mark.parametrize(
    ("entity", "answer"),
    [
        ("EmailPrebuiltEntity", "not an address"),
        ("URLPrebuiltEntity", "example.com"),
        ("DatePrebuiltEntity", "someday"),
        ("MoneyPrebuiltEntity", "a lot"),
        ("BooleanPrebuiltEntity", "perhaps"),
    ],
)
async def test_an_answer_an_entity_cannot_read_leaves_it_blank_without_a_default(entity, answer):
    doc = (
        "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  id: t\n  actions:\n"
        "    - kind: Question\n      id: ask\n      variable: Local.v\n      prompt: Value?\n"
        f"      entity: {entity}\n      repeatCount: 0\n"
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(doc).build()
    result = await _answer(workflow, await workflow.run(""), answer)
    assert not result.requests
    assert variables(workflow)["Local"]["v"] is None


async def test_auto_send_false_keeps_the_question_out_of_the_conversation():
    text = (
        (TESTS / "question_entities.yaml").read_text().replace("autoSend: true", "autoSend: false")
    )
    workflow = DeclWorkflowBuilder().from_yaml_str(text).build()
    result = await workflow.run("")
    assert result.outputs == [] and result.requests[0].data == "How old are you?"
    result = await _answer(workflow, result, "51")
    assert result.outputs == ["Age 51"]


async def test_edit_table_and_edit_table_v2_add_remove_and_clear_rows():
    workflow, _ = await run("maf-tests/edit_tables.yaml")
    local = variables(workflow)["Local"]
    assert local["before_clear"] == [{"id": 2}, {"id": 4}]
    assert local["items"] == []


async def test_the_original_graph_json_file_runs_without_a_kind():
    from raf.decl.workflow import is_workflow_file
    from raf.testing import ScriptedChatClient

    path = DATA / "original_graph.json"
    assert is_workflow_file(path)
    model = ScriptedChatClient(["HI THERE!"])
    workflow = (
        DeclWorkflowBuilder()
        .from_file(path)
        .with_function(lambda text: text.strip(), name="strip")
        .with_chat_client(model)
        .build()
    )
    result = await workflow.run("  hi there ")
    assert result.outputs == ["HI THERE!"]
    assert model.requests[0].messages[-1].text == "HI THERE!"  # the script node's value


@pytest.mark.parametrize("to", ["raf", "maf", "original"])
async def test_convert_writes_a_workflow_with_its_formulas_quoted(tmp_path, to):
    from raf.cli.main import main

    out = tmp_path / "flow.yaml"
    assert main(["convert", str(TESTS / "unquoted_formulas.yaml"), "--to", to, "-o", str(out)]) == 0
    written = out.read_text()
    assert "value: '=[{id: 3}, {id: 4}]'" in written
    _, result = await run(str(out))
    assert result.outputs == ["3,4 and 7"]


def test_convert_refuses_a_workflow_that_does_not_validate(tmp_path, capsys):
    from raf.cli.main import main

    bad = tmp_path / "bad.yaml"
    bad.write_text((TESTS / "unquoted_formulas.yaml").read_text().replace("      id: show\n", ""))
    assert main(["convert", str(bad), "--to", "raf"]) == 1
    assert f"{bad}:15:7 trigger.actions[2]: SendActivity needs an 'id'" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["11", "-1", "two", "true"])
def test_a_repeat_count_the_runtime_cannot_use_is_located(count):
    text = (TESTS / "question_entities.yaml").read_text()
    text = text.replace("repeatCount: 1", f"repeatCount: {count}")
    with pytest.raises(ValidationProblems) as caught:
        DeclWorkflowBuilder().from_yaml_str(text)
    (problem,) = caught.value.problems
    assert (problem.line, problem.key_path) == (15, "trigger.actions[0].repeatCount")
    assert "repeatCount is a whole number from 0 to 10" in problem.message


async def test_add_message_in_the_net_shape_keeps_the_record_in_message():
    # `role: User` as .NET writes it; `content` items are the text; `message` the variable
    workflow, result = await run("quiet/AddConversationMessage.yaml", "a note to keep")
    added = variables(workflow)["Local"]["Added"]
    assert (added["Role"], added["Text"]) == ("user", "a note to keep")
    assert result.outputs == []


async def test_a_message_added_in_the_net_shape_is_found_again_by_its_id():
    workflow, _ = await run("quiet/RetrieveConversationMessage.yaml")
    local = variables(workflow)["Local"]
    assert local["NoteCopy"]["Text"] == "a note" and local["NoteCopy"]["Id"] == local["Note"]["Id"]
