"""Validation reports every problem of a document, whatever else is wrong beside it: a
document with eight planted mistakes reports each of them, in any combination, in line
order; a workflow keeps its warnings when an action has an error, and unknown keys inside
an action's nested mappings are reported."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml

from raf.decl.check_file import check_file
from raf.decl.workflow.program import NESTED_KEYS

BASE = """\
kind: prompt
name: planted
description: a document with mistakes planted in it
instructions: Answer briefly.
model:
  id: gpt-4o
  provider: openai
  connection:
    apiKey: sk-test
  options:
    temperature: 0.5
    topP: 0.5
maxToolRounds: 5
tools:
  - kind: file
    name: read_file
  - kind: web
    name: web_search
compression:
  kind: sliding_window
  keepLast: 5
"""

MISTAKES: dict[str, tuple[str, str]] = {
    "descripton": ("description: a document", "descripton: a document"),
    "opanai": ("provider: openai", "provider: opanai"),
    "temperatur": ("temperature: 0.5", "temperatur: 0.5"),
    "topP": ("topP: 0.5", "topP: 5"),
    "maxToolRounds": ("maxToolRounds: 5", "maxToolRounds: -1"),
    "read_fil": ("name: read_file", "name: read_fil"),
    "webb": ("kind: web\n", "kind: webb\n"),
    "sliding_windw": ("kind: sliding_window", "kind: sliding_windw"),
}
"""Each planted mistake: the token its problem names, and the good text it replaces."""


def planted(chosen: tuple[str, ...]) -> str:
    text = BASE
    for name in chosen:
        good, bad = MISTAKES[name]
        assert text.count(good) == 1
        text = text.replace(good, bad)
    return text


def names(problem: object) -> str:
    return f"{getattr(problem, 'key_path', '')} {getattr(problem, 'message', '')}"


def test_the_document_without_mistakes_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "planted.yaml"
    path.write_text(BASE, encoding="utf-8")
    checked = check_file(path, check_extras=False)
    assert checked.problems == []


@pytest.mark.parametrize(
    "chosen",
    [c for n in range(1, len(MISTAKES) + 1) for c in itertools.combinations(MISTAKES, n)],
    ids=lambda c: "+".join(c),
)
def test_every_planted_mistake_is_reported(tmp_path: Path, chosen: tuple[str, ...]) -> None:
    path = tmp_path / "planted.yaml"
    path.write_text(planted(chosen), encoding="utf-8")
    checked = check_file(path, check_extras=False)
    problems = checked.problems
    for name in chosen:
        hits = [p for p in problems if name in names(p)]
        assert len(hits) == 1, (name, [str(p) for p in problems])
        assert hits[0].line is not None
    assert len(problems) == len(chosen), [str(p) for p in problems]
    lines = [p.line or 0 for p in problems]
    assert lines == sorted(lines)


def test_a_workflow_keeps_its_warnings_beside_an_error(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        """\
kind: workflow
name: flow
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: InvokeAzureAgent
      id: ask
      agent:
        name: ghost
      input:
        messagez: =System.LastMessage
    - kind: SetVariable
      id: keep
      variable: Local.x
      valu: 3
""",
        encoding="utf-8",
    )
    checked = check_file(path, check_extras=False)
    errors = [(p.key_path, p.line) for p in checked.problems]
    assert ("trigger.actions[0].input.messagez", 12) in errors
    assert ("trigger.actions[1].valu", 16) in errors
    ghost = [w for w in checked.warnings if "'ghost'" in w.message]
    assert ghost and "declare it under agents:" in ghost[0].message
    assert ghost[0].key_path == "trigger.actions[0].agent"


@pytest.mark.parametrize(
    ("nested", "where"),
    [
        ("agent:\n        name: helper\n        nam: x", "agent.nam"),
        ("input:\n        externalLoop:\n          whn: =true", "input.externalLoop.whn"),
        ("output:\n        responze: Local.a", "output.responze"),
    ],
)
def test_unknown_keys_inside_an_actions_mappings(tmp_path: Path, nested: str, where: str) -> None:
    path = tmp_path / "flow.yaml"
    body = nested if nested.startswith("agent") else f"agent:\n        name: helper\n      {nested}"
    path.write_text(
        f"""\
