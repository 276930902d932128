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
