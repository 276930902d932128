"""Decision records are indexed by area, each has a status, superseded ones name their
successor, and every record falls in an area whose summary cites only records."""

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
    areas, _ = script.read_areas()
    index = (SCRIPT.parents[1] / "docs" / "decisions" / "index.md").read_text(encoding="utf-8")
    assert index == script.render(records, areas), "run: python scripts/decisions_index.py"


def test_every_record_falls_in_an_area() -> None:
    """Each record is in exactly one area's table; every area holds a record and says
    what holds in it now, citing only records that exist."""
    script = _script()
    records, _ = script.read_records()
    areas, problems = script.read_areas()
    assert problems == []
    grouped, problems = script.group(records, areas)
    assert problems == []
    assert sorted(r.number for held in grouped for r in held) == sorted(r.number for r in records)
    assert len(areas) >= 10
    assert all(held for held in grouped)
    assert all(area.holds.count(". ") >= 2 for area in areas), "say what holds, in sentences"


def _folder(tmp_path: Path, areas: str, *records: tuple[str, str]) -> Path:
    (tmp_path / "areas.toml").write_text(areas, encoding="utf-8")
    for name, text in records:
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


_AREAS = """
[[area]]
title = "First"
numbers = ["0001-0099"]
holds = "Records hold (0001)."

[[area]]
title = "Second"
numbers = ["0200-0299", "0400"]
holds = "Nothing else."
"""


def test_check_fails_for_a_record_in_no_area(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _script()
    _folder(
        tmp_path,
        _AREAS,
        ("0001-a.md", "# 0001 — A\n\nStatus: accepted\n"),
        ("0400-b.md", "# 0400 — B\n\nStatus: superseded in part by 0001\n"),
    )
    monkeypatch.setattr(script, "FOLDER", tmp_path)
    assert script.main([]) == 0
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert index.index("## First") < index.index("| 0001 |") < index.index("## Second")
    assert "Records hold ([0001](0001-a.md))." in index
    assert script.main(["--check"]) == 0

    (tmp_path / "0150-c.md").write_text("# 0150 — C\n\nStatus: accepted\n", encoding="utf-8")
    assert script.main(["--check"]) == 1
    assert "0150-c.md: 0150 falls in no area" in capsys.readouterr().err


def test_areas_that_overlap_cite_no_record_or_hold_nothing_are_reported(
    tmp_path: Path, monkeypatch
) -> None:
    script = _script()
    _folder(
        tmp_path,
        _AREAS.replace('"0400"', '"0050-0060"').replace("(0001)", "(0001, 0009)")
        + '[[area]]\ntitle = "Empty"\nnumbers = ["0700-0799"]\nholds = "None."\n',
        ("0001-a.md", "# 0001 — A\n\nStatus: accepted\n"),
        ("0201-b.md", "# 0201 — B\n\nStatus: accepted\n"),
    )
    monkeypatch.setattr(script, "FOLDER", tmp_path)
    areas, problems = script.read_areas()
    assert any("'First' (0001–0099) and 'Second' (0050–0060) overlap" in p for p in problems)
    records, _ = script.read_records()
    _, problems = script.group(records, areas)
    assert any("'First' cites 0009, which is no record" in p for p in problems)
    assert any("'Empty' holds no record" in p for p in problems)
    assert script.main(["--check"]) == 1

    (tmp_path / "areas.toml").write_text(
        '[[area]]\ntitle = "X"\nnumbers = ["0300-0200"]\nholds = "H."\n', encoding="utf-8"
    )
    _, problems = script.read_areas()
    assert problems == [
        "areas.toml: area 'X': '0300-0200' is not 'NNNN-NNNN' (low to high) or 'NNNN'"
    ]


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
    "2618-serve-laid-out-by-protocol-around-one-host.md": {"raf.serve.openai_api"},
    "2600-one-wing-per-engine.md": {
        "raf.workflow.SequentialOrchestration",
        "raf.workflow.declarative",
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
