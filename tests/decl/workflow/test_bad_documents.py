"""Documents in the shapes of the refused (`Bad*`) test documents of Microsoft Agent
Framework's declarative workflows: a list instead of a document, a trigger without its id,
and a dialog kind that is no workflow. Each is refused with an error at its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.decl.check_file import check_file

BAD = {
    "list.yaml": ("# nothing but items\n- id: 1\n- id: 2\n", 1, None, "must be a mapping"),
    "no_trigger_id.yaml": (
        "kind: Workflow\ntrigger:\n\n  kind: OnConversationStart\n  actions:\n"
        "    - kind: EndConversation\n      id: done\n",
        4,
        "trigger",
        "needs an 'id'",
    ),
    "dialog_kind.yaml": (
        "kind: TaskDialog\nbeginDialog:\n  kind: OnActivity\n  id: flow\n  actions:\n"
        "    - kind: EndConversation\n      id: done\n",
        1,
        "kind",
        "'TaskDialog' is not allowed here",
    ),
}


@pytest.mark.parametrize("name", BAD)
def test_a_refused_shape_is_located(tmp_path: Path, name: str) -> None:
    text, line, key_path, says = BAD[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    checked = check_file(path, check_extras=False)
    assert checked.problems, f"{name} was accepted"
    assert all(p.file == str(path) and p.line is not None for p in checked.problems)
    matching = [p for p in checked.problems if says in p.message]
    assert matching, [str(p) for p in checked.problems]
    assert matching[0].key_path == key_path
    assert matching[0].line == line
