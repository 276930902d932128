"""The README's workflow examples run as written and print what their comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Workflows")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


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
