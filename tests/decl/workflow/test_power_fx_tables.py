"""Power Fx table functions in workflow expressions (AddColumns, DropColumns,
ShowColumns, RenameColumns, Distinct, GroupBy, Ungroup, Patch, and the row-scoped
CountIf, LookUp, Sum/Average/Min/Max, Index, FirstN, LastN), checked against the
reference's examples."""

from __future__ import annotations

from typing import Any

import pytest

from raf.decl.powerfx import FUNCTIONS, Expression, ExpressionError, Variables

ICE_CREAM = [
    {"Flavor": "Strawberry", "Price": 1.99, "Quantity": 20},
    {"Flavor": "Chocolate", "Price": 2.99, "Quantity": 45},
    {"Flavor": "Vanilla", "Price": 1.5, "Quantity": 35},
]
CITIES = [
    {"City": "London", "Country": "United Kingdom", "Population": 8615000},
    {"City": "Berlin", "Country": "Germany", "Population": 3562000},
    {"City": "Madrid", "Country": "Spain", "Population": 3165000},
    {"City": "Rome", "Country": "Italy", "Population": 2874000},
    {"City": "Paris", "Country": "France", "Population": 2273000},
    {"City": "Hamburg", "Country": "Germany", "Population": 1760000},
    {"City": "Barcelona", "Country": "Spain", "Population": 1602000},
    {"City": "Munich", "Country": "Germany", "Population": 1494000},
    {"City": "Milan", "Country": "Italy", "Population": 1344000},
]
VARS = Variables({"Local": {"IceCream": ICE_CREAM, "Cities": CITIES}})


def ev(source: str) -> Any:
    return Expression.compile(source).evaluate(VARS.get, FUNCTIONS)


def test_add_columns_evaluates_the_formula_per_row() -> None:
    got = ev('AddColumns(Local.IceCream, "Revenue", Price * Quantity)')
    assert [r["Revenue"] for r in got] == pytest.approx([39.8, 134.55, 52.5])
    assert got[0]["Flavor"] == "Strawberry" and got[0]["Quantity"] == 20
    assert ICE_CREAM[0].keys() == {"Flavor", "Price", "Quantity"}  # the source is unchanged
    two = ev("AddColumns(Local.IceCream, Double, Quantity * 2, Name, Upper(Flavor))")
    assert two[2]["Double"] == 70 and two[2]["Name"] == "VANILLA"


def test_drop_show_and_rename_columns() -> None:
    assert ev('DropColumns(Local.IceCream, "Quantity")')[1] == {
        "Flavor": "Chocolate",
        "Price": 2.99,
    }
    assert ev('ShowColumns(Local.IceCream, "Flavor")') == [
        {"Flavor": "Strawberry"},
        {"Flavor": "Chocolate"},
        {"Flavor": "Vanilla"},
    ]
    renamed = ev('RenameColumns(Local.IceCream, "Price", "Cost", Flavor, Name)')
    assert renamed[0] == {"Name": "Strawberry", "Cost": 1.99, "Quantity": 20}


def test_distinct_gives_the_different_values_in_first_seen_order() -> None:
    assert ev("Distinct(Local.Cities, Country)") == [
        "United Kingdom",
        "Germany",
        "Spain",
        "Italy",
        "France",
    ]
    assert ev("CountRows(Distinct(Local.Cities, Country))") == 5
    assert ev("Distinct([1, 2, 1, 3])") == [1, 2, 3]


