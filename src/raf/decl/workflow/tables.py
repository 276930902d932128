"""EditTable and EditTableV2: change a table variable in place, in the shapes both of
Microsoft's engines read.

    - kind: EditTableV2            # .NET shape
      itemsVariable: Local.items
      changeType: {kind: AddItemOperation, value: "={id: 7}"}
    - kind: EditTableV2            # Python shape
      table: Local.records
      operation: addOrUpdate
      key: id
      item: =Local.record
"""

from __future__ import annotations

from typing import Any

from raf.decl.powerfx.values import MAX_ROWS, equal
from raf.decl.workflow.program import Step
from raf.decl.workflow.runtime import Runtime

_DOTNET = {
    "additemoperation": "add",
    "removeitemoperation": "remove",
    "clearitemsoperation": "clear",
    "takefirstitemoperation": "takefirst",
    "takelastitemoperation": "takelast",
    "add": "add",
    "remove": "remove",
    "delete": "remove",
    "clear": "clear",
}


def _target(step: Step) -> str:
    fields = step.fields
    return str(fields.get("itemsVariable", fields.get("table", "")))


async def edit_table(rt: Runtime, step: Step) -> None:
    fields = step.fields
    path = _target(step)
    if not path:
        raise rt.fail(f"{step.kind} needs the table variable (itemsVariable or table)")
    current = await rt.value("=" + path) if path else None
    table: list[Any] = list(current) if isinstance(current, list) else []
    change = fields.get("changeType")
    if isinstance(change, dict):
        operation = _DOTNET.get(str(change.get("kind", "")).lower())
        value_raw = change.get("value")
        result = change.get("resultVariable")
    else:
        raw = change if isinstance(change, str) else fields.get("operation", "add")
        operation = _DOTNET.get(str(raw).lower(), str(raw).lower())
        value_raw = fields.get("item", fields.get("value", fields.get("row")))
        result = fields.get("resultVariable")
    if operation is None:
        raise rt.fail(f"unknown table change {change!r}")
    value = await rt.value(value_raw) if value_raw is not None else None
    table = await _apply(rt, step, operation, table, value, result)
    if len(table) > MAX_ROWS:
        raise rt.fail(f"the table would have more than {MAX_ROWS} rows")
    rt.set(path, table)


async def _apply(
    rt: Runtime, step: Step, operation: str, table: list[Any], value: Any, result: Any
) -> list[Any]:
    fields = step.fields
    if operation == "add":
        return [*table, *(value if isinstance(value, list) else [value])]
    if operation == "clear":
        return []
    if operation == "remove":
        key = fields.get("key")
        gone = value if isinstance(value, list) else [value]
        if key is not None:
            names = {v.get(key) if isinstance(v, dict) else v for v in gone}
            return [r for r in table if not (isinstance(r, dict) and r.get(key) in names)]
        return [r for r in table if not any(equal(r, g) for g in gone)]
    if operation in ("takefirst", "takelast"):
        if not table:
            if result is not None:
                rt.set(result, None)
            return table
        taken = table[0] if operation == "takefirst" else table[-1]
        if result is not None:
            rt.set(result, taken)
        return table[1:] if operation == "takefirst" else table[:-1]
    if operation in ("insert", "set"):
        index = int(await rt.value(fields.get("index", 0)))
        if operation == "insert":
            return [*table[:index], value, *table[index:]]
        if not 0 <= index < len(table):
            raise rt.fail(f"row {index} is outside the table's {len(table)} rows")
        return [*table[:index], value, *table[index + 1 :]]
    if operation == "update":
        key = fields.get("key")
        if "index" in fields:
            return await _apply(rt, step, "set", table, value, result)
        if key is None or not isinstance(value, dict):
            raise rt.fail("update needs an index, or a key and a record row")
        for i, row in enumerate(table):
            if isinstance(row, dict) and row.get(key) == value.get(key):
                return [*table[:i], {**row, **value}, *table[i + 1 :]]
        raise rt.fail(f"no row has {key} = {value.get(key)!r} to update")
    if operation == "addorupdate":
        key = fields.get("key")
        if key is None or not isinstance(value, dict):
            raise rt.fail("addOrUpdate needs a key and a record item")
        for i, row in enumerate(table):
            if isinstance(row, dict) and row.get(key) == value.get(key):
                return [*table[:i], {**row, **value}, *table[i + 1 :]]
        return [*table, value]
    if operation == "filter":
        condition = fields.get("condition")
        if not isinstance(condition, str):
            raise rt.fail("filter needs a condition expression")
        body = condition[1:] if condition.startswith("=") else condition
        kept = await rt.value(f"=Filter({_target(step)}, {body})")
        return list(kept) if isinstance(kept, list) else table
    raise rt.fail(f"unknown table operation {operation!r}")