kind: workflow
name: flow
agents:
  helper:
    instructions: Help.
    model: {{id: gpt-4o, provider: openai, connection: {{apiKey: sk-test}}}}
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: InvokeAzureAgent
      id: ask
      {body}
""",
        encoding="utf-8",
    )
    checked = check_file(path, check_extras=False)
    paths = [p.key_path for p in checked.problems]
    assert f"trigger.actions[0].{where}" in paths, [str(p) for p in checked.problems]


def _planted(kind: str, inner: tuple[str, ...], allowed: tuple[str, ...]) -> dict[str, object]:
    """An action of `kind` whose mapping at `inner` holds a known key and `zzz`."""
    from raf.decl.workflow.program import _SPECS

    action: dict[str, object] = {"kind": kind, "id": "act"}
    for key in _SPECS[kind][0]:
        action[key] = "Local.x"
    mapping: dict[str, object] = {allowed[0]: "Local.y", "zzz": 1}
    for part in reversed(inner[1:]):
        mapping = {part: mapping}
    action[inner[0]] = mapping
    return action


@pytest.mark.parametrize(
    ("kind", "inner"),
    [(owner, tuple(inner)) for owner, *inner in NESTED_KEYS],
    ids=lambda value: value if isinstance(value, str) else ".".join(value),
)
def test_every_actions_nested_mappings_report_unknown_keys(
    tmp_path: Path, kind: str, inner: tuple[str, ...]
) -> None:
    """Each mapping of known keys inside each action (an agent's input, a tool's output, a
    question's entity, a text record, a table change, ...) reports a key it does not hold,
    at its place."""
    allowed = NESTED_KEYS[(kind, *inner)]
    document = {
        "kind": "Workflow",
        "trigger": {
            "kind": "OnConversationStart",
            "id": "start",
            "actions": [_planted(kind, inner, allowed)],
        },
    }
    path = tmp_path / "flow.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    checked = check_file(path, check_extras=False)
    where = f"trigger.actions[0].{'.'.join(inner)}.zzz"
    found = [p for p in checked.problems if p.key_path == where]
    assert found, [str(p) for p in checked.problems]
    assert found[0].line is not None and "has no key 'zzz'" in found[0].message
    assert not [p for p in checked.problems if p.key_path == where.replace("zzz", allowed[0])]


@pytest.mark.parametrize(
    ("action", "where"),
    [
        (
            "kind: Question\n      variable: Local.age\n      entity: {kind: Number, knd: x}",
            "entity",
        ),
        (
            "kind: InvokeFunctionTool\n      functionName: f\n      output: {reslt: Local.r}",
            "output",
        ),
        ("kind: SendActivity\n      activity: {text: hi, txt: hi}", "activity"),
        (
            "kind: EditTableV2\n      itemsVariable: Local.t\n"
            "      changeType: {kind: AddItem, vlue: 1}",
            "changeType",
        ),
        (
            "kind: AddConversationMessage\n      conversationId: c\n"
            "      message: {role: user, body: hi}",
            "message",
        ),
    ],
)
def test_unknown_keys_beyond_an_agents_mappings(tmp_path: Path, action: str, where: str) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  id: start\n  actions:\n"
        f"    - id: act\n      {action}\n",
        encoding="utf-8",
    )
    checked = check_file(path, check_extras=False)
    [problem] = [
        p for p in checked.problems if (p.key_path or "").startswith(f"trigger.actions[0].{where}.")
    ]
    assert problem.line == 7 + action.count("\n") and "has no key" in problem.message
