"""raf reads every field of the original framework's documents as the table
`original_fields.toml` says: each key of the documents in `original/` (written in the
original's shapes) has a row; each row's key is in a document; the documents validate,
warn where a row says raf warns, and the `refused/` ones are refused with a located error.
A field the original adds is a document key without a row, and fails here."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from raf.decl.check_file import CheckedFile, check_file

HERE = Path(__file__).parent
TABLE: list[dict[str, Any]] = tomllib.loads(
    (HERE / "original_fields.toml").read_text(encoding="utf-8")
)["field"]
DOCUMENTS = sorted(
    p for p in (HERE / "original").iterdir() if p.suffix in (".json", ".yaml") and p.is_file()
)
REFUSED = HERE / "original" / "refused"


def raw(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


def doc_of(path: Path) -> str:
    data = raw(path)
    if data.get("kind") == "workflow" and "trigger" in data:
        return "workflow"
    if "nodes" in data:
        return "graph"
    if isinstance(data.get("template"), dict) and "parameters" in data:
        return "manifest"  # the original reads a manifest where these two stand
    return "legacy" if path.suffix == ".json" else "prompt"


_ACTION_LISTS = ("actions", "then", "else", "else_actions")
"""The keys of a workflow's trigger and actions that hold actions."""


def keys(value: Any, path: str = "", *, workflow: bool = False) -> list[tuple[str, Any]]:
    """Every key path of a document with its value (list items as []). In a workflow an
    action's keys are written from the action, `Kind.key`, its kind as `action.kind`."""
    out: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, inner in value.items():
            here = f"{path}.{key}" if path else str(key)
            out.append((here, inner))
            out += keys(inner, here, workflow=workflow)
    elif isinstance(value, list):
        in_actions = workflow and path.rsplit(".", 1)[-1] in _ACTION_LISTS
        for inner in value:
            if in_actions and isinstance(inner, dict) and isinstance(inner.get("kind"), str):
                out.append(("action.kind", inner["kind"]))
                fields = {k: v for k, v in inner.items() if k != "kind"}
                out += keys(fields, inner["kind"], workflow=workflow)
            else:
                out += keys(inner, f"{path}[]", workflow=workflow)
    return out


def doc_keys(path: Path) -> list[tuple[str, Any]]:
    return keys(raw(path), workflow=doc_of(path) == "workflow")


def rows(doc: str) -> list[dict[str, Any]]:
    return [row for row in TABLE if row["doc"] == doc]


def covered(doc: str, path: str) -> bool:
    for row in rows(doc):
        if row["path"] == path:
            return True
        if row.get("free") and path.startswith((row["path"] + ".", row["path"] + "[]")):
            return True
    return False


_CHECKED: dict[Path, CheckedFile] = {}


def checked(path: Path) -> CheckedFile:
    if path not in _CHECKED:
        _CHECKED[path] = check_file(path, check_extras=False)
    return _CHECKED[path]


def test_the_table_is_well_formed() -> None:
    allowed = {"field", "doc", "path", "value", "raf", "note", "warning", "free", "fixture"}
    allowed |= {"located", "in_mode"}
    for row in TABLE:
        assert set(row) <= allowed, row
        assert row["doc"] in ("legacy", "graph", "prompt", "manifest", "workflow", "refused"), row
        assert row["raf"] in ("reads", "warns", "refuses"), row
        assert row["note"], row
        assert (row["raf"] == "warns") == ("warning" in row), row
        assert (row["raf"] == "refuses") == (row["doc"] == "refused"), row


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_key_of_the_originals_documents_has_a_row(path: Path) -> None:
    doc = doc_of(path)
    missing = [key for key, _ in doc_keys(path) if not covered(doc, key)]
    assert not missing, f"no row in original_fields.toml for {doc} keys {missing}"
    tagged = {(row["path"], row["value"]) for row in rows(doc) if "value" in row}
    variants = {key for key, _ in tagged}
    for key, value in doc_keys(path):
        if key in variants and isinstance(value, str):
            assert (key, value) in tagged, f"no row for {doc} {key} = {value!r}"
    if doc == "prompt" and isinstance(raw(path).get("metadata", {}).get("orchestration"), str):
        value = raw(path)["metadata"]["orchestration"]
        assert ("metadata.orchestration", value) in tagged


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_the_originals_documents_validate(path: Path) -> None:
    result = checked(path)
    assert result.problems == [], [str(p) for p in result.problems]


def holds(path: Path, row: dict[str, Any]) -> bool:
    """Whether the document at `path` writes the row's key (with the row's value)."""
    data = raw(path)
    if "fixture" in row and path.name != row["fixture"]:
        return False
    if "in_mode" in row and _mode(data) != row["in_mode"]:
        return False
    if row["path"] == "metadata.orchestration" and "value" in row:
        return bool(data.get("metadata", {}).get("orchestration") == row["value"])
    return any(
        key == row["path"] and ("value" not in row or value == row["value"])
        for key, value in doc_keys(path)
    )


def _mode(data: Any) -> str | None:
    """The orchestration mode a document writes (its mapping's mode, or the mode string)."""
    value = (data.get("metadata") or {}).get("orchestration")
    mode = value.get("mode") if isinstance(value, dict) else value
    return mode.lower() if isinstance(mode, str) else None


@pytest.mark.parametrize(
    "row",
    [row for row in TABLE if row["doc"] != "refused"],
    ids=lambda row: f"{row['doc']}:{row['path']}" + (f"={row['value']}" if "value" in row else ""),
)
def test_each_row_is_honoured(row: dict[str, Any]) -> None:
    holding = [p for p in DOCUMENTS if doc_of(p) == row["doc"] and holds(p, row)]
    assert holding, f"no document in original/ holds {row['path']}"
    for path in holding:
        result = checked(path)
        assert result.problems == [], [str(p) for p in result.problems]
        if row["raf"] == "warns":
            messages = [w.message for w in result.warnings]
            assert any(row["warning"] in m for m in messages), (path.name, messages)


@pytest.mark.parametrize(
    "row", [row for row in TABLE if row["doc"] == "refused"], ids=lambda row: row["fixture"]
)
def test_refused_documents_get_a_located_error(row: dict[str, Any]) -> None:
    path = REFUSED / row["fixture"]
    result = check_file(path, check_extras=False)
    assert result.problems, f"{path.name} was not refused"
    for problem in result.problems:
        assert problem.line is not None and problem.file == str(path), str(problem)
    where = row.get("located", row["path"].replace("[]", "[0]"))
    assert any(
        (p.key_path or "").startswith(where) or (not p.key_path and where in p.message)
        for p in result.problems
    ), [str(p) for p in result.problems]


def test_every_refused_document_has_a_row() -> None:
    named = {row.get("fixture") for row in TABLE}
    assert {p.name for p in REFUSED.iterdir() if p.suffix in (".json", ".yaml")} <= named
