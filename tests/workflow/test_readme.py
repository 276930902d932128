"""The workflow guide's examples run as written and print what their comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "workflows.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_section_has_examples() -> None:
    assert len(blocks()) >= 3


@pytest.mark.parametrize("index", range(3))
def test_a_workflow_example_runs_and_prints_what_it_says(index: int, tmp_path: Path) -> None:
    code = blocks()[index]
    expected = re.findall(r"print\(.*\)\s+# (.*)", code)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