def test_group_by_and_ungroup() -> None:
    groups = ev('GroupBy(Local.Cities, "Country", "Cities")')
    assert [g["Country"] for g in groups] == [
        "United Kingdom",
        "Germany",
        "Spain",
        "Italy",
        "France",
    ]
    germany = groups[1]["Cities"]
    assert [c["City"] for c in germany] == ["Berlin", "Hamburg", "Munich"]
    assert "Country" not in germany[0]
    total = ev(
        'AddColumns(GroupBy(Local.Cities, "Country", "Cities"), "Sum of City Populations", '
        "Sum(Cities, Population))"
    )
    assert total[1]["Sum of City Populations"] == 3562000 + 1760000 + 1494000
    back = ev('Ungroup(GroupBy(Local.Cities, "Country", "Cities"), "Cities")')
    assert sorted(str(r["City"]) for r in back) == sorted(str(c["City"]) for c in CITIES)
    assert next(r for r in back if r["City"] == "Rome")["Country"] == "Italy"


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ('Patch({Name: "a", Age: 3}, {Age: 4})', {"Name": "a", "Age": 4}),
        ("Patch({a: 1}, {b: 2}, {a: 3})", {"a": 3, "b": 2}),
        ("CountIf(Local.IceCream, Quantity > 30)", 2),
        ('LookUp(Local.IceCream, Flavor = "Chocolate", Quantity)', 45),
        ('LookUp(Local.IceCream, Flavor = "Mint", Quantity)', None),
        ("LookUp(Local.IceCream, Quantity > 30).Flavor", "Chocolate"),
        ("Sum(Local.IceCream, Quantity)", 100),
        ("Max(Local.IceCream, Price)", 2.99),
        ("Min(Local.IceCream, Quantity)", 20),
        ("Average(Local.IceCream, Quantity)", 100 / 3),
        ("Index(Local.IceCream, 2).Flavor", "Chocolate"),
        ("CountRows(FirstN(Local.IceCream, 2))", 2),
        ("First(LastN(Local.IceCream, 2)).Flavor", "Chocolate"),
    ],
)
def test_row_functions_give_the_reference_values(source: str, value: Any) -> None:
    assert ev(source) == value


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ('DropColumns(Local.IceCream, "Colour")', "no column 'Colour'"),
        ('RenameColumns(Local.IceCream, "Price")', "needs a table and a column name"),
        ('RenameColumns(Local.IceCream, "Price", "A", "B")', "pairs of an old and a new"),
        ('AddColumns(Local.IceCream, "Revenue")', "AddColumns needs"),
        ('GroupBy(Local.IceCream, "Shape", "Rows")', "no column 'Shape'"),
        ('Ungroup(Local.IceCream, "Flavor")', "does not hold tables"),
        ('ShowColumns("text", "Flavor")', "needs a table"),
        ("Patch({a: 1}, 2)", "expected records to merge"),
        ('Patch(Local.IceCream, {Flavor: "Mint"}, {Quantity: 1})', "only while a workflow runs"),
        ("Index(Local.IceCream, 9)", "outside the table's 3 rows"),
    ],
)
def test_bad_table_arguments_are_located_errors(source: str, says: str) -> None:
    with pytest.raises(ExpressionError, match=says) as info:
        ev(source)
    assert info.value.offset == 0


def test_add_columns_stays_within_the_cell_budget() -> None:
    with pytest.raises(ExpressionError, match="more than"):
        ev('AddColumns(Sequence(10000), "x", Sequence(10000))')
    with pytest.raises(ExpressionError, match="more than"):
        ev('Ungroup(ForAll(Sequence(200), {g: Sequence(100)}), "g")')


def test_patch_changes_a_table_held_in_a_variable() -> None:
    store = Variables({"Local": {"IceCream": [dict(r) for r in ICE_CREAM]}})
    written: list[tuple[tuple[str, ...], Any]] = []

    def assign(parts: tuple[str, ...], value: Any) -> None:
        written.append((parts, value))
        store.set(".".join(parts), value)

    changed = Expression.compile(
        'Patch(Local.IceCream, LookUp(Local.IceCream, Flavor = "Vanilla"), {Quantity: 40})'
    ).evaluate(store.get, FUNCTIONS, assign)
    assert changed == {"Flavor": "Vanilla", "Price": 1.5, "Quantity": 40}
    assert store.get("Local.IceCream")[2]["Quantity"] == 40
    added = Expression.compile(
        'Patch(Local.IceCream, Defaults(Local.IceCream), {Flavor: "Mint", Quantity: 5})'
    ).evaluate(store.get, FUNCTIONS, assign)
    assert added == {"Flavor": "Mint", "Quantity": 5}
    assert [r["Flavor"] for r in store.get("Local.IceCream")][-1] == "Mint"
    with pytest.raises(ExpressionError, match="no row of Local.IceCream matches") as info:
        Expression.compile('Patch(Local.IceCream, {Flavor: "Lemon"}, {Quantity: 1})').evaluate(
            store.get, FUNCTIONS, assign
        )
    assert info.value.offset == 0
    assert len(written) == 2


async def test_patch_in_a_running_workflow_writes_the_variable() -> None:
    from raf.decl.workflow import DeclWorkflowBuilder

    text = """
kind: Workflow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: SetVariable
      id: items
      variable: Local.items
      value: '=Table({id: 1, name: "one"}, {id: 2, name: "two"})'
    - kind: SetVariable
      id: changed
      variable: Local.changed
      value: '=Patch(Local.items, {id: 2}, {name: "TWO"})'
    - kind: SendActivity
      id: say
      activity: '=Concat(Local.items, name, ",") & " " & Local.changed.name'
"""
    workflow = DeclWorkflowBuilder().from_yaml_str(text).build()
    result = await workflow.run("")
    assert result.outputs == ["one,TWO TWO"]
