"""Decision records are indexed, each has a status, and superseded ones name their successor."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "decisions_index.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("decisions_index", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("decisions_index", module)
    spec.loader.exec_module(module)
    return module


def test_every_record_has_a_title_and_a_status() -> None:
    records, problems = _script().read_records()
    assert problems == []
    assert len(records) > 100


def test_the_index_lists_every_record_as_the_script_writes_it() -> None:
    script = _script()
    records, _ = script.read_records()
    index = (SCRIPT.parents[1] / "docs" / "decisions" / "index.md").read_text(encoding="utf-8")
    assert index == script.render(records), "run: python scripts/decisions_index.py"


def test_a_record_without_a_status_is_reported(tmp_path: Path, monkeypatch) -> None:
    script = _script()
    (tmp_path / "0001-a.md").write_text("# 0001 — A\n\nStatus: accepted\n", encoding="utf-8")
    (tmp_path / "0002-b.md").write_text("# 0002 — B\n\nContext: none.\n", encoding="utf-8")
    (tmp_path / "0003-c.md").write_text(
        "# 0003 — C\n\nStatus: superseded by 0009\n", encoding="utf-8"
    )
    monkeypatch.setattr(script, "FOLDER", tmp_path)
    records, problems = script.read_records()
    assert [r.number for r in records] == ["0001", "0003"]
    assert any(p.startswith("0002-b.md") and "Status" in p for p in problems)
    assert any("0003-c.md" in p and "0009" in p for p in problems)


NOT_MODULES = {"raf.agent_run", "raf.workflow_run", "raf.workflow.responses"}
"""Dotted names records use that are DBOS workflow and topic names, not Python ones."""
REMOVED_BY = {
    "1551-mcp-server-lives-in-serve.md": {"raf.tools.mcp.server"},
    "2001-the-run-has-one-home-one-object-one-driver.md": {
        "raf.clients.function_invoking",
        "raf.clients.tool_loop",
    },
}
"""Modules a record itself removed: it names them to say where their contents went."""


def _resolves(dotted: str) -> bool:
    """Whether `raf.a.b.c` names a module, or an attribute of the longest module prefix."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def test_an_accepted_record_names_only_what_exists() -> None:
    """A record whose `raf.…` names moved or went away is stale: its status must say which
    later record replaced it (`superseded in part by NNNN`), or the name must be updated."""
    import re

    records, _ = _script().read_records()
    folder = SCRIPT.parents[1] / "docs" / "decisions"
    stale = [
        f"{record.file}: {name}"
        for record in records
        if record.status == "accepted"
        for name in sorted(
            set(re.findall(r"`(raf(?:\.\w+)+)`", (folder / record.file).read_text("utf-8")))
        )
        if name not in NOT_MODULES
        and not any(name.startswith(gone) for gone in REMOVED_BY.get(record.file, ()))
        and not _resolves(name)
    ]
    assert stale == []
