"""Documents in the shapes of Microsoft Agent Framework's own declarative tests: formulas
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
